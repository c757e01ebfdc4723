//! The metrics exported over OTLP: the conventions' `mcp.server.operation.duration`
//! histogram, and fusion's own counters of a tool's calls, attempts and retries and the
//! state of its circuit. The duration is recorded as each request ends; the counters are
//! observed from the tools' atomics ([`counts`](super::counts)) when the metrics are
//! collected.
//!
//! Their labels are bounded: a tool or prompt is named only when it is registered (else
//! `_OTHER`, as the conventions spell a value outside the known set), and nothing the
//! client sent (a resource's URI, an argument) becomes a label.

use std::sync::OnceLock;

use opentelemetry::{
    KeyValue,
    metrics::{Gauge, Histogram, MeterProvider as _, ObservableCounter},
};
use opentelemetry_sdk::metrics::SdkMeterProvider;

use super::{
    counts::{self, ToolCounts},
    spans::Operation,
};

/// The conventions' bucket boundaries for `mcp.server.operation.duration`, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The label of a tool or prompt that is not registered.
pub(crate) const OTHER: &str = "_OTHER";

struct Instruments {
    duration: Histogram<f64>,
    circuit_open: Gauge<u64>,
    /// Kept with the others: their callbacks read [`counts`] at each collection.
    _counters: [ObservableCounter<u64>; 4],
}

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// Makes the instruments on `provider`'s meter; the first provider wins.
pub(super) fn install(provider: &SdkMeterProvider) {
    INSTRUMENTS.get_or_init(|| {
        let meter = provider.meter("fusion");
        Instruments {
            duration: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description(
                    "MCP request duration as observed on the server, from its arrival until its answer.",
                )
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            circuit_open: meter
                .u64_gauge("fusion.tool.circuit.open")
                .with_description("1 while the tool's circuit breaker is open, 0 once it closed.")
                .build(),
            _counters: [
                meter
                    .u64_observable_counter("fusion.tool.calls")
                    .with_unit("{call}")
                    .with_description("Finished tool calls by outcome (ok, retried_ok, replayed, timeout, ...).")
                    .with_callback(counts::observe_calls)
                    .build(),
                meter
                    .u64_observable_counter("fusion.tool.attempts")
                    .with_unit("{attempt}")
                    .with_description("Runs of tool handlers, retries included.")
                    .with_callback(counts::observe_attempts)
                    .build(),
                meter
                    .u64_observable_counter("fusion.tool.retries")
                    .with_unit("{retry}")
                    .with_description("Retries of transient failures (runs beyond a call's first).")
                    .with_callback(counts::observe_retries)
                    .build(),
                meter
                    .u64_observable_counter("fusion.tool.cache")
                    .with_unit("{call}")
                    .with_description("Calls of cached tools by how the cache answered them (hit, miss, coalesced, stale).")
                    .with_callback(counts::observe_cache)
                    .build(),
            ],
        }
    });
}

/// Records one request's duration, with its method, its target and `error.type` when it
/// failed: a prompt's, a resource's, another method's (`tools/list`, `initialize`, ...),
/// or a call of a tool that is not registered (a registered tool's calls are
/// [`record_call`]'s).
pub(crate) fn record_operation(operation: Operation<'_>, seconds: f64, error_type: Option<&str>) {
    let Some(instruments) = INSTRUMENTS.get() else {
        return;
    };
    let mut attributes = Vec::with_capacity(4);
    attributes.push(KeyValue::new("mcp.method.name", operation.method()));
    match operation {
        Operation::CallTool(tool) => {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        Operation::GetPrompt(prompt) => {
            attributes.push(KeyValue::new("gen_ai.prompt.name", prompt.to_owned()));
        }
        Operation::ReadResource(_) | Operation::Method(_) => {}
    }
    if let Some(error_type) = error_type {
        attributes.push(KeyValue::new("error.type", error_type.to_owned()));
    }
    instruments.duration.record(seconds, &attributes);
}

/// Records the duration of one finished call of a registered tool (whose outcome and runs
/// are counted in `counts`), with `error.type` when it failed. A success records on the
/// histogram bound to the tool's attributes when it was first needed: no attribute-set
/// lookup, no allocation.
pub(crate) fn record_call(counts: &ToolCounts, seconds: f64, error_type: Option<&str>) {
    let Some(instruments) = INSTRUMENTS.get() else {
        return;
    };
    let tool = counts.tool();
    let Some(error_type) = error_type else {
        counts
            .ok_duration
            .get_or_init(|| instruments.duration.bind(&call_attributes(tool)))
            .record(seconds);
        return;
    };
    let mut attributes = call_attributes(tool).to_vec();
    attributes.push(KeyValue::new("error.type", error_type.to_owned()));
    instruments.duration.record(seconds, &attributes);
}

/// The attributes of a call of `tool`, `error.type` aside.
fn call_attributes(tool: &'static str) -> [KeyValue; 3] {
    [
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.tool.name", tool),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
    ]
}

/// Records that the circuit of `tool` (its `action`, if grouped) opened (`true`) or closed.
pub(crate) fn record_circuit(tool: &'static str, action: Option<&'static str>, open: bool) {
    if let Some(instruments) = INSTRUMENTS.get() {
        let mut attributes = vec![KeyValue::new("gen_ai.tool.name", tool)];
        if let Some(action) = action {
            attributes.push(KeyValue::new("fusion.action", action));
        }
        instruments
            .circuit_open
            .record(u64::from(open), &attributes);
    }
}
