//! What the OpenTelemetry crates cost a request on the thread that serves it, without
//! fusion: the floor under issue 38's goals. Run: `cargo bench -p fusion-bench --bench
//! otel_floor`.
//!
//! `compare --otel` gives fusion's calls/s with tracing on against the call log alone. This
//! gives the crates' own price for the same work, so the two can be set side by side:
//! - `histogram_record`: one record of `mcp.server.operation.duration` with the three
//!   attributes of a successful call, looked up on every record; `bound_histogram_record`:
//!   the same on the histogram bound to them once (what fusion does for a tool's successes,
//!   and what a sampled-out call still pays);
//! - `sdk_span`: a server span with the conventions' attributes made and ended with the
//!   SDK's tracer, handed to the batch processor (no `tracing` in between: the cheapest way
//!   a span can be made with the official SDK);
//! - `tracing_span`: the same span as a `tracing` span through `tracing-opentelemetry`'s
//!   layer, entered and exited once (what fusion does, so that the handler's own `tracing`
//!   spans are its children).
//!
//! The exporter behind the batch processor counts the spans and drops them, so the numbers
//! are the calling thread's share; encoding and sending run on the processor's thread (on a
//! 2-core machine that also serves the load, they are CPU the server no longer has).
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::{
    hint::black_box,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use criterion::{Criterion, criterion_group, criterion_main};
use opentelemetry::{
    KeyValue,
    metrics::MeterProvider as _,
    trace::{Span as _, SpanKind, Tracer as _, TracerProvider as _},
};
use opentelemetry_sdk::{
    error::OTelSdkResult,
    metrics::{ManualReader, SdkMeterProvider},
    trace::{SdkTracerProvider, SpanData, SpanExporter},
};
use tracing_subscriber::layer::SubscriberExt as _;

/// Counts the spans it is handed, and keeps none.
#[derive(Debug, Clone, Default)]
struct CountingExporter(Arc<AtomicU64>);

impl SpanExporter for CountingExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

fn tracer_provider(exporter: CountingExporter) -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build()
}

fn histogram_record(c: &mut Criterion) {
    let provider = SdkMeterProvider::builder()
        .with_reader(ManualReader::builder().build())
        .build();
    let histogram = provider
        .meter("fusion")
        .f64_histogram("mcp.server.operation.duration")
        .with_unit("s")
        .build();
    c.bench_function("otel_floor/histogram_record", |b| {
        b.iter(|| {
            let attributes = [
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", "echo"),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
            ];
            histogram.record(black_box(0.000_012), &attributes);
        });
    });
    let bound = histogram.bind(&[
        KeyValue::new("mcp.method.name", "tools/call"),
        KeyValue::new("gen_ai.tool.name", "echo"),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
    ]);
    c.bench_function("otel_floor/bound_histogram_record", |b| {
        b.iter(|| bound.record(black_box(0.000_012)));
    });
}

fn sdk_span(c: &mut Criterion) {
    let exporter = CountingExporter::default();
    let provider = tracer_provider(exporter.clone());
    let tracer = provider.tracer("fusion");
    let mut made = 0u64;
    c.bench_function("otel_floor/sdk_span", |b| {
        b.iter(|| {
            made += 1;
            let mut span = tracer
                .span_builder("tools/call echo")
                .with_kind(SpanKind::Server)
                .with_attributes([
                    KeyValue::new("mcp.method.name", "tools/call"),
                    KeyValue::new("gen_ai.tool.name", "echo"),
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("jsonrpc.request.id", made.to_string()),
                    KeyValue::new("mcp.protocol.version", "2025-11-25"),
                ])
                .start(&tracer);
            span.end();
        });
    });
    report_drops("sdk_span", &provider, &exporter, made);
}

fn tracing_span(c: &mut Criterion) {
    let exporter = CountingExporter::default();
    let provider = tracer_provider(exporter.clone());
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("fusion"))
        .with_location(false)
        .with_target(false)
        .with_threads(false)
        .with_tracked_inactivity(false);
    let subscriber = tracing_subscriber::registry().with(layer);
    let mut made = 0u64;
    tracing::subscriber::with_default(subscriber, || {
        c.bench_function("otel_floor/tracing_span", |b| {
            b.iter(|| {
                made += 1;
                let span = tracing::info_span!(
                    parent: None,
                    "mcp.server",
                    "otel.name" = "tools/call echo",
                    "otel.kind" = "server",
                    "mcp.method.name" = "tools/call",
                    "gen_ai.tool.name" = "echo",
                    "gen_ai.operation.name" = "execute_tool",
                    "jsonrpc.request.id" = made,
                    "mcp.protocol.version" = "2025-11-25",
                    "error.type" = tracing::field::Empty,
                );
                drop(black_box(span.enter()));
            });
        });
    });
    report_drops("tracing_span", &provider, &exporter, made);
}

/// The batch processor drops spans when its queue is full, which would make a span look
/// cheaper than it is: say how many reached the exporter.
fn report_drops(name: &str, provider: &SdkTracerProvider, exporter: &CountingExporter, made: u64) {
    let _ = provider.force_flush();
    let exported = exporter.0.load(Ordering::Relaxed);
    if made > 0 {
        eprintln!(
            "otel_floor/{name}: {exported} of {made} spans reached the exporter ({:.1}%)",
            100.0 * exported as f64 / made as f64
        );
    }
}

criterion_group!(benches, histogram_record, sdk_span, tracing_span);
criterion_main!(benches);
