//! Admission: the per-call context, the argument limits and the middleware chain (global,
//! then group, then tool), before the handler runs under its policy.

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    log::Redactor,
    middleware::{CallInfo, Guard, missing_scopes},
};

use crate::setup::server::Server;

use super::attempts::Ran;

impl<C: Send + Sync + 'static> Server<C> {
    pub(super) async fn run(
        &self,
        index: usize,
        target: &Target<'_>,
        args: &Value,
        context: Option<C>,
        call: &Call,
        redactor: &Redactor,
    ) -> Ran {
        let mut context = match context {
            Some(context) => context,
            None => match self.make_context(call.request()) {
                Ok(context) => context,
                Err(failure) => return Ran::no_attempt(failure),
            },
        };
        let breaches = self.inner.limits.check(args);
        if !breaches.is_empty() {
            let kind = FailureKind::InvalidArguments(breaches);
            return Ran::no_attempt(Failure::new(kind));
        }
        // Middleware: global, then group, then tool. Guards (permits) live until the
        // handler is done.
        let info = CallInfo {
            tool: target.tool,
            action: target.action,
            args,
            request: call.request(),
        };
        // The tool's own scopes come first: no middleware runs for a caller who may not
        // call the tool at all.
        let scopes = self.inner.registry.handlers[index].spec.scopes;
        if let Some(refusal) = missing_scopes(scopes, &info) {
            return Ran::no_attempt(refusal);
        }
        let mut guards: Vec<Guard> = Vec::new();
        for middleware in &self.inner.chains[index] {
            // Await: a middleware's own wait (a concurrency queue). Holds the guards of the
            // middleware before it (permits), released by their `Drop` if this is dropped.
            let verdict = recover::catch(middleware.before(&mut context, &info)).await;
            match verdict {
                Ok(Ok(guard)) => guards.extend(guard),
                Ok(Err(failure)) => return Ran::no_attempt(failure),
                Err(panic) => return Ran::no_attempt(Failure::panic(panic)),
            }
        }
        // Await: the handler under its policy. Holds `guards` for its whole run.
        let finished = self
            .run_under_policy(index, &context, call, args, redactor)
            .await;
        drop(guards);
        finished
    }
}
