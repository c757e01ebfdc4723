//! An OTLP receiver of the test's own, on a free loopback port, on its own thread and
//! runtime, taking exports as a collector does: over HTTP (`POST /v1/traces` and
//! `/v1/metrics`, served by axum) or over gRPC (the collector's `TraceService` and
//! `MetricsService`, served by tonic). Each export is decoded with the official protobuf
//! definitions (`opentelemetry-proto`, prost). No mock exporter: a server under test
//! exports to it as it would to a collector. Stopped when dropped.

use std::{
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use super::axum_thread::AxumThread;
use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing::post};
use opentelemetry_proto::tonic::{
    collector::{
        metrics::v1::{
            ExportMetricsServiceRequest, ExportMetricsServiceResponse,
            metrics_service_server::{MetricsService, MetricsServiceServer},
        },
        trace::v1::{
            ExportTraceServiceRequest, ExportTraceServiceResponse,
            trace_service_server::{TraceService, TraceServiceServer},
        },
    },
    common::v1::{KeyValue, any_value::Value as AnyValue},
    metrics::v1::metric::Data,
    resource::v1::Resource,
    trace::v1::Span,
};
use prost::Message as _;

/// One span as received, with the attributes of its resource.
#[derive(Clone, Debug)]
pub(crate) struct ReceivedSpan {
    pub(crate) span: Span,
    pub(crate) resource: Vec<(String, String)>,
}

impl ReceivedSpan {
    /// The string (or the integer, written out) value of attribute `key`.
    pub(crate) fn attribute(&self, key: &str) -> Option<String> {
        attribute(&self.span.attributes, key)
    }

    /// The span's trace id, in hex.
    pub(crate) fn trace_id(&self) -> String {
        hex(&self.span.trace_id)
    }

    /// The span's own id, in hex.
    pub(crate) fn span_id(&self) -> String {
        hex(&self.span.span_id)
    }

    /// Its parent's span id, in hex (empty for a root span).
    pub(crate) fn parent_span_id(&self) -> String {
        hex(&self.span.parent_span_id)
    }

    /// The names of the span's events, in order.
    pub(crate) fn event_names(&self) -> Vec<String> {
        self.span
            .events
            .iter()
            .map(|event| event.name.clone())
            .collect()
    }
}

/// One data point of a metric as received: its attributes, and its numbers (a histogram's
/// count, sum, bounds and bucket counts; a sum's or gauge's value).
#[derive(Clone, Debug)]
pub(crate) struct ReceivedPoint {
    pub(crate) metric: String,
    pub(crate) unit: String,
    pub(crate) attributes: Vec<(String, String)>,
    pub(crate) count: u64,
    pub(crate) value: f64,
    pub(crate) bounds: Vec<f64>,
    pub(crate) bucket_counts: Vec<u64>,
}

impl ReceivedPoint {
    /// The value of attribute `key`.
    pub(crate) fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
    }
}

fn attribute(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|attribute| attribute.key == key)
        .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
        .map(text)
}

fn pairs(attributes: &[KeyValue]) -> Vec<(String, String)> {
    attributes
        .iter()
        .filter_map(|attribute| {
            let value = attribute.value.as_ref()?.value.as_ref()?;
            Some((attribute.key.clone(), text(value)))
        })
        .collect()
}

