//! The named events of a call's span: what its policies did, as OpenTelemetry span events
//! rather than `tracing` events, so that they reach the trace and never the log (whose own
//! lines say the same for one process: the call line, the recovery events).
//!
//! Each names what happened and carries numbers and codes, never a value the client sent.

use std::time::Duration;

use opentelemetry::KeyValue;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// Adds `name` with `attributes` to the current span (the call's, or its attempt's).
fn event(name: &'static str, attributes: Vec<KeyValue>) {
    tracing::Span::current().add_event(name, attributes);
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A transient failure, and the wait before the next attempt.
pub(crate) fn backoff(attempt: u32, of: u32, delay: Duration, outcome: &'static str) {
    event(
        "fusion.retry.backoff",
        vec![
            KeyValue::new("fusion.attempt", i64::from(attempt)),
            KeyValue::new("fusion.attempts", i64::from(of)),
            KeyValue::new("fusion.delay_ms", millis(delay)),
            KeyValue::new("fusion.outcome", outcome),
        ],
    );
}

/// The tool's circuit opened on this call's failure.
pub(crate) fn circuit_opened() {
    event("fusion.circuit.opened", Vec::new());
}

/// The tool's circuit is open: the call was refused without running.
pub(crate) fn circuit_refused(retry_after: Duration) {
    event(
        "fusion.circuit.refused",
        vec![KeyValue::new("fusion.retry_after_ms", millis(retry_after))],
    );
}

/// An idempotency key seen before: the first call's result, replayed.
pub(crate) fn replayed() {
    event("fusion.idempotency.replayed", Vec::new());
}

/// A middleware (or the tool's scopes) refused the call; `code` is the refusal's
/// `error.type`.
pub(crate) fn middleware_refused(code: &str) {
    event(
        "fusion.middleware.refused",
        vec![KeyValue::new("error.type", code.to_owned())],
    );
}

/// The arguments did not validate: the issues' codes (`type`, `missing`, `maximum`, ...),
/// never the values nor the names the client sent (an unknown field's is its own).
pub(crate) fn validation_failed(issues: &[crate::failure::issue::ArgIssue]) {
    let codes: Vec<opentelemetry::StringValue> = issues
        .iter()
        .map(|issue| issue.code.as_str().into())
        .collect();
    event(
        "fusion.validation.failed",
        vec![KeyValue::new(
            "fusion.issue.codes",
            opentelemetry::Value::Array(opentelemetry::Array::String(codes)),
        )],
    );
}
