//! Where and how spans and metrics leave the process, as the standard `OTEL_*` variables
//! say: an OTLP exporter of each signal over http/protobuf (reqwest's blocking client) or
//! grpc (tonic, on a runtime of its own).
//!
//! The SDK reads the rest of the environment itself: the endpoint and its headers and
//! timeout, the resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), the sampler
//! (`OTEL_TRACES_SAMPLER`) and the export interval (`OTEL_METRIC_EXPORT_INTERVAL`).

use std::{
    pin::Pin,
    sync::OnceLock,
    task::{Context, Poll},
    time::Duration,
};

use opentelemetry_otlp::{WithHttpConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::{
    error::OTelSdkResult,
    metrics::{Temporality, data::ResourceMetrics, exporter::PushMetricExporter},
    trace::{SpanData, SpanExporter},
};

/// One of the two signals fusion exports.
#[derive(Clone, Copy, Debug)]
pub(super) enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The signal's own endpoint variable, then the one for every signal.
    fn endpoint_vars(self) -> [&'static str; 2] {
        match self {
            Self::Traces => [
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ],
            Self::Metrics => [
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ],
        }
    }

    /// The signal's own protocol variable, then the one for every signal.
    fn protocol_vars(self) -> [&'static str; 2] {
        match self {
            Self::Traces => [
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ],
            Self::Metrics => [
                "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Traces => "spans",
            Self::Metrics => "metrics",
        }
    }
}

/// The wire an exporter speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    HttpProtobuf,
    Grpc,
}

/// Whether the environment asks for `signal` to be exported: an endpoint is set for it, and
/// the SDK is not disabled (`OTEL_SDK_DISABLED=true`).
pub(super) fn wanted(signal: Signal) -> bool {
    let disabled = std::env::var("OTEL_SDK_DISABLED")
        .is_ok_and(|value| value.trim().eq_ignore_ascii_case("true"));
    !disabled && first_set(signal.endpoint_vars()).is_some()
}

fn first_set(names: [&str; 2]) -> Option<String> {
    names.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .map(|value| value.trim().to_owned())
            .filter(|value| !value.is_empty())
    })
}

/// The protocol the environment names for `signal` (http/protobuf when none); an unknown
/// one is said on stderr, and nothing of the signal is exported.
fn protocol(signal: Signal) -> Option<Protocol> {
    match first_set(signal.protocol_vars()).as_deref() {
        None | Some("http/protobuf") => Some(Protocol::HttpProtobuf),
        Some("grpc") => Some(Protocol::Grpc),
        Some(other) => {
            eprintln!(
                "fusion: OTEL_EXPORTER_OTLP_PROTOCOL={other} is not supported (http/protobuf or grpc); {} are not exported",
                signal.name()
            );
            None
        }
    }
}

/// An OTLP exporter, and the runtime its exports must be polled in (tonic's, for grpc).
///
/// Why: the SDK's batch processor and periodic reader poll an export on threads of their
/// own, outside any runtime; tonic's channel hands the caller futures that make tokio
/// timers and I/O, which need the runtime's context on every poll.
#[derive(Debug)]
pub(super) struct Exporter<E> {
    inner: E,
    runtime: Option<&'static tokio::runtime::Handle>,
}

/// A future polled in a runtime's context (when there is one).
struct InContext<'a> {
    runtime: Option<&'static tokio::runtime::Handle>,
    future: Pin<Box<dyn Future<Output = OTelSdkResult> + Send + 'a>>,
}

impl Future for InContext<'_> {
    type Output = OTelSdkResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<OTelSdkResult> {
        let _entered = self.runtime.map(|runtime| runtime.enter());
        self.future.as_mut().poll(cx)
    }
}