fn text(value: &AnyValue) -> String {
    match value {
        AnyValue::StringValue(text) => text.clone(),
        AnyValue::IntValue(number) => number.to_string(),
        AnyValue::BoolValue(flag) => flag.to_string(),
        AnyValue::DoubleValue(number) => number.to_string(),
        AnyValue::ArrayValue(array) => array
            .values
            .iter()
            .filter_map(|value| value.value.as_ref())
            .map(text)
            .collect::<Vec<_>>()
            .join(","),
        other => format!("{other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// What the receiver has been sent.
#[derive(Default)]
struct Exports {
    spans: Vec<ReceivedSpan>,
    points: Vec<ReceivedPoint>,
}

type Received = Arc<Mutex<Exports>>;

pub(crate) struct OtlpReceiver {
    received: Received,
    /// Serves the exports; stopped when the receiver is dropped.
    server: AxumThread,
}

impl OtlpReceiver {
    /// A receiver of OTLP over HTTP (http/protobuf).
    pub(crate) fn start() -> Self {
        let received = Received::default();
        let shared = Arc::clone(&received);
        let server = AxumThread::start("test-otlp-receiver", |_| {
            Router::new()
                .route("/v1/traces", post(export_traces))
                .route("/v1/metrics", post(export_metrics))
                .with_state(shared)
        });
        Self { received, server }
    }

    /// A receiver of OTLP over gRPC, served by tonic as a collector serves it.
    pub(crate) fn start_grpc() -> Self {
        let received = Received::default();
        let service = Collector(Arc::clone(&received));
        let server = AxumThread::start_with("test-otlp-grpc-receiver", move |listener| {
            Box::pin(async move {
                let _ = tonic::transport::Server::builder()
                    .add_service(TraceServiceServer::new(service.clone()))
                    .add_service(MetricsServiceServer::new(service))
                    .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                    .await;
            })
        });
        Self { received, server }
    }

    /// The base URL to give a server as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub(crate) fn endpoint(&self) -> String {
        self.server.url()
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<ReceivedSpan> {
        self.received
            .lock()
            .map(|exports| exports.spans.clone())
            .unwrap_or_default()
    }

    /// Every metric data point received so far, oldest export first.
    pub(crate) fn points(&self) -> Vec<ReceivedPoint> {
        self.received
            .lock()
            .map(|exports| exports.points.clone())
            .unwrap_or_default()
    }

    /// Waits (at most `limit`) until a span satisfies `wanted`, and returns it.
    pub(crate) fn wait_for(
        &self,
        limit: Duration,
        wanted: impl Fn(&ReceivedSpan) -> bool,
    ) -> Option<ReceivedSpan> {
        wait(limit, || self.spans().into_iter().find(|span| wanted(span)))
    }

    /// Waits (at most `limit`) for the span named `name`; panics if none came, with the
    /// names that did and the server's `stderr`.
    pub(crate) fn span_named(&self, name: &str, limit: Duration, stderr: &str) -> ReceivedSpan {
        self.wait_for(limit, |span| span.span.name == name)
            .unwrap_or_else(|| {
                let names: Vec<String> = self
                    .spans()
                    .iter()
                    .map(|span| span.span.name.clone())
                    .collect();
                panic!(
                    "no `{name}` span reached the receiver; got {names:?}\n--- stderr ---\n{stderr}"
                )
            })
    }

    /// Waits (at most `limit`) until a data point satisfies `wanted`, and returns the
    /// newest such (metrics are cumulative: the last export has the totals).
    pub(crate) fn wait_for_point(
        &self,
        limit: Duration,
        wanted: impl Fn(&ReceivedPoint) -> bool,
    ) -> Option<ReceivedPoint> {
        wait(limit, || {
            self.points().into_iter().rev().find(|point| wanted(point))
        })
    }
}

fn wait<T>(limit: Duration, mut found: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = found() {
            return Some(value);
        }
        if Instant::now() > deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn resource_pairs(resource: Option<&Resource>) -> Vec<(String, String)> {
    resource
        .map(|resource| pairs(&resource.attributes))
        .unwrap_or_default()
}

/// Keeps the spans of one export.
fn keep_traces(received: &Received, request: ExportTraceServiceRequest) {
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = resource_pairs(resource_spans.resource.as_ref());
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(ReceivedSpan {
                    span,
                    resource: resource.clone(),
                });
            }
        }
    }
    if let Ok(mut exports) = received.lock() {
        exports.spans.extend(spans);
    }
}

/// Keeps the data points of one export: histograms, sums and gauges.
fn keep_metrics(received: &Received, request: ExportMetricsServiceRequest) {
    let mut points = Vec::new();
    for resource_metrics in request.resource_metrics {
        for scope in resource_metrics.scope_metrics {
            for metric in scope.metrics {
                let point = |attributes: &[KeyValue]| ReceivedPoint {
                    metric: metric.name.clone(),
                    unit: metric.unit.clone(),
                    attributes: pairs(attributes),
                    count: 0,
                    value: 0.0,
                    bounds: Vec::new(),
                    bucket_counts: Vec::new(),
                };
                let number = |value: Option<
                    &opentelemetry_proto::tonic::metrics::v1::number_data_point::Value,
                >| {
                    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
                    match value {
                        Some(Value::AsDouble(number)) => *number,
                        Some(Value::AsInt(number)) => *number as f64,
                        None => 0.0,
                    }
                };
                match &metric.data {
                    Some(Data::Histogram(histogram)) => {
                        for data in &histogram.data_points {
                            points.push(ReceivedPoint {
                                count: data.count,
                                value: data.sum.unwrap_or_default(),
                                bounds: data.explicit_bounds.clone(),
                                bucket_counts: data.bucket_counts.clone(),
                                ..point(&data.attributes)
                            });
                        }
                    }
                    Some(Data::Sum(sum)) => {
                        for data in &sum.data_points {
                            points.push(ReceivedPoint {
                                value: number(data.value.as_ref()),
                                ..point(&data.attributes)
                            });
                        }
                    }
                    Some(Data::Gauge(gauge)) => {
                        for data in &gauge.data_points {
                            points.push(ReceivedPoint {
                                value: number(data.value.as_ref()),
                                ..point(&data.attributes)
                            });
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    if let Ok(mut exports) = received.lock() {
        exports.points.extend(points);
    }
}

/// `POST /v1/traces`: an `ExportTraceServiceRequest` in protobuf, answered as a collector
/// answers it (an empty `ExportTraceServiceResponse`); a body that does not decode is 400.
async fn export_traces(State(received): State<Received>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    keep_traces(&received, request);
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}

/// `POST /v1/metrics`, as `/v1/traces`.
async fn export_metrics(State(received): State<Received>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let Ok(request) = ExportMetricsServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    keep_metrics(&received, request);
    (
        StatusCode::OK,
        ExportMetricsServiceResponse::default().encode_to_vec(),
    )
}

/// The collector's gRPC services.
#[derive(Clone)]
struct Collector(Received);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        keep_traces(&self.0, request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        keep_metrics(&self.0, request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}
