//! Admission: the per-call context, the argument limits and the middleware chain (global,
//! then group, then tool), before the handler runs under its policy.

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    log::Redactor,
    middleware::{CallInfo, Guard, missing_scopes},
    setup::registered::RegisteredTool,
    validate::Limits,
};

use super::attempts::{Ran, attempts};

/// Admits a call to `tool` and runs it: the context made for the call (`context` makes it,
/// or says why it could not), the server's argument `limits`, the tool's scopes, then its middleware chain;
/// the handler runs under its policy ([`attempts`]) while the middleware's guards are held.
pub(super) async fn admit<C: Send + Sync + 'static>(
    tool: &RegisteredTool<C>,
    limits: &Limits,
    context: impl FnOnce() -> Result<C, Failure>,
    target: &Target<'_>,
    args: &Value,
    call: &Call,
    redactor: &Redactor,
) -> Ran {
    let mut context = match context() {
        Ok(context) => context,
        Err(failure) => return Ran::no_attempt(failure),
    };
    let breaches = limits.check(args);
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
    let scopes = tool.definition.spec.scopes;
    if let Some(refusal) = missing_scopes(scopes, &info) {
        return refused(refusal);
    }
    let mut guards: Vec<Guard> = Vec::new();
    for middleware in &tool.chain {
        // Await: a middleware's own wait (a concurrency queue). Holds the guards of the
        // middleware before it (permits), released by their `Drop` if this is dropped.
        let verdict = recover::catch(middleware.before(&mut context, &info)).await;
        match verdict {
            Ok(Ok(guard)) => guards.extend(guard),
            Ok(Err(failure)) => return refused(failure),
            Err(panic) => return Ran::no_attempt(Failure::panic(panic)),
        }
    }
    // Await: the handler under its policy. Holds `guards` for its whole run.
    let finished = attempts(tool, &context, call, args, redactor).await;
    drop(guards);
    finished
}

/// A call the tool's scopes or a middleware refused; the refusal is an event of the call's
/// span (with `otel`).
fn refused(refusal: Failure) -> Ran {
    #[cfg(feature = "otel")]
    if crate::log::otel::active() {
        crate::log::otel::events::middleware_refused(&crate::log::otel::error_type(&refusal));
    }
    Ran::no_attempt(refusal)
}
