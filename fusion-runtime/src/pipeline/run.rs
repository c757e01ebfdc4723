//! The handler under its policy, as admission and a cached tool's shared run both call it:
//! the attempts (`attempts.rs`), inside the lock of the call's key for a tool with
//! `serialize` (`serialize.rs`).

use serde_json::Value;

use crate::{
    call::Call, failure::Target, lock::LockStore, log::Redactor, policy::DEFAULT_HEARTBEAT,
    setup::registered::RegisteredTool, tool::output::Outcome,
};

use super::{
    attempts::{Ran, attempts},
    heartbeat::with_heartbeat,
    invoke::start,
    serialize::{lock_key, locked},
};

/// The handler under its policy ([`attempts`]) and, for a tool with `serialize`, the lock
/// of its key from `locks` around all of it; a heartbeat while it all runs.
pub(super) async fn run_policy<C: Send + Sync + 'static>(
    tool: &RegisteredTool<C>,
    locks: &dyn LockStore,
    context: &C,
    call: &Call,
    args: &Value,
    redactor: &Redactor,
    target: &Target<'_>,
) -> Ran {
    // As with the deadline: the default applies to a served call; in the tester only an
    // interval that is set does (its runtime may have no timers).
    let every = tool
        .policy
        .heartbeat
        .or_else(|| call.is_served().then_some(DEFAULT_HEARTBEAT));
    // Await: the whole run, with its heartbeat (`heartbeat.rs`).
    with_heartbeat(
        call,
        every,
        run_locked(tool, locks, context, call, args, redactor, target),
    )
    .await
}

/// [`run_policy`] without the heartbeat.
async fn run_locked<C: Send + Sync + 'static>(
    tool: &RegisteredTool<C>,
    locks: &dyn LockStore,
    context: &C,
    call: &Call,
    args: &Value,
    redactor: &Redactor,
    target: &Target<'_>,
) -> Ran {
    match lock_key(tool, args) {
        None => attempts(tool, context, call, args, redactor, None).await,
        // One writer per key: the arguments are decoded first, so an invalid call is
        // answered at once instead of queueing; then the lock is held over every attempt
        // and backoff. Await: the key's turn, then the call (`serialize.rs`).
        Some(key) => {
            let first = match start(&tool.definition, context, call, args) {
                Ok(first) => first,
                // Counted as one run, as when `attempts` decodes and refuses.
                Err(failure) => {
                    return Ran {
                        outcome: Outcome::Failure(failure),
                        attempts: 1,
                    };
                }
            };
            // Boxed: the lock's wait (about 1 KB) would otherwise be room in every call's
            // future, for the few tools that serialize.
            Box::pin(locked(
                locks,
                &key,
                tool,
                target,
                attempts(tool, context, call, args, redactor, Some(first)),
            ))
            .await
        }
    }
}
