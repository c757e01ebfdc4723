//! The failure as a program reads it: `_meta["fusion/failure"]` ([`FailureEntry`]) on every
//! `isError` result and on warnings. The text (`wording/`) tells the model what happened; this
//! entry tells an agent framework whether to retry, when, and what to quote in a bug report,
//! without parsing English. Built here, from the same [`Failure`] the words come from, so the
//! two never disagree.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    classify::{Classification, ErrorClass},
    model::{Failure, FailureKind, REPLICA_STOPPED},
};

/// What a failed call's `_meta["fusion/failure"]` holds: the class, the code, whether and when
/// to retry, the correlation id of a masked failure, the hint and the argument issues.
///
/// The text of the result is unchanged; this is the same failure for programs. Absent fields
/// are left out of the JSON.
///
/// ```
/// use fusion_runtime::{meta::FAILURE_META_KEY, failure::FailureEntry, prelude::*, testing::Tester};
///
/// /// Add two integers.
/// #[mcp_tool]
/// async fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let tester = Tester::new(Server::builder("calc", "1.0.0").tool(add).build());
/// let result = tester.call("add", serde_json::json!({"a": "1", "b": 2})).await;
/// // As any client reads it: the result's JSON, `_meta`, the key.
/// let wire = result.wire_json();
/// let entry: FailureEntry = serde_json::from_value(wire["_meta"][FAILURE_META_KEY].clone()).unwrap();
/// assert_eq!(entry.class, "invalid_input");
/// assert_eq!(entry.code.as_deref(), Some("invalid_arguments"));
/// assert!(!entry.retryable);
/// assert_eq!(entry.issues.unwrap()[0]["path"], "a");
/// # });
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FailureEntry {
    /// `invalid_input` (the call must change), `transient` (the same call may work later),
    /// `internal` (a bug; masked), `fatal` (the server is ending; masked), `unknown_outcome`
    /// (a side effect may or may not have happened: check before calling again), `cancelled`,
    /// or `warning` (advice on a result that is not an error).
    pub class: String,
    /// What went wrong, when it has a name: the error's code (`unauthorized`, `forbidden`,
    /// `not_found`, `conflict`, `rate_limited`) or the pipeline's (`invalid_arguments`,
    /// `unknown_tool`, `missing_action`, `unknown_action`, `timeout`, `circuit_open`,
    /// `upstream_unreachable`, `panic`, and `stale` on a warning: a cached answer sent because the tool failed just now),
    /// and for an unknown outcome its cause (`timeout`, `transient_exhausted`,
    /// `replica_stopped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether sending the same call again may succeed (after `retry_after_ms`, when given).
    pub retryable: bool,
    /// How long to wait before retrying, in milliseconds, when the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// The reference of a masked failure, the same as in the text and in the server's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation_id: Option<String>,
    /// What to do instead, when the server has advice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// For invalid arguments, every problem: `[{path, code, expected, received, hint}]`, as
    /// [`ISSUES_META_KEY`](crate::meta::ISSUES_META_KEY) lists them too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issues: Option<Vec<Value>>,
    /// For a stale answer (code `stale`: a cached tool's run failed and an older answer was
    /// sent), how old that answer is, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub age_ms: Option<u64>,
}

