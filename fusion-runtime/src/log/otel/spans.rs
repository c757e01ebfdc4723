//! The spans: one server span per request by the MCP semantic conventions (named
//! `{mcp.method.name} {target}`, kind SERVER), its parent the client's span (W3C trace
//! context from `params._meta`, else the HTTP `traceparent` header), and a child span for
//! each attempt of a call's handler.

use opentelemetry::{
    propagation::{Extractor, Injector, TextMapPropagator as _},
    trace::TraceContextExt as _,
};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::{
    failure::{Failure, FailureKind},
    identity::RequestInfo,
    log::call_line::TraceIds,
};

/// The `tracing` target of fusion's spans.
pub const OTEL_TARGET: &str = "fusion::otel";

/// What a request works on, as its span and its metrics name it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operation<'a> {
    /// `tools/call` of a tool (`gen_ai.tool.name`).
    CallTool(&'a str),
    /// `prompts/get` of a prompt (`gen_ai.prompt.name`).
    GetPrompt(&'a str),
    /// `resources/read` of a URI (`mcp.resource.uri`).
    ReadResource(&'a str),
    /// A request with no target: `initialize`, `ping`, `tools/list`, `tasks/get`, ...
    /// (the method's name, as `mcp.method.name`).
    Method(&'static str),
}

impl Operation<'_> {
    /// `mcp.method.name`.
    pub(crate) fn method(self) -> &'static str {
        match self {
            Self::CallTool(_) => "tools/call",
            Self::GetPrompt(_) => "prompts/get",
            Self::ReadResource(_) => "resources/read",
            Self::Method(method) => method,
        }
    }
}

/// Where a request came from: its id, the caller's request (HTTP headers, session), and the
/// trace context of its `params._meta` when it carries one.
pub(crate) struct Origin<'a> {
    pub(crate) request_id: Option<&'a str>,
    pub(crate) request: &'a RequestInfo,
    /// `traceparent`, and `tracestate` if any.
    pub(crate) meta_trace: Option<(&'a str, Option<&'a str>)>,
}

/// The server span of one request, under the client's span when the request carries one.
/// A resource's URI is kept out of the span's name (the conventions' target is a tool or
/// a prompt): it is its `mcp.resource.uri`.
///
/// A request without a client span that the sampler drops whatever its trace id
/// (`always_off`, say) makes no span at all: a sampled-out request then costs one decision,
/// not a span's life. Under a client span, the span is made, recording or not, so that
/// the client's decision reaches the handler's own spans.
pub(crate) fn server_span(operation: Operation<'_>, origin: &Origin<'_>) -> tracing::Span {
    let method = operation.method();
    let parent = client_context(origin);
    if super::sampling::dropped(parent.as_ref()) {
        return tracing::Span::none();
    }
    let name = match operation {
        // The client's name, cut as the log cuts it: an unknown tool's may be megabytes.
        Operation::CallTool(target) | Operation::GetPrompt(target) => {
            format!("{method} {}", crate::limits::name(target))
        }
        Operation::ReadResource(_) | Operation::Method(_) => method.to_owned(),
    };
    let request = origin.request;
    let protocol_version = request.header("mcp-protocol-version");
    // A root span: the request's own trace context is its only parent, never whatever span
    // the transport happens to run in. Every value is given here: a value recorded later
    // is formatted again by every layer that keeps the span's fields (the JSON log's).
    macro_rules! server_span {
        ($($target_key:literal = $target_value:expr),*) => {
            tracing::info_span!(
                target: OTEL_TARGET,
                parent: None,
                "mcp.server",
                "otel.name" = name,
                "otel.kind" = "server",
                "mcp.method.name" = method,
                $($target_key = $target_value,)*
                "jsonrpc.request.id" = origin.request_id,
                "mcp.session.id" = request.session_id(),
                "mcp.protocol.version" = protocol_version,
                "error.type" = tracing::field::Empty,
                "otel.status_code" = tracing::field::Empty,
            )
        };
    }
    let span = match operation {
        Operation::CallTool(tool) => server_span!(
            "gen_ai.tool.name" = crate::limits::name(tool).as_ref(),
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.call.arguments" = tracing::field::Empty
        ),
        Operation::GetPrompt(prompt) => {
            server_span!("gen_ai.prompt.name" = crate::limits::name(prompt).as_ref())
        }
        Operation::ReadResource(uri) => {
            server_span!("mcp.resource.uri" = crate::limits::name(uri).as_ref())
        }
        Operation::Method(_) => server_span!(),
    };
    if let Some(parent) = parent {
        // Fails only when the span is disabled (no layer records it): nothing to parent.
        let _ = span.set_parent(parent);
    }
    span
}

