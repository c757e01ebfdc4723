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

/// What the log says of one finished call.
pub(crate) struct CallRecord<'a> {
    pub(crate) tool: &'a str,
    pub(crate) action: Option<&'a str>,
    pub(crate) args: &'a Value,
    pub(crate) correlation_id: &'a str,
    pub(crate) latency: Duration,
    pub(crate) outcome: &'static str,
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
            arguments = %args,
            "tool call succeeded"
        ),
        Some(failure) if failure.is_masked() => tracing::error!(
            target: CALL_TARGET,
            tool,
            action,
            correlation_id,
            latency_us,
            outcome,
            arguments = %args,
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
            arguments = %args,
            error = message,
            "tool call rejected"
        ),
    }
}