impl Failure {
    /// The entry of this failure. `correlation_id` is the one the text quotes (used only when
    /// the failure is masked); `issues` are the invalid arguments' problems as JSON, already
    /// redacted.
    pub(crate) fn entry(&self, correlation_id: &str, issues: Option<Vec<Value>>) -> FailureEntry {
        let mut entry = FailureEntry {
            class: ErrorClass::InvalidInput.as_str().to_owned(),
            code: None,
            retryable: false,
            retry_after_ms: None,
            correlation_id: self.is_masked().then(|| correlation_id.to_owned()),
            hint: None,
            issues: None,
            age_ms: None,
        };
        match &self.kind {
            FailureKind::InvalidArguments(_) => {
                entry.code = Some("invalid_arguments".into());
                entry.issues = Some(issues.unwrap_or_default());
            }
            FailureKind::UnknownTool {
                requested,
                available,
                action_of,
            } => {
                entry.code = Some("unknown_tool".into());
                entry.hint = match action_of.as_deref() {
                    Some((tool, action)) => {
                        Some(format!("call `{tool}` with `\"action\": \"{action}\"`"))
                    }
                    None => suggestion(requested, available),
                };
            }
            FailureKind::MissingAction { .. } => {
                entry.code = Some("missing_action".into());
                entry.hint = Some("add `\"action\": \"<name>\"` to the arguments".to_owned());
            }
            FailureKind::UnknownAction {
                requested,
                available,
                ..
            } => {
                entry.code = Some("unknown_action".into());
                entry.hint = suggestion(requested, available);
            }
            FailureKind::Handler(classification) => handler(&mut entry, classification),
            FailureKind::Timeout { .. } => {
                entry.class = ErrorClass::Transient.as_str().into();
                entry.code = Some("timeout".into());
                entry.retryable = true;
            }
            FailureKind::CircuitOpen { retry_after } => {
                entry.class = ErrorClass::Transient.as_str().into();
                entry.code = Some("circuit_open".into());
                entry.retryable = true;
                entry.retry_after_ms = Some(millis(*retry_after));
            }
            FailureKind::UpstreamUnreachable { retry_after, .. } => {
                entry.class = ErrorClass::Transient.as_str().into();
                entry.code = Some("upstream_unreachable".into());
                entry.retryable = true;
                entry.retry_after_ms = Some(millis(*retry_after));
            }
            FailureKind::Panic => {
                entry.class = ErrorClass::Internal.as_str().into();
                entry.code = Some("panic".into());
            }
            FailureKind::Cancelled => entry.class = "cancelled".into(),
            FailureKind::OutputTooLarge { size, limit } => {
                // The call ran; what the caller can change is how much it asks for.
                entry.class = ErrorClass::InvalidInput.as_str().into();
                entry.code = Some("output_too_large".into());
                entry.hint = Some(format!(
                    "ask for less: the result was {size} bytes, the limit is {limit}"
                ));
            }
            FailureKind::EarlierRunStopped { check_with } => {
                entry.class = "unknown_outcome".into();
                entry.code = Some(REPLICA_STOPPED.to_owned());
                entry.hint = Some(match check_with {
                    Some(check) => format!(
                        "check whether the earlier call took effect with {check}; if not, call again with a new idempotency key"
                    ),
                    None => "check whether the earlier call took effect; if not, call again with a new idempotency key".to_owned(),
                });
            }
            FailureKind::UnknownOutcome { cause, check_with } => {
                entry.class = "unknown_outcome".into();
                entry.code = Some((*cause).to_owned());
                entry.hint = Some(match check_with {
                    Some(check) => format!("check whether it took effect with {check}"),
                    None => "check whether it took effect before calling again".to_owned(),
                });
            }
        }
        entry
    }
}

/// A handler's error (or a middleware's refusal): its own class, code, hint and delay.
fn handler(entry: &mut FailureEntry, classification: &Classification) {
    entry.class = classification.class.as_str().to_owned();
    entry.code = classification.code.map(|code| code.as_str().to_owned());
    entry.retryable = classification.class == ErrorClass::Transient;
    entry.retry_after_ms = classification.retry_after.map(millis);
    // A masked failure's hint would be the developer's words about an internal error; the
    // text does not show it, so neither does the entry.
    if !matches!(
        classification.class,
        ErrorClass::Internal | ErrorClass::Fatal
    ) {
        entry.hint = classification.hint.map(str::to_owned);
    }
}

/// "did you mean `x`?" when one of the server's own names is close to what came.
fn suggestion(requested: &str, available: &[String]) -> Option<String> {
    crate::suggest::closest(requested, available.iter().map(String::as_str))
        .map(|close| format!("did you mean `{close}`?"))
}

fn millis(delay: std::time::Duration) -> u64 {
    u64::try_from(delay.as_millis()).unwrap_or(u64::MAX)
}
