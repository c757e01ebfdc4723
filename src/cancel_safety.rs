//! Tools for the cancellation tests (issue 14): each sits behind one policy that holds
//! state across an `.await` (a circuit breaker's half-open probe, a concurrency queue slot,
//! an idempotency claim, a reconnect, a retry's backoff, a timeout), so a call dropped or
//! cancelled at any await point must give that state back.
//!
//! Served over stdio by `examples/cancel_safety.rs` for the cancellation storm
//! (`tests/stdio/cancel_storm.rs`); called in memory, one await point at a time, by
//! `tests/pipeline/cancel_safety.rs`. Every wait is a `tokio::time` sleep, so tokio's paused clock
//! drives them in tests.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use fusion_runtime::{Classify, Server, middleware, policy::Reconnect, prelude::*};

/// How long each step of a tool's work takes: several steps make several await points.
pub const STEP: Duration = Duration::from_millis(2);

/// Failures of the upstream the tools pretend to call.
#[derive(Debug, thiserror::Error, Classify)]
pub enum StormError {
    /// The connection dropped: worth a retry (after a reconnect, where the tool has one).
    #[error("the upstream connection was reset")]
    #[transient]
    Reset,
    /// The tool's shared state is unusable (a lock was poisoned by a panic).
    #[error("the tool state is poisoned")]
    Poisoned,
    /// `in_flight` was called on a server whose handle was not recorded.
    #[error("the server handle is not set; build the server with `cancel_safety::server_with`")]
    NoServer,
}

/// A pretend upstream connection: a reconnect takes two steps of 10 ms, so callers overlap
/// and share it, and a call can be dropped in the middle of it.
#[derive(Debug, Default)]
pub struct StormUpstream {
    /// Reconnects started.
    pub started: AtomicU32,
    /// Reconnects finished.
    pub reconnects: AtomicU32,
}

