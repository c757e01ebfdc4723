//! One writer per key (`#[mcp_tool(serialize = "account")]`): the key of a call, the lock
//! held around all of its attempts, and the answers when the lock store is away or the
//! lock was lost while the call ran.

use std::{future::Future, time::Duration};

use serde_json::Value;

use crate::{
    failure::classify::{Classification, ErrorClass},
    failure::{Failure, FailureKind, Target},
    lock::LockStore,
    setup::registered::RegisteredTool,
    tool::output::Outcome,
};

use super::attempts::Ran;

/// The lock key of a call to a tool with `serialize`: the tool's name (its group's, for an
/// action, so the actions of a group share their keys) and the SHA-256 of the argument's
/// value in canonical JSON (keys sorted: two spellings of one value are one key; an absent
/// argument is `null`). The hash keeps keys short and the value (maybe a secret) out of
/// the store.
pub(super) fn lock_key<C>(tool: &RegisteredTool<C>, args: &Value) -> Option<String> {
    let spec = &tool.definition.spec;
    let argument = spec.serialize?;
    let value = args.get(argument).unwrap_or(&Value::Null);
    let fingerprint = crate::canonical_json::fingerprint(value);
    Some(format!("{}:{fingerprint}", spec.group.unwrap_or(spec.name)))
}

/// Runs `run` (the call's attempts) holding the lock of `key`: after the calls of the key
/// that arrived before it, and never beside one. The lock goes however this ends (its
/// guard is dropped: an answer, a panic or a timeout inside `run`, or this future dropped).
/// If the store says the hold was lost (a lease that could not be renewed), `run` is
/// dropped at once, the handler stopped, rather than run beside the next holder.
pub(super) async fn locked<C>(
    locks: &dyn LockStore,
    key: &str,
    tool: &RegisteredTool<C>,
    target: &Target<'_>,
    run: impl Future<Output = Ran>,
) -> Ran {
    let argument = tool.definition.spec.serialize.unwrap_or("key");
    // Await: the key's turn, behind the calls that arrived before. A drop here leaves the
    // queue and holds nothing (the store's contract).
    let mut guard = match locks.lock(key).await {
        Ok(guard) => guard,
        Err(unavailable) => {
            return Ran::no_attempt(lock_unavailable(target, argument, &unavailable.reason));
        }
    };
    // Await: the call, holding the lock. A drop here drops `run` and then the guard.
    tokio::select! {
        biased;
        ran = run => ran,
        () = guard.lost() => Ran {
            outcome: Outcome::Failure(lock_lost(tool, target, argument)),
            // The handler ran, part of the way.
            attempts: 1,
        },
    }
}

/// The refusal of a call whose lock store cannot be reached: it must not run (another
/// replica may be writing the key); a retry later waits for its turn again. The store's
/// reason goes to the log only: it may name infrastructure.
fn lock_unavailable(target: &Target<'_>, argument: &str, reason: &str) -> Failure {
    tracing::warn!(target: "fusion::lock", tool = target.tool, reason, "the lock store is unavailable; the serialized call did not run");
    crate::middleware::refuse(
        Classification {
            class: ErrorClass::Transient,
            code: None,
            hint: Some("the call did not run; call again in a moment"),
            retry_after: Some(Duration::from_secs(1)),
        },
        format!(
            "{target} did not run: the lock that runs its calls one at a time per `{argument}` is unavailable right now"
        ),
    )
}

/// The answer of a call stopped because its lock was lost while it ran: it may have done
/// part of its work. A tool that is unsafe to repeat says so (an unknown outcome, as after
/// a timeout); another may be called again.
fn lock_lost<C>(tool: &RegisteredTool<C>, target: &Target<'_>, argument: &str) -> Failure {
    tracing::error!(target: "fusion::lock", tool = target.tool, "a serialized call lost its lock (its lease could not be renewed in time); the call was stopped");
    if tool.definition.spec.is_unsafe_to_repeat() {
        return Failure::new(FailureKind::UnknownOutcome {
            cause: "lock_lost",
            check_with: tool.check_with.clone(),
        });
    }
    crate::middleware::refuse(
        Classification {
            class: ErrorClass::Transient,
            code: None,
            hint: Some("the call was stopped part-way; call again in a moment"),
            retry_after: Some(Duration::from_secs(1)),
        },
        format!(
            "{target} was stopped: it lost the lock that keeps other calls on its `{argument}` out (the lock store could not be reached in time)"
        ),
    )
}
