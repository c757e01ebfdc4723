//! Admission: the per-call context, the argument limits and the middleware chain (global,
//! then group, then tool), before the handler runs under its policy.

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    lock::LockStore,
    log::Redactor,
    middleware::{CallInfo, Guard, missing_scopes},
    setup::registered::RegisteredTool,
    tool::output::Outcome,
    validate::Limits,
};

use super::{
    attempts::{Ran, attempts},
    invoke::start,
    serialize::{lock_key, locked},
};

/// Admits a call to `tool` and runs it: the context made for the call (`context` makes it,
/// or says why it could not), the server's argument `limits`, the tool's scopes, then its middleware chain;
/// the handler runs under its policy ([`attempts`]) while the middleware's guards are held,
/// and, for a tool with `serialize`, the lock of its key from `locks`.
// Each argument is a separate part of the server the stage reads; a struct of them would
// only be built here to be taken apart.
#[allow(clippy::too_many_arguments)]
pub(super) async fn admit<C: Send + Sync + 'static>(
    tool: &RegisteredTool<C>,
    limits: &Limits,
    locks: &dyn LockStore,
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
    let finished = match lock_key(tool, args) {
        None => attempts(tool, &context, call, args, redactor, None).await,
        // One writer per key: the arguments are decoded first, so an invalid call is
        // answered at once instead of queueing; then the lock is held over every attempt
        // and backoff. Await: the key's turn, then the call (`serialize.rs`).
        Some(key) => {
            let first = match start(&tool.definition, &context, call, args) {
                Ok(first) => first,
                // Counted as one run, as when `attempts` decodes and refuses.
                Err(failure) => {
                    return Ran {
                        outcome: Outcome::Failure(failure),
                        attempts: 1,
                    };
                }
            };
            let run = attempts(tool, &context, call, args, redactor, Some(first));
            locked(locks, &key, tool, target, run).await
        }
    };
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