impl Reconnect for StormUpstream {
    type Error = std::io::Error;
    async fn reconnect(&self) -> Result<(), std::io::Error> {
        self.started.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(10)).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        self.reconnects.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// State shared by all calls of one server.
#[derive(Debug, Default)]
pub struct StormState {
    /// Runs of `place_order` (each run would place an order).
    pub orders: AtomicU32,
    /// Runs of `limited` that got past the concurrency limit.
    pub limited_started: AtomicU32,
    /// Futures of `hang` and `stall` dropped (cancelled or timed out).
    pub dropped: AtomicU32,
    /// Failures left to inject, per `flaky` key.
    pub failures_left: Mutex<HashMap<String, u32>>,
    /// Runs per `blip` key.
    pub blips: Mutex<HashMap<String, u32>>,
}

/// The per-call context: handles on the shared state and on the server itself.
#[derive(Clone, Debug, Default)]
pub struct StormCtx {
    /// The shared state.
    pub state: Arc<StormState>,
    /// The upstream that `flaky` reconnects.
    pub upstream: Arc<StormUpstream>,
    /// The built server, for `in_flight` (set by [`server_with`]).
    pub server: Arc<OnceLock<Server<StormCtx>>>,
}

/// Counts the drop of a handler future that never finishes by itself.
struct DropCounter(Arc<StormState>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// Works for three steps, then fails transiently if `fail` is set. Its circuit opens on the
/// first failure and lets one probe through 50 ms later.
#[mcp_tool(circuit(failures = 1, window = "30s", cooldown = "50ms"))]
pub async fn breaker(fail: bool) -> Result<String, StormError> {
    for _ in 0..3 {
        tokio::time::sleep(STEP).await;
    }
    if fail {
        Err(StormError::Reset)
    } else {
        Ok("upstream healthy".into())
    }
}

/// Sleeps `ms` milliseconds; one call runs at a time and one more may wait (the server adds
/// `concurrency_limit(1, 1)`).
#[mcp_tool]
pub async fn limited(#[ctx] ctx: &StormCtx, ms: u64) -> String {
    ctx.state.limited_started.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("limited slept {ms} ms")
}

/// Places an order once per `request_id`: a repeated id returns the first order.
#[mcp_tool(destructive, idempotency_key = "request_id")]
pub async fn place_order(#[ctx] ctx: &StormCtx, request_id: String, item: String) -> String {
    let number = ctx.state.orders.fetch_add(1, Ordering::SeqCst) + 1;
    for _ in 0..3 {
        tokio::time::sleep(STEP).await;
    }
    format!("order #{number} for {item} ({request_id})")
}

/// Panics.
#[mcp_tool]
pub async fn explode(message: Option<String>) -> String {
    panic!("{}", message.unwrap_or_else(|| "boom".into()))
}

/// Hangs; its 50 ms deadline cuts it.
#[mcp_tool(timeout = "50ms")]
pub async fn stall(#[ctx] ctx: &StormCtx) -> String {
    let _counter = DropCounter(Arc::clone(&ctx.state));
    std::future::pending::<()>().await;
    unreachable!("a pending future never completes")
}

/// Hangs until the call is cancelled: it has no deadline.
#[mcp_tool]
pub async fn hang(#[ctx] ctx: &StormCtx) -> String {
    let _counter = DropCounter(Arc::clone(&ctx.state));
    std::future::pending::<()>().await;
    unreachable!("a pending future never completes")
}

/// Works one step, then fails transiently `fail_times` times for `key` (then succeeds).
/// Retried up to 3 runs in all, with a 10 ms backoff and a reconnect of the upstream before
/// each retry.
#[mcp_tool(retry(attempts = 3, backoff = "10ms"), reconnect = upstream)]
pub async fn flaky(
    #[ctx] ctx: &StormCtx,
    key: String,
    fail_times: u32,
) -> Result<String, StormError> {
    tokio::time::sleep(STEP).await;
    let mut left = ctx
        .state
        .failures_left
        .lock()
        .map_err(|_| StormError::Poisoned)?;
    let remaining = left.entry(key.clone()).or_insert(fail_times);
    if *remaining > 0 {
        *remaining -= 1;
        return Err(StormError::Reset);
    }
    left.remove(&key);
    Ok(format!("flaky {key} recovered"))
}

/// Works one step, then fails transiently on the first run for `key` and succeeds on the
/// retry (a 10 ms backoff; no reconnect).
#[mcp_tool(retry(attempts = 3, backoff = "10ms"))]
pub async fn blip(#[ctx] ctx: &StormCtx, key: String) -> Result<String, StormError> {
    tokio::time::sleep(STEP).await;
    let mut blips = ctx.state.blips.lock().map_err(|_| StormError::Poisoned)?;
    let runs = blips.entry(key.clone()).or_default();
    *runs += 1;
    if *runs == 1 {
        return Err(StormError::Reset);
    }
    blips.remove(&key);
    Ok(format!("blip {key} recovered"))
}

/// Sleeps `ms` milliseconds, then answers.
#[mcp_tool]
pub async fn work(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("worked {ms} ms")
}

/// Calls in flight on the server, as its metrics count them.
#[mcp_type]
#[derive(Debug, Serialize, JsonSchema)]
pub struct InFlight {
    /// All tools' calls in flight, not counting this one.
    pub total: i64,
    /// The tools with calls in flight (or a negative count, which would be a bug).
    pub tools: BTreeMap<String, i64>,
}

/// Reports the calls in flight on this server (`server.metrics()`), not counting itself.
#[mcp_tool(read_only)]
pub async fn in_flight(#[ctx] ctx: &StormCtx) -> Result<InFlight, StormError> {
    let server = ctx.server.get().ok_or(StormError::NoServer)?;
    let mut tools = BTreeMap::new();
    for tool in server.metrics().tools {
        let count = if tool.tool == "in_flight" {
            tool.in_flight - 1
        } else {
            tool.in_flight
        };
        if count != 0 {
            tools.insert(tool.tool, count);
        }
    }
    Ok(InFlight {
        total: tools.values().sum(),
        tools,
    })
}

/// The server's builder over `ctx`, with `concurrency_limit(1, 1)` on `limited`. Tests add
/// middleware to it; [`server_with`] builds it and records the handle for `in_flight`.
pub fn builder(ctx: StormCtx) -> fusion_runtime::ServerBuilder<StormCtx> {
    Server::builder("cancel-safety", env!("CARGO_PKG_VERSION"))
        .context(move || ctx.clone())
        .classify::<StormError>()
        .tool(breaker)
        .tool(limited)
        .tool(place_order)
        .tool(explode)
        .tool(stall)
        .tool(hang)
        .tool(flaky)
        .tool(blip)
        .tool(work)
        .tool(in_flight)
        .tool_middleware("limited", middleware::concurrency_limit(1, 1))
}

/// Builds the server over `ctx` and records its handle in `ctx.server`, so that
/// `in_flight` can read the metrics.
pub fn server_with(ctx: StormCtx) -> Server<StormCtx> {
    record(builder(ctx.clone()).build(), &ctx)
}

/// Records `server` in `ctx.server` (once; a second server keeps the first handle) and
/// returns it.
pub fn record(server: Server<StormCtx>, ctx: &StormCtx) -> Server<StormCtx> {
    // A second `set` fails only when a handle is there already: that one stays.
    let _ = ctx.server.set(server.clone());
    server
}
