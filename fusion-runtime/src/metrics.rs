//! Metrics per tool, kept in process: calls by outcome, a latency histogram, calls in
//! flight, retries and the circuit state. Read them with [`Server::metrics`](crate::Server::metrics)
//! or export them as Prometheus text with [`MetricsSnapshot::to_prometheus`].
//!
//! ```
//! use fusion_runtime::{prelude::*, testing::Tester};
//!
//! /// Echo.
//! #[mcp_tool]
//! async fn echo(text: String) -> String {
//!     text
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tester = Tester::new(Server::builder("m", "0").tool(echo).build());
//! tester.call("echo", serde_json::json!({"text": "hi"})).await;
//! let snapshot = tester.server().metrics();
//! assert_eq!(snapshot.tools[0].calls["ok"], 1);
//! assert!(snapshot.to_prometheus().contains("fusion_tool_calls_total{tool=\"echo\",outcome=\"ok\"} 1"));
//! # });
//! ```

use std::{
    collections::BTreeMap,
    sync::{
        Mutex,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
    time::Duration,
};

use prometheus_client::{
    collector::Collector,
    encoding::{DescriptorEncoder, NoLabelSet},
    metrics::MetricType,
    registry::Registry,
};

/// Upper bounds of the latency buckets, in microseconds (the last bucket is unbounded).
const BUCKETS_US: [u64; 19] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// The live counters of one tool.
#[derive(Debug, Default)]
pub(crate) struct ToolMetrics {
    /// The tool as clients call it (a grouped tool's name), and the action: the labels of
    /// the exported metrics.
    #[cfg(feature = "otel")]
    tool: &'static str,
    #[cfg(feature = "otel")]
    action: Option<&'static str>,
    /// The process's counts of this tool, which the exported counters read.
    #[cfg(feature = "otel")]
    exported: std::sync::Arc<crate::log::otel::ToolCounts>,
    calls: Mutex<BTreeMap<&'static str, u64>>,
    buckets: [AtomicU64; BUCKETS_US.len() + 1],
    latency_sum_us: AtomicU64,
    in_flight: AtomicI64,
    retries: AtomicU64,
    /// A cached tool's calls by how the cache answered: hit, miss, coalesced, stale.
    cache: [AtomicU64; 4],
}

/// One call in flight, counted from [`ToolMetrics::start`] until it is finished or dropped.
///
/// The count is given back in `Drop`, so a call whose future is dropped (the client went
/// away, a test's timeout fired) is not left "in flight" for good: it is counted as
/// `cancelled`.
#[must_use = "dropping the guard ends the call as cancelled"]
pub(crate) struct InFlight<'a> {
    metrics: &'a ToolMetrics,
    started: tokio::time::Instant,
    finished: bool,
}

impl InFlight<'_> {
    /// Ends the call with its outcome; `error_type` is the failure's code or class
    /// (`None` for a success), as the exported metrics label it.
    pub(crate) fn finish(
        mut self,
        outcome: &'static str,
        latency: Duration,
        attempts: u32,
        error_type: Option<&str>,
    ) {
        self.finished = true;
        self.metrics
            .finished(outcome, latency, attempts, error_type);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.metrics.finished(
                OUTCOME_DROPPED,
                self.started.elapsed(),
                0,
                Some(OUTCOME_DROPPED),
            );
        }
    }
}

/// The outcome a call is counted under when its future was dropped before it ended.
const OUTCOME_DROPPED: &str = crate::failure::outcome::CANCELLED;

impl ToolMetrics {
    /// The counters of `tool` (as clients call it), `action` if it is one.
    pub(crate) fn new(tool: &'static str, action: Option<&'static str>) -> Self {
        #[cfg(feature = "otel")]
        return Self {
            tool,
            action,
            exported: crate::log::otel::counts_of(tool, action),
            ..Self::default()
        };
        #[cfg(not(feature = "otel"))]
        {
            let _ = (tool, action);
            Self::default()
        }
    }

    /// The tool as clients call it, and the action: the labels of its exported metrics.
    #[cfg(feature = "otel")]
    pub(crate) fn label(&self) -> (&'static str, Option<&'static str>) {
        (self.tool, self.action)
    }

