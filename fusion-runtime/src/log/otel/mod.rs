//! OpenTelemetry (feature `otel`), by the MCP semantic conventions: a server span per
//! request (`tools/call <tool>`, `prompts/get <prompt>`, `resources/read`, and the other
//! methods by their name: `initialize`, `tools/list`, ...) under the client's span (W3C
//! trace context from `params._meta` or the HTTP `traceparent` header), a child span for
//! each attempt of a call's handler, named events for what the policies did, and the
//! `mcp.server.operation.duration` histogram with fusion's own counters; exported over OTLP
//! (http/protobuf or grpc) when the standard `OTEL_*` variables ask for it.
//!
//! The exporter's configuration, the resource (`OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`), the sampler (`OTEL_TRACES_SAMPLER`) and the export interval
//! (`OTEL_METRIC_EXPORT_INTERVAL`) are the OpenTelemetry SDK's, read from the environment as
//! the specification says; fusion decides whether to export (an endpoint is set), picks the
//! protocol, and names and fills the spans and metrics.

mod counts;
pub(crate) mod events;
mod export;
mod install;
mod instruments;
mod sampling;
mod spans;

pub(crate) use counts::{ToolCounts, of as counts_of};
pub use install::otel_layer;
pub(crate) use install::{OtelLayer, active, flush, layer};
pub(crate) use instruments::{OTHER, record_call, record_circuit, record_operation};
pub use spans::OTEL_TARGET;
pub(crate) use spans::{
    Operation, Origin, attempt_span, client_span, current_ids, error_type, record_arguments,
    record_error_code, record_failure, server_span, trace_context_of,
};
