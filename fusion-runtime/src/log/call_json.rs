//! What the log says of one finished call ([`CallRecord`]), and that event as JSON, as the
//! log writes it: what the tester's `log_events()` returns, built from the same record the
//! `tracing` event is made of (`log::call_event`), so that a test can assert on the call
//! log without a subscriber.

use std::time::{Duration, SystemTime};

use serde_json::{Map, Value, json};

use super::{args::LoggedArgs, call_line, clock::Clock, redact::Redactor};
use crate::failure::{Failure, FailureKind};

/// What the log says of one finished call.
pub(crate) struct CallRecord<'a> {
    pub(crate) tool: &'a str,
    pub(crate) action: Option<&'a str>,
    pub(crate) request_id: Option<&'a str>,
    /// The verified token's subject, when the caller has one (never the token).
    pub(crate) caller: Option<&'a str>,
    pub(crate) args: &'a Value,
    pub(crate) correlation_id: &'a crate::failure::panic::CorrelationId,
    pub(crate) latency: Duration,
    pub(crate) outcome: &'static str,
    /// How many times the handler ran.
    pub(crate) attempts: u32,
    pub(crate) failure: Option<&'a Failure>,
    /// The text the model was sent.
    pub(crate) message: &'a str,
    pub(crate) redactor: &'a Redactor,
    /// The level of successful calls (info by default).
    pub(crate) ok_level: tracing::Level,
    /// For a cached tool, how the cache answered: `hit`, `miss`, `coalesced`, `stale`.
    pub(crate) cache: Option<&'static str>,
}

/// The level of a call's event: successes at the server's level (info by default),
/// warnings and cancellations at info, the server's faults at error, the client's
/// mistakes at warn.
pub(super) fn level(record: &CallRecord<'_>) -> tracing::Level {
    match record.failure {
        None => record.ok_level,
        Some(failure) if failure.is_masked() => tracing::Level::ERROR,
        Some(failure) if failure.is_warning() => tracing::Level::INFO,
        Some(failure) if matches!(failure.kind(), FailureKind::Cancelled) => tracing::Level::INFO,
        Some(_) => tracing::Level::WARN,
    }
}

/// The call's event, `{"timestamp", "level", "fields": {..}, "target"}`, with the fields
/// (and their order) of the JSON log's line: the arguments as the log shows them (secrets
/// `"[redacted]"`, long values cut), as one JSON string.
/// `trace`: the ids of the call's span, when it is in a trace (feature `otel`).
pub(super) fn event_json(
    record: &CallRecord<'_>,
    at: SystemTime,
    trace: Option<call_line::TraceIds>,
) -> Value {
    let mut fields = Map::new();
    let message = match record.failure {
        None => "tool call succeeded",
        Some(failure) if failure.is_masked() => "tool call failed",
        Some(failure) if failure.is_warning() => "tool call returned a warning",
        Some(failure) if matches!(failure.kind(), FailureKind::Cancelled) => "tool call cancelled",
        Some(_) => "tool call rejected",
    };
    let arguments = LoggedArgs {
        args: record.args,
        redactor: record.redactor,
    };
    let latency_us = u64::try_from(record.latency.as_micros()).unwrap_or(u64::MAX);
    for (key, value) in [
        ("message", json!(message)),
        ("tool", json!(crate::limits::name(record.tool))),
        (
            "action",
            json!(crate::limits::name(record.action.unwrap_or(""))),
        ),
        ("request_id", json!(record.request_id.unwrap_or(""))),
        (
            "caller",
            json!(crate::limits::name(record.caller.unwrap_or(""))),
        ),
        ("correlation_id", json!(record.correlation_id.as_str())),
        ("latency_us", json!(latency_us)),
        ("outcome", json!(record.outcome)),
        ("attempts", json!(record.attempts)),
        ("arguments", json!(arguments.to_string())),
    ] {
        fields.insert(key.to_owned(), value);
    }
    if let Some((trace_id, span_id)) = trace.map(call_line::TraceIds::to_hex) {
        fields.insert("trace_id".to_owned(), json!(trace_id));
        fields.insert("span_id".to_owned(), json!(span_id));
    }
    if let Some(cache) = record.cache {
        fields.insert("cache".to_owned(), json!(cache));
    }
    match record.failure {
        None => {}
        Some(failure) if failure.is_masked() => {
            let (error, source_chain) = masked_details(failure, record.redactor);
            fields.insert("error".to_owned(), json!(error));
            fields.insert("source_chain".to_owned(), json!(source_chain));
        }
        Some(_) => {
            fields.insert("error".to_owned(), json!(record.message));
        }
    }
    json!({
        "timestamp": Clock::default().now(at),
        "level": level(record).as_str(),
        "fields": fields,
        "target": call_line::TARGET,
    })
}

/// What the log says of a masked failure (kept from the model): its details and its source
/// chain as a JSON array, both redacted.
pub(super) fn masked_details(
    failure: &crate::failure::Failure,
    redactor: &super::Redactor,
) -> (String, String) {
    let chain: Vec<String> = failure
        .chain
        .iter()
        .map(|link| redactor.text(link))
        .collect();
    (
        redactor.text(&failure.details()),
        serde_json::to_string(&chain).unwrap_or_default(),
    )
}