    /// Counts a call in flight until the guard is finished or dropped.
    pub(crate) fn start(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            metrics: self,
            started: tokio::time::Instant::now(),
            finished: false,
        }
    }

    fn finished(
        &self,
        outcome: &'static str,
        latency: Duration,
        attempts: u32,
        error_type: Option<&str>,
    ) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        let bucket = BUCKETS_US
            .iter()
            .position(|bound| micros <= *bound)
            .unwrap_or(BUCKETS_US.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(micros, Ordering::Relaxed);
        self.retries
            .fetch_add(u64::from(attempts.saturating_sub(1)), Ordering::Relaxed);
        if let Ok(mut calls) = self.calls.lock() {
            *calls.entry(outcome).or_default() += 1;
        }
        #[cfg(feature = "otel")]
        {
            self.exported.call(outcome, attempts);
            crate::log::otel::record_call(&self.exported, latency.as_secs_f64(), error_type);
        }
        #[cfg(not(feature = "otel"))]
        let _ = error_type;
    }

    /// Counts how the cache answered one call of a cached tool.
    pub(crate) fn cache_used(&self, how: crate::cache::CacheUse) {
        self.cache[how as usize].fetch_add(1, Ordering::Relaxed);
        #[cfg(feature = "otel")]
        self.exported.cache(how);
    }

    pub(crate) fn snapshot(&self, tool: &str, circuit_open: bool) -> ToolSnapshot {
        let buckets: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = buckets.iter().sum();
        let percentile = |fraction: f64| -> Option<u64> {
            if total == 0 {
                return None;
            }
            // The smallest bucket bound under which `fraction` of the calls fall.
            let rank = (fraction * total as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (index, count) in buckets.iter().enumerate() {
                seen += count;
                if seen >= rank {
                    return Some(BUCKETS_US.get(index).copied().unwrap_or(u64::MAX));
                }
            }
            None
        };
        ToolSnapshot {
            tool: tool.to_owned(),
            calls: self
                .calls
                .lock()
                .map(|calls| calls.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect())
                .unwrap_or_default(),
            latency_p50_us: percentile(0.5),
            latency_p90_us: percentile(0.9),
            latency_p99_us: percentile(0.99),
            latency_buckets: buckets,
            latency_sum_us: self.latency_sum_us.load(Ordering::Relaxed),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            circuit_open,
            cache: crate::cache::CacheUse::ALL
                .iter()
                .map(|how| {
                    (
                        how.as_str().to_owned(),
                        self.cache[*how as usize].load(Ordering::Relaxed),
                    )
                })
                .filter(|(_, count)| *count > 0)
                .collect(),
        }
    }
}

/// One tool's metrics at a point in time.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolSnapshot {
    /// The tool (as listed; `group/action` for an action).
    pub tool: String,
    /// Finished calls by outcome (`ok`, `invalid_arguments`, `timeout`, ...).
    pub calls: BTreeMap<String, u64>,
    /// Median latency (the upper bound of its histogram bucket), in µs.
    pub latency_p50_us: Option<u64>,
    /// 90th percentile latency, in µs.
    pub latency_p90_us: Option<u64>,
    /// 99th percentile latency, in µs.
    pub latency_p99_us: Option<u64>,
    /// Calls per latency bucket (bounds: 50 µs … 60 s, then unbounded).
    pub latency_buckets: Vec<u64>,
    /// The sum of all latencies, in µs.
    pub latency_sum_us: u64,
    /// Calls running now.
    pub in_flight: i64,
    /// Retries made (runs beyond the first).
    pub retries: u64,
    /// Whether the circuit breaker is open.
    pub circuit_open: bool,
    /// A cached tool's calls by how the cache answered them (`hit`, `miss`, `coalesced`,
    /// `stale`); empty for a tool without `cache`.
    pub cache: BTreeMap<String, u64>,
}

/// Every tool's metrics at a point in time.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSnapshot {
    /// One entry per tool handler, in registration order.
    pub tools: Vec<ToolSnapshot>,
    /// The digest of the server's tool surface
    /// ([`Server::surface_digest`](crate::Server::surface_digest)), exposed as
    /// `fusion_surface_info{digest=".."} 1` so that replicas serving different surfaces
    /// show in one query.
    pub surface_digest: String,
    /// Change notifications dropped because a subscriber did not read them: the oldest of
    /// a full queue ([`changes`](crate::changes)), exposed as
    /// `fusion_notifications_dropped_total`.
    pub notifications_dropped: u64,
}