/// The client's span, when the request carries W3C trace context.
fn client_context(origin: &Origin<'_>) -> Option<opentelemetry::Context> {
    let (traceparent, tracestate) = match origin.meta_trace {
        Some((parent, state)) => (Some(parent), state),
        None => (
            origin.request.header("traceparent"),
            origin.request.header("tracestate"),
        ),
    };
    traceparent?;
    let carrier = Carrier {
        traceparent,
        tracestate,
    };
    Some(TraceContextPropagator::new().extract(&carrier))
}

/// The span of one attempt of a call's handler, a child of the call's span; the handler's
/// own spans are its children.
pub(crate) fn attempt_span(attempt: u32) -> tracing::Span {
    // A call the sampler dropped has no span: nor do its attempts (they would be roots).
    if tracing::Span::current().is_none() {
        return tracing::Span::none();
    }
    tracing::info_span!(target: OTEL_TARGET, "attempt", "otel.name" = "attempt", attempt)
}

/// `error.type` of a failed call: the failure's code as `_meta["fusion/failure"]` gives it,
/// else its class.
pub(crate) fn error_type(failure: &Failure) -> String {
    let entry = failure.entry("", None);
    entry.code.unwrap_or(entry.class)
}

/// Records how the current call failed on its span: `error.type`, and status ERROR when
/// the server failed (internal, fatal, a panic, a timeout). Invalid input leaves the status
/// unset: the server did its job.
pub(crate) fn record_failure(failure: &Failure, error_type: &str) {
    let span = tracing::Span::current();
    span.record("error.type", error_type);
    let timed_out = matches!(failure.kind(), FailureKind::Timeout { .. });
    if failure.is_masked() || failure.is_fatal() || timed_out {
        span.record("otel.status_code", "ERROR");
    }
}

/// Records a request answered with a JSON-RPC error on the current span: `error.type` is
/// the error's code; status ERROR for the server's own (`-32603`, internal).
pub(crate) fn record_error_code(code: i32) {
    let span = tracing::Span::current();
    span.record("error.type", code.to_string());
    if code == -32603 {
        span.record("otel.status_code", "ERROR");
    }
}

/// Records a call's arguments on its span as `gen_ai.tool.call.arguments`, as the log
/// shows them (secrets redacted, long values cut): only for a tool that opts in
/// (`#[mcp_tool(trace_arguments)]`).
pub(crate) fn record_arguments(args: &serde_json::Value, redactor: &crate::log::Redactor) {
    let shown = crate::log::args::LoggedArgs { args, redactor }.to_string();
    tracing::Span::current().record("gen_ai.tool.call.arguments", shown.as_str());
}

/// The CLIENT span of a call this server makes to another MCP server (a mounted
/// upstream's tool), a child of the current span, by the MCP conventions' client side.
pub(crate) fn client_span(tool: &str, upstream: &str) -> tracing::Span {
    if tracing::Span::current().is_none() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: OTEL_TARGET,
        "mcp.client",
        "otel.name" = format!("tools/call {}", crate::limits::name(tool)),
        "otel.kind" = "client",
        "mcp.method.name" = "tools/call",
        "gen_ai.tool.name" = crate::limits::name(tool).as_ref(),
        "gen_ai.operation.name" = "execute_tool",
        "server.address" = upstream,
    )
}

/// `span`'s W3C trace context (`traceparent`, and `tracestate` when there is one), for the
/// `_meta` of a request that continues the trace elsewhere.
pub(crate) fn trace_context_of(span: &tracing::Span) -> Option<(String, Option<String>)> {
    struct Carrier(Option<String>, Option<String>);
    impl Injector for Carrier {
        fn set(&mut self, key: &str, value: String) {
            match key {
                "traceparent" => self.0 = Some(value),
                "tracestate" if !value.is_empty() => self.1 = Some(value),
                _ => {}
            }
        }
    }
    let mut carrier = Carrier(None, None);
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.0.map(|parent| (parent, carrier.1))
}

/// The trace and span ids of the current span, when it is in a trace: what the call log's
/// line carries so that a line and its trace meet.
pub(crate) fn current_ids() -> Option<TraceIds> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let ids = span.span_context();
    ids.is_valid().then(|| TraceIds {
        trace_id: ids.trace_id().to_bytes(),
        span_id: ids.span_id().to_bytes(),
    })
}

/// W3C trace context, as a request carries it.
struct Carrier<'a> {
    traceparent: Option<&'a str>,
    tracestate: Option<&'a str>,
}

impl Extractor for Carrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent,
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        ["traceparent", "tracestate"].to_vec()
    }
}