impl<E: SpanExporter> SpanExporter for Exporter<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        InContext {
            runtime: self.runtime,
            future: Box::pin(self.inner.export(batch)),
        }
        .await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let _entered = self.runtime.map(|runtime| runtime.enter());
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        let _entered = self.runtime.map(|runtime| runtime.enter());
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Exporter<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        InContext {
            runtime: self.runtime,
            future: Box::pin(self.inner.export(metrics)),
        }
        .await
    }

    fn force_flush(&self) -> OTelSdkResult {
        let _entered = self.runtime.map(|runtime| runtime.enter());
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let _entered = self.runtime.map(|runtime| runtime.enter());
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The exporter of `$signal` that the environment asks for, built by
/// `opentelemetry_otlp::$kind`'s builder over http/protobuf or grpc, or `None` (the reason
/// on stderr). A macro: the two signals' builders are of different types, step for step alike.
macro_rules! exporter {
    ($signal:expr, $kind:ident) => {{
        let signal = $signal;
        let mut runtime = None;
        let built = match protocol(signal)? {
            Protocol::HttpProtobuf => {
                let client = reported(signal, http_client())?;
                opentelemetry_otlp::$kind::builder()
                    .with_http()
                    .with_http_client(client)
                    .build()
            }
            Protocol::Grpc => {
                let grpc = reported(signal, grpc_runtime())?;
                runtime = Some(grpc);
                // tonic's channel starts its task on the runtime entered here.
                let _entered = grpc.enter();
                let builder = opentelemetry_otlp::$kind::builder().with_tonic();
                match tls_roots(signal) {
                    Some(tls) => builder.with_tls_config(tls).build(),
                    None => builder.build(),
                }
            }
        };
        let inner = reported(signal, built.map_err(|error| error.to_string()))?;
        Some(Exporter { inner, runtime })
    }};
}

/// The span exporter the environment asks for, or `None` (the reason on stderr).
pub(super) fn span_exporter() -> Option<Exporter<opentelemetry_otlp::SpanExporter>> {
    exporter!(Signal::Traces, SpanExporter)
}

/// The metric exporter the environment asks for (cumulative temporality, as Prometheus
/// reads it), or `None` (the reason on stderr).
pub(super) fn metric_exporter() -> Option<Exporter<opentelemetry_otlp::MetricExporter>> {
    exporter!(Signal::Metrics, MetricExporter)
}

/// `result`'s value, or `None` with its error on stderr: an exporter that cannot be built
/// leaves the server serving, unobserved, and saying why once.
fn reported<T>(signal: Signal, result: Result<T, String>) -> Option<T> {
    result
        .map_err(|error| eprintln!("fusion: cannot export {} over OTLP: {error}", signal.name()))
        .ok()
}

/// TLS for an `https` grpc endpoint: the platform's roots, through rustls and *ring*;
/// `None` for a plain one.
fn tls_roots(
    signal: Signal,
) -> Option<opentelemetry_otlp::tonic_types::transport::ClientTlsConfig> {
    first_set(signal.endpoint_vars())
        .filter(|endpoint| endpoint.starts_with("https:"))
        .map(|_| {
            opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new().with_native_roots()
        })
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

/// The runtime tonic's channels run on: a current-thread runtime driven by a thread of its
/// own for the life of the process. The SDK's exporting threads poll the exports, which
/// hand their requests to the channel's task here; the server's own runtime is never
/// borrowed (it may be current-thread, or already shutting down as the last spans go out).
fn grpc_runtime() -> Result<&'static tokio::runtime::Handle, String> {
    static RUNTIME: OnceLock<Result<tokio::runtime::Handle, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|error| format!("cannot start the grpc exporter's runtime: {error}"))?;
            let handle = runtime.handle().clone();
            std::thread::Builder::new()
                .name("fusion-otlp-grpc".to_owned())
                .spawn(move || runtime.block_on(std::future::pending::<()>()))
                .map_err(|error| format!("cannot start the grpc exporter's thread: {error}"))?;
            Ok(handle)
        })
        .as_ref()
        .map_err(Clone::clone)
}
