//! Fault-injecting tools: each fails in one way the recovery layer must handle. Served by
//! `examples/faults.rs`, called by the recovery, robustness and soak tests.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use fusion_runtime::{Classify, Server, policy::Reconnect, prelude::*};

/// Failures of the upstream the fault tools pretend to call.
#[derive(Debug, thiserror::Error, Classify)]
pub enum UpstreamError {
    /// The connection dropped: worth a retry after a reconnect.
    #[error("the upstream connection was reset")]
    #[transient]
    ConnectionReset,
    /// Too many calls.
    #[error("the upstream is rate limiting us")]
    #[transient(code = rate_limited, retry_after = "20ms")]
    RateLimited,
    /// The thing asked for does not exist.
    #[error("no record with key `{0}`")]
    #[invalid_input(code = not_found, hint = "call `list_keys` to see the keys that exist")]
    NotFound(String),
    /// The caller may not do this.
    #[error("guests may not write")]
    #[invalid_input(code = unauthorized)]
    Unauthorized,
    /// Advice: the call worked but the data may be stale.
    #[error("served from a cache that is 5 minutes old")]
    #[warning(hint = "pass `fresh: true` for live data")]
    Stale,
    /// The credentials were revoked: nothing this process can do.
    #[error("the upstream credentials were revoked")]
    #[fatal]
    CredentialsRevoked,
    /// A wrapped I/O error: classified by its kind.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Something nobody expected.
    #[error("the upstream returned garbage: {0}")]
    Garbage(String),
}

/// A pretend upstream connection that counts its reconnects.
#[derive(Debug, Default)]
pub struct Upstream {
    /// How many reconnects ran.
    pub reconnects: AtomicU32,
}

