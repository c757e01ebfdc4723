//! An OTLP/HTTP receiver of the test's own: axum on a free loopback port, on its own thread
//! and runtime, taking `POST /v1/traces` as a collector does and decoding each export with
//! the official protobuf definitions (`opentelemetry-proto`, prost). No mock exporter: a
//! server under test exports to it as it would to a collector. Stopped when dropped.

use std::{
    sync::{Arc, Mutex},
    thread,
    time::{Duration, Instant},
};

use super::axum_thread::AxumThread;
use axum::{Router, body::Bytes, extract::State, http::StatusCode, routing::post};
use opentelemetry_proto::tonic::{
    collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse},
    common::v1::any_value::Value as AnyValue,
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
        self.span
            .attributes
            .iter()
            .find(|attribute| attribute.key == key)
            .and_then(|attribute| attribute.value.as_ref()?.value.as_ref())
            .map(text)
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
}

fn text(value: &AnyValue) -> String {
    match value {
        AnyValue::StringValue(text) => text.clone(),
        AnyValue::IntValue(number) => number.to_string(),
        AnyValue::BoolValue(flag) => flag.to_string(),
        AnyValue::DoubleValue(number) => number.to_string(),
        other => format!("{other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

type Received = Arc<Mutex<Vec<ReceivedSpan>>>;

pub(crate) struct OtlpReceiver {
    received: Received,
    /// Serves `/v1/traces`; stopped when the receiver is dropped.
    server: AxumThread,
}

impl OtlpReceiver {
    pub(crate) fn start() -> Self {
        let received = Received::default();
        let shared = Arc::clone(&received);
        let server = AxumThread::start("test-otlp-receiver", |_| {
            Router::new()
                .route("/v1/traces", post(export))
                .with_state(shared)
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
            .map(|spans| spans.clone())
            .unwrap_or_default()
    }

    /// Waits (at most `limit`) until a span satisfies `wanted`, and returns it.
    pub(crate) fn wait_for(
        &self,
        limit: Duration,
        wanted: impl Fn(&ReceivedSpan) -> bool,
    ) -> Option<ReceivedSpan> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(span) = self.spans().into_iter().find(|span| wanted(span)) {
                return Some(span);
            }
            if Instant::now() > deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `POST /v1/traces`: an `ExportTraceServiceRequest` in protobuf, answered as a collector
/// answers it (an empty `ExportTraceServiceResponse`); a body that does not decode is 400.
async fn export(State(received): State<Received>, body: Bytes) -> (StatusCode, Vec<u8>) {
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (StatusCode::BAD_REQUEST, Vec::new());
    };
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let resource: Vec<(String, String)> = resource_spans
            .resource
            .map(|resource| {
                resource
                    .attributes
                    .into_iter()
                    .filter_map(|attribute| {
                        let value = attribute.value?.value?;
                        Some((attribute.key, text(&value)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        for scope in resource_spans.scope_spans {
            for span in scope.spans {
                spans.push(ReceivedSpan {
                    span,
                    resource: resource.clone(),
                });
            }
        }
    }
    if let Ok(mut all) = received.lock() {
        all.extend(spans);
    }
    (
        StatusCode::OK,
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}