impl MetricsSnapshot {
    /// The metrics in the Prometheus text exposition format (version 0.0.4), encoded by
    /// `prometheus-client`.
    pub fn to_prometheus(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Exposition(self.clone())));
        let mut text = String::new();
        // Writing to a `String` fails only if a metric's encoding does, which ours cannot.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut text, &registry);
        text
    }
}

/// The content type of [`MetricsSnapshot::to_prometheus`]'s text.
#[cfg(feature = "http")]
pub(crate) const PROMETHEUS_CONTENT_TYPE: &str =
    prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// A snapshot, encoded on a scrape.
#[derive(Debug)]
struct Exposition(MetricsSnapshot);

/// The upper bounds of the latency buckets in seconds, then `+Inf`.
fn bucket_bounds() -> impl Iterator<Item = f64> {
    BUCKETS_US
        .iter()
        .map(|us| *us as f64 / 1e6)
        .chain(std::iter::once(f64::INFINITY))
}

impl Collector for Exposition {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let tools = &self.0.tools;
        // Counters are named without `_total`: the encoder adds it.
        let mut calls = encoder.encode_descriptor(
            "fusion_tool_calls",
            "Finished tool calls by outcome.",
            None,
            MetricType::Counter,
        )?;
        for tool in tools {
            for (outcome, count) in &tool.calls {
                let labels = [("tool", tool.tool.as_str()), ("outcome", outcome.as_str())];
                calls
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(count, None)?;
            }
        }
        let mut latency = encoder.encode_descriptor(
            "fusion_tool_latency_seconds",
            "Latency of tool calls.",
            None,
            MetricType::Histogram,
        )?;
        for tool in tools {
            let buckets: Vec<(f64, u64)> = bucket_bounds()
                .zip(tool.latency_buckets.iter().copied())
                .collect();
            let count = tool.latency_buckets.iter().sum();
            latency
                .encode_family(&[("tool", tool.tool.as_str())])?
                .encode_histogram::<NoLabelSet>(
                    tool.latency_sum_us as f64 / 1e6,
                    count,
                    &buckets,
                    None,
                )?;
        }
        let mut in_flight = encoder.encode_descriptor(
            "fusion_tool_in_flight",
            "Tool calls running now.",
            None,
            MetricType::Gauge,
        )?;
        for tool in tools {
            in_flight
                .encode_family(&[("tool", tool.tool.as_str())])?
                .encode_gauge(&tool.in_flight)?;
        }
        let mut retries = encoder.encode_descriptor(
            "fusion_tool_retries",
            "Retries of transient failures.",
            None,
            MetricType::Counter,
        )?;
        for tool in tools {
            retries
                .encode_family(&[("tool", tool.tool.as_str())])?
                .encode_counter::<NoLabelSet, _, u64>(&tool.retries, None)?;
        }
        let mut cache = encoder.encode_descriptor(
            "fusion_tool_cache",
            "Calls of cached tools by how the cache answered them (hit, miss, coalesced, stale).",
            None,
            MetricType::Counter,
        )?;
        for tool in tools {
            for (result, count) in &tool.cache {
                let labels = [("tool", tool.tool.as_str()), ("result", result.as_str())];
                cache
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(count, None)?;
            }
        }
        let mut circuit = encoder.encode_descriptor(
            "fusion_tool_circuit_open",
            "1 while the tool's circuit breaker is open.",
            None,
            MetricType::Gauge,
        )?;
        for tool in tools {
            circuit
                .encode_family(&[("tool", tool.tool.as_str())])?
                .encode_gauge(&i64::from(tool.circuit_open))?;
        }
        // An info metric in the 0.0.4 text format's way: a gauge of 1 whose label says it.
        encoder
            .encode_descriptor(
                "fusion_surface_info",
                "The SHA-256 of the server's tool surface (its contract).",
                None,
                MetricType::Gauge,
            )?
            .encode_family(&[("digest", self.0.surface_digest.as_str())])?
            .encode_gauge(&1_i64)?;
        encoder
            .encode_descriptor(
                "fusion_notifications_dropped",
                "Change notifications dropped, oldest first, for subscribers that did not read them.",
                None,
                MetricType::Counter,
            )?
            .encode_counter::<NoLabelSet, _, u64>(&self.0.notifications_dropped, None)?;
        Ok(())
    }
}
