//! Structured logging: one event per tool call, through `tracing`, target `fusion::call`.
//!
//! [`init`] installs a JSON subscriber on stderr (stdout belongs to the protocol on stdio).
//! A program that installs its own subscriber keeps it and still receives these events.

use std::time::Duration;

use serde_json::Value;

use crate::error::Failure;

/// The `tracing` target of per-call events.
pub const CALL_TARGET: &str = "fusion::call";

/// Installs a JSON log subscriber writing to stderr, filtered by `RUST_LOG` (default
/// `info`). Does nothing when a global subscriber is already set.
///
/// ```
/// fusion_runtime::log::init();
/// fusion_runtime::log::init(); // a second call is harmless
/// ```
pub fn init() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // `try_init` fails only when a subscriber is already installed: the program's own
    // choice wins.
    let _ = tracing_subscriber::fmt()
        .json()
        .with_current_span(false)
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .try_init();
}

/// The arguments as the log shows them: compact JSON with long strings cut to 200
/// characters, arrays and objects to their first 20 entries, and nesting to 8 levels, so
/// a hostile argument can neither flood the log nor exhaust the stack while rendering.
pub(crate) fn render_args(args: &Value) -> String {
    fn shrink(value: &Value, depth: usize) -> Value {
        const MAX_CHARS: usize = 200;
        const MAX_ENTRIES: usize = 20;
        const MAX_DEPTH: usize = 8;
        match value {
            Value::String(text) if text.chars().count() > MAX_CHARS => {
                let cut: String = text.chars().take(MAX_CHARS).collect();
                Value::String(format!("{cut}… ({} bytes in all)", text.len()))
            }
            Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
                Value::String("… (nested deeper)".into())
            }
            Value::Array(items) => {
                let mut kept: Vec<Value> = items
                    .iter()
                    .take(MAX_ENTRIES)
                    .map(|item| shrink(item, depth + 1))
                    .collect();
                if items.len() > MAX_ENTRIES {
                    kept.push(Value::String(format!(
                        "… ({} more items)",
                        items.len() - MAX_ENTRIES
                    )));
                }
                Value::Array(kept)
            }
            Value::Object(entries) => {
                let mut kept: serde_json::Map<String, Value> = entries
                    .iter()
                    .take(MAX_ENTRIES)
                    .map(|(key, item)| (key.clone(), shrink(item, depth + 1)))
                    .collect();
                if entries.len() > MAX_ENTRIES {
                    kept.insert(
                        "…".into(),
                        Value::String(format!("{} more entries", entries.len() - MAX_ENTRIES)),
                    );
                }
                Value::Object(kept)
            }
            other => other.clone(),
        }
    }
    shrink(args, 0).to_string()
}

/// What the log says of one finished call.
pub(crate) struct CallRecord<'a> {
    pub(crate) tool: &'a str,
    pub(crate) action: Option<&'a str>,
    pub(crate) args: &'a Value,
    pub(crate) correlation_id: &'a str,
    pub(crate) latency: Duration,
    pub(crate) outcome: &'static str,
    /// How many times the handler ran.
    pub(crate) attempts: u32,
    pub(crate) failure: Option<&'a Failure>,
    /// The text the model was sent.
    pub(crate) message: &'a str,
}

/// Emits the event of one finished call. Ok at info, the client's mistakes at warn,
/// server faults at error.
pub(crate) fn call_event(record: &CallRecord<'_>) {
    let CallRecord {
        tool,
        args,
        correlation_id,
        outcome,
        attempts,
        failure,
        message,
        ..
    } = *record;
    let latency_us = u64::try_from(record.latency.as_micros()).unwrap_or(u64::MAX);
    let action = record.action.unwrap_or("");
    match failure {
        None => tracing::info!(
            target: CALL_TARGET,
            tool,
            action,
            correlation_id,
            latency_us,
            outcome,
            attempts,
            arguments = %render_args(args),
            "tool call succeeded"
        ),
        Some(failure) if failure.is_masked() => tracing::error!(
            target: CALL_TARGET,
            tool,
            action,
            correlation_id,
            latency_us,
            outcome,
            attempts,
            arguments = %render_args(args),
            error = %failure.details(),
            "tool call failed"
        ),
        Some(_) => tracing::warn!(
            target: CALL_TARGET,
            tool,
            action,
            correlation_id,
            latency_us,
            outcome,
            attempts,
            arguments = %render_args(args),
            error = message,
            "tool call rejected"
        ),
    }
}

/// The target of recovery events: retries, reconnects, circuit changes.
pub const RECOVERY_TARGET: &str = "fusion::recovery";

/// One retry about to happen.
pub(crate) fn retry_event(tool: &str, attempt: u32, of: u32, delay: Duration, failure: &Failure) {
    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    tracing::warn!(
        target: RECOVERY_TARGET,
        tool,
        attempt,
        attempts = of,
        delay_ms,
        outcome = failure.outcome_name(),
        error = %failure.details(),
        "transient failure, retrying"
    );
}

/// A reconnect of a tool's resource, and how it went.
pub(crate) fn reconnect_event(tool: &str, took: Duration, error: Option<&String>) {
    let duration_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    match error {
        None => {
            tracing::info!(target: RECOVERY_TARGET, tool, duration_us, result = "ok", "resource reconnected")
        }
        Some(error) => tracing::warn!(
            target: RECOVERY_TARGET,
            tool,
            duration_us,
            result = "failed",
            error = error.as_str(),
            "resource reconnect failed"
        ),
    }
}

/// A circuit breaker opened or closed.
pub(crate) fn circuit_event(tool: &str, transition: crate::recover::Transition) {
    match transition {
        crate::recover::Transition::Opened => {
            tracing::warn!(target: RECOVERY_TARGET, tool, circuit = "open", "circuit opened: calls fail fast")
        }
        crate::recover::Transition::Closed => {
            tracing::info!(target: RECOVERY_TARGET, tool, circuit = "closed", "circuit closed: calls flow again")
        }
    }
}

/// The target of the fatal event.
pub const FATAL_TARGET: &str = "fusion::fatal";

/// A handler's fatal error: one event with the whole source chain.
pub(crate) fn fatal_event(tool: &str, correlation_id: &str, failure: &Failure) {
    tracing::error!(
        target: FATAL_TARGET,
        tool,
        correlation_id,
        error = failure.chain.first().map_or("", String::as_str),
        source_chain = %failure.details(),
        exit_code = crate::server::EXIT_FATAL,
        "fatal error: the server is shutting down"
    );
}

/// The server refused to start.
pub(crate) fn startup_failed(error: &crate::server::StartupError) {
    tracing::error!(
        target: FATAL_TARGET,
        error = %error,
        exit_code = crate::transport::EXIT_CONFIG,
        "start-up failed: not serving"
    );
}
