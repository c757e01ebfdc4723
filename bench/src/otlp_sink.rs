//! A collector for `compare --otel`: an OTLP/HTTP receiver on a loopback port that takes
//! what a server exports (`POST /v1/traces`, `/v1/metrics`), decodes it with the official
//! protobuf definitions (`opentelemetry-proto`), counts the spans, and answers each export
//! with an empty success, as a collector that keeps up does.
//!
//! Counting decoded spans is what makes the comparison honest: a batch processor that
//! cannot keep up drops spans, which would make exporting look cheaper than it is, so the
//! report gives the spans received per call next to the throughput.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Response, StatusCode, body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::collector::{
    metrics::v1::ExportMetricsServiceRequest, trace::v1::ExportTraceServiceRequest,
};
use prost::Message as _;

/// What the sink has received since it started or was last [`OtlpSink::take`]n.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Spans decoded from trace exports.
    pub spans: u64,
    /// Trace export requests.
    pub trace_exports: u64,
    /// Metric export requests.
    pub metric_exports: u64,
    /// Requests whose body did not decode, or that named another path.
    pub rejected: u64,
}

#[derive(Default)]
struct Counters {
    spans: AtomicU64,
    trace_exports: AtomicU64,
    metric_exports: AtomicU64,
    rejected: AtomicU64,
}

/// The running receiver; it serves until the process ends.
pub struct OtlpSink {
    address: SocketAddr,
    counters: Arc<Counters>,
}

impl OtlpSink {
    /// Binds a free loopback port and serves it on a thread of its own.
    pub fn start() -> std::io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()?;
        let served = Arc::clone(&counters);
        std::thread::Builder::new()
            .name("otlp-sink".into())
            .spawn(move || runtime.block_on(serve(listener, served)))?;
        Ok(Self { address, counters })
    }

    /// The base URL to give a server as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.address)
    }

    /// What was received since the last call, the counters reset to zero.
    pub fn take(&self) -> Received {
        let take = |counter: &AtomicU64| counter.swap(0, Ordering::Relaxed);
        Received {
            spans: take(&self.counters.spans),
            trace_exports: take(&self.counters.trace_exports),
            metric_exports: take(&self.counters.metric_exports),
            rejected: take(&self.counters.rejected),
        }
    }
}

async fn serve(listener: std::net::TcpListener, counters: Arc<Counters>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        eprintln!("otlp-sink: the listener could not join the runtime");
        return;
    };
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let counters = Arc::clone(&counters);
        tokio::spawn(async move {
            let service = service_fn(move |request| export(request, Arc::clone(&counters)));
            // A server that exits mid-export closes its connection: nothing to report.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// One export: decoded and counted, answered with an empty (full) success.
async fn export(
    request: Request<hyper::body::Incoming>,
    counters: Arc<Counters>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return Ok(status(StatusCode::BAD_REQUEST)),
    };
    let decoded = match path.as_str() {
        "/v1/traces" => ExportTraceServiceRequest::decode(body).ok().map(|request| {
            let spans = request
                .resource_spans
                .iter()
                .flat_map(|resource| &resource.scope_spans)
                .map(|scope| scope.spans.len() as u64)
                .sum::<u64>();
            counters.spans.fetch_add(spans, Ordering::Relaxed);
            counters.trace_exports.fetch_add(1, Ordering::Relaxed);
        }),
        "/v1/metrics" => ExportMetricsServiceRequest::decode(body).ok().map(|_| {
            counters.metric_exports.fetch_add(1, Ordering::Relaxed);
        }),
        _ => None,
    };
    if decoded.is_none() {
        counters.rejected.fetch_add(1, Ordering::Relaxed);
        return Ok(status(StatusCode::BAD_REQUEST));
    }
    let mut response = status(StatusCode::OK);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/x-protobuf"),
    );
    Ok(response)
}

fn status(code: StatusCode) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}
