//! Replay: a call with an idempotency key seen before gets the first call's result (the
//! claim, the conflict of a key reused with other arguments, the refusal when the store is
//! away); the result is stored in a JSON form any build can read back.

use std::time::Duration;

use serde_json::Value;

use crate::{
    call::Call,
    failure::{
        Failure, FailureKind, Target,
        classify::{Classification, ErrorClass},
    },
    idempotency::{Claim, ClaimGuard, ClaimRequest, IdempotencyStore},
    setup::{registered::RegisteredTool, server::Server},
};

use super::render::CallReport;

impl CallReport {
    /// The report as stored for an idempotency key, with the fingerprint of the arguments
    /// that produced it (`canonical_json::fingerprint`): a later call under the same key
    /// with other arguments is a conflict, not a replay.
    pub(super) fn to_json(&self, arguments: &str) -> Value {
        serde_json::json!({
            "arguments_sha256": arguments,
            "result": serde_json::to_value(&self.result).unwrap_or(Value::Null),
            "data": self.data,
            "system_rules": self.system_rules,
            "ui_blocks": serde_json::to_value(&self.ui_blocks).unwrap_or(Value::Null),
        })
    }

    /// A stored report, and the fingerprint of its arguments when it was stored with one
    /// (a result stored by an older build has none); `None` if the store returned something
    /// else.
    pub(super) fn from_json(stored: Value) -> Option<(Self, Option<String>)> {
        let Value::Object(mut stored) = stored else {
            return None;
        };
        let arguments = match stored.remove("arguments_sha256") {
            Some(Value::String(fingerprint)) => Some(fingerprint),
            _ => None,
        };
        let report = Self {
            result: serde_json::from_value(stored.remove("result")?).ok()?,
            data: stored.remove("data").unwrap_or(Value::Null),
            system_rules: serde_json::from_value(stored.remove("system_rules")?).ok()?,
            ui_blocks: serde_json::from_value(stored.remove("ui_blocks")?).ok()?,
            fatal: false,
            internal: false,
        };
        Some((report, arguments))
    }
}

/// The refusal of a call under an idempotency key that an earlier call used with other
/// arguments: replaying that call's result would tell the caller its own call succeeded
/// when it never ran (issue 36: `delete_note {id: 2}` answered "deleted note 1").
pub(super) fn idempotency_conflict(target: &Target<'_>, key_argument: &str) -> Failure {
    crate::middleware::refuse(
        Classification {
            class: ErrorClass::InvalidInput,
            code: Some(crate::failure::classify::ErrorCode::Conflict),
            hint: Some(
                "send a new idempotency key for a call with other arguments, or the same arguments to get the earlier call's result",
            ),
            retry_after: None,
        },
        format!(
            "{target} did not run: its idempotency key (`{key_argument}`) was used by an earlier call with other arguments"
        ),
    )
}

/// What the idempotency store said of a keyed call, before it runs.
pub(super) enum Replay<'a> {
    /// Run it, and end the claim with its result (or release it on a failure).
    Run(Option<ClaimGuard<'a>>),
    /// The first call's result, to return as it is.
    Replayed(Box<CallReport>),
    /// The key was used by an earlier call with other arguments.
    Conflict,
    /// An earlier run of the key stopped part-way, and the tool is not safe to repeat:
    /// the call must not run (an unknown outcome).
    Stopped,
    /// The store cannot be reached: the call must not run.
    Unavailable(String),
    /// The call was cancelled while it waited for another run of its key.
    Cancelled,
}

/// The idempotency key of a call of `registered` with `args`, when it has one, and the
/// arguments' fingerprint (empty without a key).
pub(super) fn keyed<C>(
    registered: Option<&RegisteredTool<C>>,
    target: &Target<'_>,
    args: &Value,
    call: &Call,
) -> (Option<String>, String) {
    let key = registered.and_then(|registered| idempotency_key(registered, target, args, call));
    let fingerprint = key
        .as_ref()
        .map(|_| crate::canonical_json::fingerprint(args))
        .unwrap_or_default();
    (key, fingerprint)
}

/// [`claim`] for a call with a `key`, in `server`'s store; a call without one runs.
pub(super) async fn claim_key<'a, C>(
    server: &'a Server<C>,
    registered: Option<&RegisteredTool<C>>,
    key: Option<&'a str>,
    fingerprint: &'a str,
    call: &'a Call,
) -> Replay<'a> {
    let Some(key) = key else {
        return Replay::Run(None);
    };
    let inner = &*server.inner;
    let repeatable =
        registered.is_some_and(|registered| registered.definition.spec.is_safe_to_repeat());
    claim(
        &*inner.idempotency,
        inner.idempotency_window,
        key,
        fingerprint,
        repeatable,
        call,
    )
    .await
}

