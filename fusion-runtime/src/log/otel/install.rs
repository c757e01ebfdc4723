//! Installing the exporters: the tracer provider behind [`otel_layer`], the meter provider
//! it starts, and their flush before the process ends.

use std::sync::{
    Once, OnceLock,
    atomic::{AtomicBool, Ordering},
};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::{metrics::SdkMeterProvider, trace::SdkTracerProvider};
use tracing_subscriber::{
    Layer as _,
    filter::{FilterFn, Filtered},
};

use super::{
    export::{self, Signal},
    instruments, sampling,
};

/// The providers installed, kept to flush them before the process ends.
static TRACER_PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
static METER_PROVIDER: OnceLock<SdkMeterProvider> = OnceLock::new();

/// Whether a layer that turns spans into OpenTelemetry spans is installed: only then does a
/// request make its span (without one, a span would cost and reach no one).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The OpenTelemetry layer for a subscriber of one's own: it exports spans over OTLP as the
/// `OTEL_*` variables say, and starts exporting the metrics when they ask for it too.
/// `None` when no endpoint is set for spans, or the exporter cannot be built (the reason is
/// written to stderr). [`init`](crate::log::init) adds it by itself.
///
/// fusion's own log events (the call line, which carries arguments; the recovery events)
/// stay out of the spans: a span has named events of its own for what the policies did
/// (`fusion.retry.backoff`, `fusion.circuit.opened`, ...). Every other event in a span (a
/// user's own) becomes one of its events.
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
    layer()
}

/// The layer [`otel_layer`] gives, as a type [`init`](crate::log::init)'s subscriber can
/// name (the call log knows its own subscriber by its type).
pub(crate) type OtelLayer<S> = Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::SdkTracer>,
    FilterFn<fn(&tracing::Metadata<'_>) -> bool>,
    S,
>;

/// [`otel_layer`], typed.
pub(crate) fn layer<S>() -> Option<OtelLayer<S>>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    start_metrics();
    if !export::wanted(Signal::Traces) {
        return None;
    }
    let provider = match TRACER_PROVIDER.get() {
        Some(provider) => provider.clone(),
        None => {
            let exporter = export::span_exporter()?;
            // The same sampler as the provider's: both are the SDK's default, read from
            // `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`.
            sampling::remember(opentelemetry_sdk::trace::Config::default().sampler);
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(opentelemetry_sdk::Resource::builder().build())
                .build();
            TRACER_PROVIDER.get_or_init(|| provider).clone()
        }
    };
    ACTIVE.store(true, Ordering::Release);
    let not_the_log: fn(&tracing::Metadata<'_>) -> bool = not_the_log;
    Some(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("fusion"))
            // The conventions' attributes only: no source location, thread, `tracing`
            // target, or busy and idle times on every span (each an attribute to build and
            // export a request).
            .with_location(false)
            .with_target(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(tracing_subscriber::filter::filter_fn(not_the_log)),
    )
}

/// fusion's log events stay out of the spans.
fn not_the_log(metadata: &tracing::Metadata<'_>) -> bool {
    !(metadata.is_event() && metadata.target().starts_with("fusion::"))
}

/// Starts the periodic export of the metrics (every `OTEL_METRIC_EXPORT_INTERVAL`
/// milliseconds, 60 s by default), once, when an endpoint is set for them.
fn start_metrics() {
    static STARTED: Once = Once::new();
    STARTED.call_once(|| {
        if !export::wanted(Signal::Metrics) {
            return;
        }
        let Some(exporter) = export::metric_exporter() else {
            return;
        };
        let provider = SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(opentelemetry_sdk::Resource::builder().build())
            .build();
        instruments::install(&provider);
        let _ = METER_PROVIDER.set(provider);
    });
}

/// Exports the spans and metrics not sent yet; called by [`flush`](crate::log::flush)
/// before the process ends.
pub(crate) fn flush() {
    // The errors say an exporter failed or timed out; nothing more can be done then.
    if let Some(provider) = TRACER_PROVIDER.get() {
        let _ = provider.force_flush();
    }
    if let Some(provider) = METER_PROVIDER.get() {
        let _ = provider.force_flush();
    }
}

/// Whether requests make spans.
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}
