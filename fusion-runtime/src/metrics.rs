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
    fmt::Write as _,
    sync::{
        Mutex,
        atomic::{AtomicI64, AtomicU64, Ordering},
    },
    time::Duration,
};

/// Upper bounds of the latency buckets, in microseconds (the last bucket is unbounded).
const BUCKETS_US: [u64; 19] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000, 30_000_000, 60_000_000,
];

/// The live counters of one tool.
#[derive(Debug, Default)]
pub(crate) struct ToolMetrics {
    calls: Mutex<BTreeMap<&'static str, u64>>,
    buckets: [AtomicU64; BUCKETS_US.len() + 1],
    latency_sum_us: AtomicU64,
    in_flight: AtomicI64,
    retries: AtomicU64,
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
    /// Ends the call with its outcome.
    pub(crate) fn finish(mut self, outcome: &'static str, latency: Duration, attempts: u32) {
        self.finished = true;
        self.metrics.finished(outcome, latency, attempts);
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.metrics
                .finished(OUTCOME_DROPPED, self.started.elapsed(), 0);
        }
    }
}

/// The outcome a call is counted under when its future was dropped before it ended.
const OUTCOME_DROPPED: &str = crate::failure::outcome::CANCELLED;

impl ToolMetrics {
    /// Counts a call in flight until the guard is finished or dropped.
    pub(crate) fn start(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            metrics: self,
            started: tokio::time::Instant::now(),
            finished: false,
        }
    }

    fn finished(&self, outcome: &'static str, latency: Duration, attempts: u32) {
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
}

/// Every tool's metrics at a point in time.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSnapshot {
    /// One entry per tool handler, in registration order.
    pub tools: Vec<ToolSnapshot>,
}

impl MetricsSnapshot {
    /// The metrics in the Prometheus text exposition format (version 0.0.4).
    pub fn to_prometheus(&self) -> String {
        let mut text = String::new();
        text.push_str("# HELP fusion_tool_calls_total Finished tool calls by outcome.\n");
        text.push_str("# TYPE fusion_tool_calls_total counter\n");
        for tool in &self.tools {
            for (outcome, count) in &tool.calls {
                let _ = writeln!(
                    text,
                    "fusion_tool_calls_total{{tool=\"{}\",outcome=\"{outcome}\"}} {count}",
                    escape(&tool.tool)
                );
            }
        }
        text.push_str("# HELP fusion_tool_latency_seconds Latency of tool calls.\n");
        text.push_str("# TYPE fusion_tool_latency_seconds histogram\n");
        for tool in &self.tools {
            let name = escape(&tool.tool);
            let mut cumulative = 0;
            for (index, count) in tool.latency_buckets.iter().enumerate() {
                cumulative += count;
                let bound = BUCKETS_US
                    .get(index)
                    .map_or_else(|| "+Inf".to_owned(), |us| format!("{}", *us as f64 / 1e6));
                let _ = writeln!(
                    text,
                    "fusion_tool_latency_seconds_bucket{{tool=\"{name}\",le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                text,
                "fusion_tool_latency_seconds_sum{{tool=\"{name}\"}} {}",
                tool.latency_sum_us as f64 / 1e6
            );
            let _ = writeln!(
                text,
                "fusion_tool_latency_seconds_count{{tool=\"{name}\"}} {cumulative}"
            );
        }
        for (metric, kind, help, value) in [
            (
                "fusion_tool_in_flight",
                "gauge",
                "Tool calls running now.",
                (|t: &ToolSnapshot| t.in_flight.to_string()) as fn(&ToolSnapshot) -> String,
            ),
            (
                "fusion_tool_retries_total",
                "counter",
                "Retries of transient failures.",
                |t| t.retries.to_string(),
            ),
            (
                "fusion_tool_circuit_open",
                "gauge",
                "1 while the tool's circuit breaker is open.",
                |t| u8::from(t.circuit_open).to_string(),
            ),
        ] {
            let _ = writeln!(text, "# HELP {metric} {help}\n# TYPE {metric} {kind}");
            for tool in &self.tools {
                let _ = writeln!(
                    text,
                    "{metric}{{tool=\"{}\"}} {}",
                    escape(&tool.tool),
                    value(tool)
                );
            }
        }
        text
    }
}

fn escape(label: &str) -> String {
    label
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