/// Asks the store about a keyed call: waits while another run of the key is in progress,
/// then claims the key, or returns the stored result when `fingerprint` (the canonical
/// arguments' hash) matches the stored call's. `repeatable`: the tool is read-only or
/// idempotent, so a run of the key that stopped part-way may run again. The claim's
/// fencing token goes on `call`, for the handler.
pub(super) async fn claim<'a>(
    store: &'a dyn IdempotencyStore,
    window: Duration,
    key: &'a str,
    fingerprint: &'a str,
    repeatable: bool,
    call: &'a Call,
) -> Replay<'a> {
    // Await: waits while another run of the key is in progress. A drop here leaves no
    // claim (the store's waiter goes with the future).
    let claimed = tokio::select! {
        biased;
        () = call.cancelled() => return Replay::Cancelled,
        claimed = store.claim(
            ClaimRequest::new(key, window)
                .repeatable(repeatable)
                .fingerprint(fingerprint),
        ) => claimed,
    };
    let run = |fencing_token: u64| {
        call.set_key_fence(fencing_token);
        let started = call.handler_started();
        Replay::Run(Some(ClaimGuard::new(
            store,
            key,
            fencing_token,
            repeatable,
            started,
        )))
    };
    match claimed {
        Claim::Replay(stored) => match CallReport::from_json(stored) {
            Some((_, Some(first))) if first != fingerprint => Replay::Conflict,
            Some((report, _)) => Replay::Replayed(Box::new(report)),
            // A stored result this build cannot read: the outcome is not known here.
            None if !repeatable => Replay::Stopped,
            // For a tool safe to repeat, run it again, unkeyed (the stored result stays
            // until its window ends).
            None => Replay::Run(None),
        },
        Claim::Run { fencing_token } => run(fencing_token),
        Claim::Stopped => Replay::Stopped,
        Claim::Conflict => Replay::Conflict,
        Claim::Unavailable(reason) => Replay::Unavailable(reason),
    }
}

/// The refusal of a call whose idempotency key's earlier run stopped part-way: an unknown
/// outcome, with the tool to check with.
pub(super) fn earlier_run_stopped<C>(tool: &RegisteredTool<C>, target: &Target<'_>) -> Failure {
    tracing::warn!(target: "fusion::idempotency", tool = target.tool, "an earlier run of this idempotency key stopped part-way; the call did not run (unknown outcome)");
    Failure::new(FailureKind::EarlierRunStopped {
        check_with: tool.check_with.clone(),
    })
}

/// The store key of a keyed call: the tool, the action and the key's value. The key is
/// the tool's idempotency key argument when the call sets it, else the request's own
/// (`Call::request_key`: its `_meta`, or an `Idempotency-Key` header).
pub(super) fn idempotency_key<C>(
    tool: &RegisteredTool<C>,
    target: &Target<'_>,
    args: &Value,
    call: &Call,
) -> Option<String> {
    let argument = tool
        .definition
        .spec
        .idempotency_key
        .and_then(|name| match args.get(name)? {
            Value::String(text) if !text.is_empty() => Some(text.clone()),
            Value::Number(number) => Some(number.to_string()),
            _ => None,
        });
    let value = match argument {
        Some(value) => value,
        None => call.request_key()?.to_owned(),
    };
    Some(format!(
        "{}/{}:{value}",
        target.tool,
        target.action.unwrap_or("")
    ))
}

/// The refusal of a keyed call whose idempotency store cannot be reached: it must not run
/// (it may have run on another replica), and a retry later will be deduplicated again. The
/// store's reason goes to the log only: it may name infrastructure.
pub(super) fn deduplication_unavailable(target: &Target<'_>, reason: &str) -> Failure {
    tracing::warn!(target: "fusion::idempotency", tool = target.tool, reason, "the idempotency store is unavailable; the keyed call did not run");
    crate::middleware::refuse(
        Classification {
            class: ErrorClass::Transient,
            code: None,
            hint: Some("the call did not run; call again in a moment with the same key"),
            retry_after: Some(Duration::from_secs(1)),
        },
        format!(
            "{} did not run: deduplication of its idempotency key is unavailable right now",
            target
        ),
    )
}