impl Reconnect for Upstream {
    type Error = std::io::Error;
    async fn reconnect(&self) -> Result<(), std::io::Error> {
        // Long enough that concurrent callers overlap and must share one reconnect.
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.reconnects.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

/// Shared state of the fault tools, kept across calls.
#[derive(Debug, Default)]
pub struct FaultState {
    /// Failures left to inject, per key.
    pub failures_left: Mutex<HashMap<String, u32>>,
    /// Runs of `flaky`, per key.
    pub runs: Mutex<HashMap<String, u32>>,
    /// How many `hang` futures were dropped (cancelled or timed out).
    pub dropped: AtomicU32,
    /// The upstream connection.
    pub upstream: Upstream,
    /// `blip` nonces that failed once and await their retry.
    pub pending: Mutex<std::collections::HashSet<u64>>,
}

/// The per-call context: a handle on the shared state.
#[derive(Clone, Debug, Default)]
pub struct FaultCtx {
    /// The shared state.
    pub state: Arc<FaultState>,
    /// The upstream to reconnect (the same one every call).
    pub upstream: Arc<Upstream>,
}

/// Counts drops of a hung handler.
struct DropGuard(Arc<FaultState>);

impl Drop for DropGuard {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
        eprintln!("hang dropped");
    }
}

/// Fails with a transient error `fail_times` times for `key`, then succeeds.
#[mcp_tool(retry(attempts = 4, backoff = "1ms"), reconnect = upstream)]
pub async fn flaky(
    #[ctx] ctx: &FaultCtx,
    key: String,
    fail_times: u32,
) -> Result<String, UpstreamError> {
    {
        let mut runs = ctx
            .state
            .runs
            .lock()
            .map_err(|_| UpstreamError::Garbage("poisoned".into()))?;
        *runs.entry(key.clone()).or_default() += 1;
    }
    let mut left = ctx
        .state
        .failures_left
        .lock()
        .map_err(|_| UpstreamError::Garbage("poisoned".into()))?;
    let remaining = left.entry(key.clone()).or_insert(fail_times);
    if *remaining > 0 {
        *remaining -= 1;
        return Err(UpstreamError::ConnectionReset);
    }
    Ok(format!("ok after retries for {key}"))
}

/// Fails transiently on the first run for a `nonce`, then succeeds on the retry. The set
/// of pending nonces holds only calls in progress, so a soak test's memory stays flat.
#[mcp_tool(retry(attempts = 3, backoff = "1ms"))]
pub async fn blip(#[ctx] ctx: &FaultCtx, nonce: u64) -> Result<String, UpstreamError> {
    let mut pending = ctx
        .state
        .pending
        .lock()
        .map_err(|_| UpstreamError::Garbage("poisoned".into()))?;
    if pending.insert(nonce) {
        return Err(UpstreamError::ConnectionReset);
    }
    pending.remove(&nonce);
    Ok(format!("blip {nonce} recovered"))
}

/// Always fails transiently, without retries of its own; its circuit opens after 3.
#[mcp_tool(circuit(failures = 3, window = "10s", cooldown = "50ms"))]
pub async fn unstable(fail: bool) -> Result<String, UpstreamError> {
    if fail {
        Err(UpstreamError::ConnectionReset)
    } else {
        Ok("up".into())
    }
}

/// Hangs until cancelled or timed out; counts its drops.
#[mcp_tool]
pub async fn hang(#[ctx] ctx: &FaultCtx) -> String {
    let _guard = DropGuard(Arc::clone(&ctx.state));
    std::future::pending::<()>().await;
    unreachable!("a pending future never completes")
}

/// Hangs, but has a 50 ms deadline and two attempts.
#[mcp_tool(timeout = "50ms", retry(attempts = 2, backoff = "1ms"))]
pub async fn deadline(#[ctx] ctx: &FaultCtx) -> String {
    let _guard = DropGuard(Arc::clone(&ctx.state));
    std::future::pending::<()>().await;
    unreachable!("a pending future never completes")
}

/// Sleeps `ms` milliseconds, then answers.
#[mcp_tool]
pub async fn slow(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("slept {ms} ms")
}

/// Blocks the thread it runs on, as a handler calling a blocking driver would, until the
/// file at `path` exists or `max_ms` milliseconds have passed; says which.
#[mcp_tool]
pub async fn block_until(path: String, max_ms: u64) -> String {
    // A `max_ms` past what the clock can hold means no limit.
    let give_up_at = std::time::Instant::now().checked_add(Duration::from_millis(max_ms));
    while !std::path::Path::new(&path).exists() {
        if give_up_at.is_some_and(|at| std::time::Instant::now() >= at) {
            return "timed out".into();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    "seen".into()
}

/// Panics.
#[mcp_tool]
pub async fn explode(message: Option<String>) -> String {
    panic!("{}", message.unwrap_or_else(|| "boom".into()))
}

/// Returns the error named by `kind`: `rate_limited`, `not_found`, `unauthorized`,
/// `stale`, `fatal`, `timeout_io`, `garbage`.
#[mcp_tool]
pub async fn fail_with(kind: String) -> Result<String, UpstreamError> {
    Err(match kind.as_str() {
        "rate_limited" => UpstreamError::RateLimited,
        "not_found" => UpstreamError::NotFound("k-42".into()),
        "unauthorized" => UpstreamError::Unauthorized,
        "stale" => UpstreamError::Stale,
        "fatal" => UpstreamError::CredentialsRevoked,
        "timeout_io" => UpstreamError::Io(std::io::ErrorKind::TimedOut.into()),
        _ => UpstreamError::Garbage("password=hunter2".into()),
    })
}

/// Returns a boxed error; the runtime searches its chain for a classification.
#[mcp_tool]
pub async fn boxed_failure(
    transient: bool,
) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    if transient {
        Err(Box::new(UpstreamError::Io(
            std::io::ErrorKind::ConnectionRefused.into(),
        )))
    } else {
        Err("plain text failure".into())
    }
}

/// Prints to stdout (which must not reach the protocol stream) and answers.
#[mcp_tool]
pub async fn shout(text: String) -> String {
    println!("SHOUTING ON STDOUT: {text}");
    text.to_uppercase()
}

/// Echoes the text.
#[mcp_tool(read_only)]
pub async fn echo(text: String) -> String {
    text
}

/// Counts its runs under `label` and says which run this is: a call keyed by its
/// request's idempotency key (`_meta` or an `Idempotency-Key` header) replays instead.
#[mcp_tool(destructive)]
pub async fn tally(#[ctx] ctx: &FaultCtx, label: String) -> Result<String, UpstreamError> {
    let mut runs = ctx
        .state
        .runs
        .lock()
        .map_err(|_| UpstreamError::Garbage("poisoned".into()))?;
    let count = runs.entry(format!("tally:{label}")).or_default();
    *count += 1;
    Ok(format!("run {count} of {label}"))
}

/// Answers `megabytes` MiB of text: far over the server's output limit (1 MiB), which
/// cuts it.
#[mcp_tool(read_only)]
pub async fn flood(#[arg(max = 256)] megabytes: usize) -> String {
    "x".repeat(megabytes << 20)
}

/// The fault server over a fresh state.
pub fn server() -> Server<FaultCtx> {
    server_with(FaultCtx::default())
}

/// The fault server over the given state (tests keep a handle to read the counters).
pub fn server_with(ctx: FaultCtx) -> Server<FaultCtx> {
    builder(ctx).build()
}

/// The fault server's builder, for callers that add start-up checks.
pub fn builder(ctx: FaultCtx) -> fusion_runtime::ServerBuilder<FaultCtx> {
    Server::builder("faults", env!("CARGO_PKG_VERSION"))
        .context(move || ctx.clone())
        .classify::<UpstreamError>()
        .tool(flaky)
        .tool(blip)
        .tool(unstable)
        .tool(hang)
        .tool(deadline)
        .tool(slow)
        .tool(block_until)
        .tool(explode)
        .tool(fail_with)
        .tool(boxed_failure)
        .tool(shout)
        .tool(echo)
        .tool(flood)
        .tool(tally)
}
