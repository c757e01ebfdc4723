//! OpenTelemetry (feature `otel`): a server span for each `tools/call` by the MCP semantic
//! conventions, its parent the client's span (W3C trace context from `params._meta` or
//! the HTTP `traceparent` header), a child span for each attempt, exported over OTLP when
//! the standard `OTEL_*` variables ask for it.
//!
//! The exporter, the resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`) and the
//! sampler (`OTEL_TRACES_SAMPLER`) are the OpenTelemetry SDK's, configured from the
//! environment as the specification says; fusion only decides whether to export (an
//! endpoint is set) and names and fills the spans.

use std::sync::{
    OnceLock,
    atomic::{AtomicBool, Ordering},
};

use opentelemetry::{
    propagation::{Extractor, TextMapPropagator as _},
    trace::TracerProvider as _,
};
use opentelemetry_otlp::WithHttpConfig as _;
use opentelemetry_sdk::{propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::Layer as _;

use crate::{
    call::Call,
    failure::{Failure, FailureKind},
};

/// The `tracing` target of fusion's spans.
pub const OTEL_TARGET: &str = "fusion::otel";

/// The provider [`layer`] built, kept to flush it before the process ends.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether a layer that turns spans into OpenTelemetry spans is installed: only then does a
/// call make its span (without one, a span would cost and reach no one).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The variables that name where spans go; with neither set (or `OTEL_SDK_DISABLED=true`),
/// nothing is exported.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The OpenTelemetry layer for a subscriber of one's own, exporting spans over OTLP
/// (http/protobuf) as the `OTEL_*` variables say; `None` when no endpoint is set, or the
/// exporter cannot be built (the reason is written to stderr). [`init`](super::init)
/// adds it by itself.
///
/// ```
/// use tracing_subscriber::{layer::SubscriberExt as _, util::SubscriberInitExt as _};
/// # // No endpoint is set here: the layer is `None`, which a subscriber accepts as a no-op.
/// let _ = tracing_subscriber::registry()
///     .with(fusion_runtime::log::otel_layer())
///     .try_init();
/// ```
pub fn otel_layer<S>() -> Option<impl tracing_subscriber::Layer<S>>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    if !wanted() {
        return None;
    }
    let provider = match PROVIDER.get() {
        Some(provider) => provider.clone(),
        None => {
            let provider = provider()?;
            PROVIDER.get_or_init(|| provider).clone()
        }
    };
    ACTIVE.store(true, Ordering::Release);
    // The call log's events carry the call's arguments (redacted, cut): they stay in the
    // log. Every other event in a span (a retry's backoff, a circuit that opens, a user's
    // own) becomes one of its span events.
    let not_the_call_log = tracing_subscriber::filter::filter_fn(|metadata| {
        !(metadata.is_event() && metadata.target() == super::call_line::TARGET)
    });
    Some(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("fusion"))
            .with_filter(not_the_call_log),
    )
}

/// Whether the environment asks for export.
fn wanted() -> bool {
    let disabled = std::env::var("OTEL_SDK_DISABLED")
        .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
    !disabled
        && ENDPOINT_VARS
            .iter()
            .any(|name| std::env::var(name).is_ok_and(|value| !value.trim().is_empty()))
}

/// The SDK's provider with a batch exporter over OTLP/HTTP, as the environment configures
/// it (endpoint, headers, timeout, resource, sampler, batch schedule).
fn provider() -> Option<SdkTracerProvider> {
    if let Ok(protocol) = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL")
        && !protocol.trim().starts_with("http/protobuf")
    {
        eprintln!(
            "fusion: OTEL_EXPORTER_OTLP_PROTOCOL={protocol} is not supported; spans are exported only as http/protobuf"
        );
        return None;
    }
    let client = match http_client() {
        Ok(client) => client,
        Err(error) => {
            eprintln!("fusion: cannot export spans over OTLP: {error}");
            return None;
        }
    };
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .build()
    {
        Ok(exporter) => exporter,
        Err(error) => {
            eprintln!("fusion: cannot export spans over OTLP: {error}");
            return None;
        }
    };
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(opentelemetry_sdk::Resource::builder().build())
            .build(),
    )
}

/// The exporter's HTTP client: reqwest's blocking client with TLS through rustls (the
/// *ring* provider) and the platform's root certificates. Built on a thread of its own: a
/// blocking client owns a runtime, which must not be made (or dropped) on the caller's.
fn http_client() -> Result<reqwest::blocking::Client, String> {
    std::thread::spawn(|| {
        let tls = crate::tls::client_config()?;
        reqwest::blocking::Client::builder()
            .tls_backend_preconfigured(tls)
            .user_agent(concat!("fusion/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))
    })
    .join()
    .unwrap_or_else(|_| Err("the thread building the HTTP client panicked".to_owned()))
}

/// Exports the spans still queued; called by [`flush`](super::flush) before the process
/// ends.
pub(crate) fn flush() {
    if let Some(provider) = PROVIDER.get() {
        // The error says the exporter failed or timed out; nothing more can be done then.
        let _ = provider.force_flush();
    }
}

/// Whether calls make spans.
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// The server span of one `tools/call`: named `tools/call <tool>`, kind SERVER, with the
/// conventions' attributes, under the client's span when the request carries one.
pub(crate) fn call_span(tool: &str, call: &Call) -> tracing::Span {
    let request = call.request();
    // A root span: the request's own trace context is its only parent, never whatever
    // span the transport happens to run in.
    let span = tracing::info_span!(
        target: OTEL_TARGET,
        parent: None,
        "tools/call",
        "otel.name" = format!("tools/call {tool}"),
        "otel.kind" = "server",
        "mcp.method.name" = "tools/call",
        "gen_ai.tool.name" = tool,
        "gen_ai.operation.name" = "execute_tool",
        "jsonrpc.request.id" = call.request_id(),
        "mcp.session.id" = request.session_id(),
        "error.type" = tracing::field::Empty,
        "otel.status_code" = tracing::field::Empty,
    );
    let carrier = Carrier {
        traceparent: call
            .trace_context()
            .map(|(parent, _)| parent)
            .or_else(|| request.header("traceparent")),
        tracestate: call
            .trace_context()
            .and_then(|(_, state)| state)
            .or_else(|| request.header("tracestate")),
    };
    if carrier.traceparent.is_some() {
        let parent = TraceContextPropagator::new().extract(&carrier);
        // Fails only when the span is disabled (no layer records it): nothing to parent.
        let _ = span.set_parent(parent);
    }
    span
}

/// The span of one attempt of a call's handler, a child of the call's span; the handler's
/// own spans are its children.
pub(crate) fn attempt_span(attempt: u32) -> tracing::Span {
    tracing::info_span!(target: OTEL_TARGET, "attempt", "otel.name" = "attempt", attempt)
}

/// Records how the current call failed on its span: `error.type`, the failure's code as
/// `_meta["fusion/failure"]` gives it (else its class), and status ERROR when the server
/// failed (internal, fatal, a panic, a timeout). Invalid input leaves the status unset:
/// the server did its job.
pub(crate) fn record_failure(failure: &Failure) {
    let span = tracing::Span::current();
    let entry = failure.entry("", None);
    span.record("error.type", entry.code.as_deref().unwrap_or(&entry.class));
    let timed_out = matches!(failure.kind(), FailureKind::Timeout { .. });
    if failure.is_masked() || failure.is_fatal() || timed_out {
        span.record("otel.status_code", "ERROR");
    }
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
