//! Admission: the per-call context, the argument limits and the middleware chain (global,
//! then group, then tool), before the handler runs under its policy.

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    log::Redactor,
    middleware::{CallInfo, Guard, missing_scopes},
    setup::{registered::RegisteredTool, server::Server},
};

use super::{
    cache::{Answer, Invalidation, cache_key, serve},
    run::run_policy,
};

/// Admits a call to `tool` (at `slot`) and runs it: the context
/// made for the call (`context` makes it, or says why it could not), the server's argument
/// limits, the tool's scopes, then its middleware chain; then, while the middleware's
/// guards are held, the cache step for a tool with `cache` (`cache.rs`), or the handler
/// under its policy ([`run_policy`]). A writer's invalidations are sent before it answers.
// Each argument is a separate part of the call the stage reads; a struct of them would
// only be built here to be taken apart.
#[allow(clippy::too_many_arguments)]
pub(super) async fn admit<C: Send + Sync + 'static>(
    server: &Server<C>,
    tool: &RegisteredTool<C>,
    slot: &super::slot::Slot<C>,
    context: Option<C>,
    target: &Target<'_>,
    args: &Value,
    call: &Call,
    redactor: &Redactor,
) -> Answer {
    // The context given (the tester's), or a fresh one from the server's factory.
    let context = match context {
        Some(context) => Ok(context),
        None => server.make_context(call.request()),
    };
    let mut context = match context {
        Ok(context) => context,
        Err(failure) => return Answer::no_attempt(failure),
    };
    let breaches = server.inner.limits.check(args);
    if !breaches.is_empty() {
        let kind = FailureKind::InvalidArguments(breaches);
        return Answer::no_attempt(Failure::new(kind));
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
            Err(panic) => return Answer::no_attempt(Failure::panic(panic)),
        }
    }
    // Armed before the handler may run: a drop from here on may have written.
    let invalidation = Invalidation::arm(server, tool);
    // Await: the cache step or the handler under its policy. Holds `guards` for its
    // whole run.
    let answer = match cache_key(tool, args, call) {
        None => {
            let locks = &*server.inner.locks;
            let ran = run_policy(tool, locks, &context, call, args, redactor, target).await;
            Answer::Ran(ran, None)
        }
        // Boxed: the cache's step (a shared run, the store's reads) is larger than the
        // handler's run, and would otherwise be room in the future of every call, cached
        // or not.
        Some(key) => {
            Box::pin(serve(
                server, tool, slot, key, context, call, args, redactor, target,
            ))
            .await
        }
    };
    // Await: the invalidations of a writer, so that its caller reads its own write.
    if let Some(invalidation) = invalidation {
        invalidation.after(&answer).await;
    }
    drop(guards);
    answer
}

/// A call the tool's scopes or a middleware refused; the refusal is an event of the call's
/// span (with `otel`).
fn refused(refusal: Failure) -> Answer {
    #[cfg(feature = "otel")]
    if crate::log::otel::active() {
        crate::log::otel::events::middleware_refused(&crate::log::otel::error_type(&refusal));
    }
    Answer::no_attempt(refusal)
}
