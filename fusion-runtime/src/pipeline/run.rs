//! The handler under its policy, as admission and a cached tool's shared run both call it:
//! the attempts (`attempts.rs`), inside the lock of the call's key for a tool with
//! `serialize` (`serialize.rs`).

use serde_json::Value;

use crate::{
    call::Call, failure::Target, lock::LockStore, log::Redactor, setup::registered::RegisteredTool,
    tool::output::Outcome,
};

use super::{
    attempts::{Ran, attempts},
    invoke::start,
    serialize::{lock_key, locked},
};

/// The handler under its policy ([`attempts`]) and, for a tool with `serialize`, the lock
/// of its key from `locks` around all of it.
pub(super) async fn run_policy<C: Send + Sync + 'static>(
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
            let run = attempts(tool, context, call, args, redactor, Some(first));
            locked(locks, &key, tool, target, run).await
        }
    }
}
