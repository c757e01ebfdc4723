//! A replica of a fleet that shares state on Redis: idempotency keys run once across every
//! replica, a rate limit holds for the fleet as a whole, tasks live on Redis (any replica
//! answers for any task, and the tasks of a replica that dies are taken over), and cached
//! answers are shared (one run for a burst across the fleet; a write invalidates them on
//! every replica; while Redis is away, calls run uncached).
//!
//! ```text
//! cargo run --example fleet -- --http 8001 --redis redis://127.0.0.1:6379 --rate 20
//! cargo run --example fleet -- --http 8002 --redis redis://127.0.0.1:6379 --rate 20
//! ```
//!
//! Tools: `place_order` (destructive, one run per `order_id`; it appends one line per run
//! to the `--effects FILE`, so that a test counts the orders actually placed, between its
//! `delay_ms` and its `after_ms`; a replica that dies after the line has placed the order
//! without answering: later calls with the key get an unknown outcome, never a second
//! order), `record_refund` (idempotent, one run per `refund_id`: a refund line with the
//! run's fencing token; safe to repeat, so a refund whose replica died runs again elsewhere
//! under a newer token), `ship_order`
//! (destructive, no key: every run ships again, one line each), `sales_report` (read-only
//! and slow), `approve_refund` (asks the user, as a task waits for the answer), `ping` (limited to `--rate` calls a second across the fleet, burst 1) and
//! `echo` (no key, no limit), and `deposit` (one at a time per `account` across the fleet:
//! it appends a `deposit-start` and a `deposit-end` line around its `hold_ms`, so that a
//! test sees whether two ever overlapped). `place_order`, `record_refund`, `ship_order` and
//! `sales_report` run as tasks for clients that declare the tasks extension: a killed
//! replica's reports and refunds are run again elsewhere (safe to repeat), its orders and
//! shipments end `failed` with an unknown outcome (a key does not make a destructive tool
//! safe to repeat).
//! `price` (read-only, cached for 30 s and served stale for 10 minutes more on
//! `.cache_store(redis)`: a burst of identical calls across the fleet runs it once; it
//! appends a `price-run SYMBOL` line per run, holds for its `hold_ms`, and fails with a
//! transient error on a replica started with `--price-feed-down`), `quick_price` (the
//! same, fresh for one second only: a `quick-price-run` line) and `set_price` (writes a
//! `set-price SYMBOL PRICE` line, the price book both read, and invalidates both caches on
//! every replica). `restock` tells the subscribers of `stock://ITEM` (the resources
//! `stock://apples` and `stock://pears`) that it changed, on every replica: a client
//! subscribed on one replica hears of a restock made through another, once
//! (`.change_bus(redis)`). `reconcile` (read-only, slow, an ordinary tool with
//! `task_after = "1s"`): a call still running after a second becomes a task for a client
//! that declared the tasks extension, taken over like any other when its replica stops.
//! `--lease-ms N` shortens the leases of claims and tasks (10 s by default), `--lock-lease-ms N`
//! the lease of `deposit`'s lock (30 s by default); `--grace-ms N`
//! sets the shutdown grace; `--state-key HEX` (64 hex digits) is the key the fleet seals
//! request states with, and `--previous-state-key HEX` one it still opens (a key being
//! rolled); `--stateless` serves without sessions; `--redis-sentinel URLS` (with
//! `--redis-master NAME`) finds the primary through Sentinel in place of `--redis URL`, and
//! `--wait-replicas N` makes claims, results and task writes wait for N Redis replicas. `--http 0` picks a free
//! port and prints the URL.

use std::{io::Write as _, path::PathBuf, process::ExitCode, time::Duration};

use fusion_runtime::{
    Call, HttpOptions, call::ClientRequestError, prelude::*, redis::RedisStore, serde_json::json,
    tasks::Tasking,
};

/// Where each run of `place_order` leaves its mark (the effects file is also the price
/// book: `set_price` appends to it, `price` reads its last word on a symbol).
struct Ctx {
    effects: Option<PathBuf>,
    /// `--price-feed-down`: every run of `price` fails, as an upstream that is down.
    feed_down: bool,
    /// Tells the subscribers of the whole fleet of a change (`restock`).
    notifier: fusion_runtime::changes::Notifier,
}

impl Ctx {
    /// Appends `effect` and this replica's pid as one line to the effects file, if any.
    fn record(&self, effect: &str) -> std::io::Result<()> {
        if let Some(path) = &self.effects {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)?;
            // One write of the whole line: replicas append to the same file at once, and
            // `writeln!` would write it in pieces that theirs could come between.
            file.write_all(format!("{effect} {}\n", std::process::id()).as_bytes())?;
        }
        Ok(())
    }
}

/// Errors of `place_order`.
#[derive(Debug, thiserror::Error)]
enum OrderError {
    #[error("cannot record the order: {0}")]
    Record(#[from] std::io::Error),
}

/// Place an order; one per `order_id`, whichever replica serves the call.
#[mcp_tool(destructive, idempotency_key = "order_id")]
async fn place_order(
    #[ctx] ctx: &Ctx,
    /// The client's id of this order: calls with the same id place it once.
    order_id: String,
    /// What to order.
    item: String,
    /// How long placing it takes before the order is recorded, in milliseconds.
    delay_ms: Option<u32>,
    /// How long it goes on after the order is recorded, before it answers, in
    /// milliseconds: a replica that dies then has placed the order without saying so.
    after_ms: Option<u32>,
) -> Result<String, OrderError> {
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    ctx.record(&format!("{order_id} {item}"))?;
    tokio::time::sleep(Duration::from_millis(u64::from(after_ms.unwrap_or(0)))).await;
    Ok(format!(
        "placed {item} as {order_id} by replica {}",
        std::process::id()
    ))
}

/// Record a refund once per `refund_id`; safe to repeat (the refund book keeps one entry a
/// refund), so a refund whose replica died is recorded again elsewhere under a newer
/// fencing token.
#[mcp_tool(idempotent, idempotency_key = "refund_id")]
async fn record_refund(
    #[ctx] ctx: &Ctx,
    #[call] call: &Call,
    /// The client's id of this refund.
    refund_id: String,
    /// How long recording it takes, in milliseconds.
    delay_ms: Option<u32>,
) -> Result<String, OrderError> {
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    let fence = call.fencing_token().unwrap_or(0);
    ctx.record(&format!("refund {refund_id} fence={fence}"))?;
    Ok(format!(
        "refund {refund_id} recorded under fence {fence} by replica {}",
        std::process::id()
    ))
}

/// Ship an order; every call ships it again (no key), so a task of it is never run twice.
#[mcp_tool(destructive)]
async fn ship_order(
    #[ctx] ctx: &Ctx,
    /// The order to ship.
    order_id: String,
    /// How long shipping takes, in milliseconds.
    delay_ms: Option<u32>,
) -> Result<String, OrderError> {
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    ctx.record(&format!("ship {order_id}"))?;
    Ok(format!(
        "shipped {order_id} by replica {}",
        std::process::id()
    ))
}

/// Build a sales report (slow; safe to build again).
#[mcp_tool(read_only)]
async fn sales_report(
    /// Which report.
    report_id: String,
    /// How long building it takes, in milliseconds.
    delay_ms: Option<u32>,
) -> String {
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    format!(
        "report {report_id}: all good, by replica {}",
        std::process::id()
    )
}

/// Reconcile a ledger (slow; safe to run again). A plain tool: a call still running after
/// a second becomes a task for a client that declared the tasks extension.
#[mcp_tool(read_only, task_after = "1s")]
async fn reconcile(
    /// Which ledger.
    ledger: String,
    /// How long reconciling it takes, in milliseconds.
    delay_ms: Option<u32>,
) -> String {
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    format!(
        "ledger {ledger} reconciled by replica {}",
        std::process::id()
    )
}

/// Ask the user to approve a refund, then say what they decided. As a task it waits for the
/// answer, which may be sent to any replica (`tasks/update`); otherwise it answers
/// `input_required`, and the client calls again with the answer and the request state.
#[mcp_tool(idempotent)]
async fn approve_refund(
    #[call] call: &Call,
    /// The order to refund.
    order_id: String,
) -> Result<String, ClientRequestError> {
    let form = json!({
        "type": "object",
        "properties": {"approve": {"type": "boolean"}},
        "required": ["approve"]
    });
    let answer = call
        .ask("approval")
        .elicit(&format!("Refund order {order_id}?"), form)
        .await?;
    Ok(format!(
        "refund {order_id}: approve={} by replica {}",
        answer.content["approve"],
        std::process::id()
    ))
}

/// Deposit into an account: one deposit at a time per account, whichever replica serves it.
#[mcp_tool(serialize = "account")]
async fn deposit(
    #[ctx] ctx: &Ctx,
    /// The account to credit: deposits to one account never overlap.
    account: String,
    /// How much to credit.
    amount: i64,
    /// How long the deposit holds its account, in milliseconds.
    hold_ms: Option<u32>,
) -> Result<String, OrderError> {
    ctx.record(&format!("deposit-start {account} {amount}"))?;
    tokio::time::sleep(Duration::from_millis(u64::from(hold_ms.unwrap_or(0)))).await;
    ctx.record(&format!("deposit-end {account} {amount}"))?;
    Ok(format!(
        "deposited {amount} to {account} by replica {}",
        std::process::id()
    ))
}

/// Errors of `price`.
#[derive(Debug, thiserror::Error, Classify)]
enum PriceError {
    #[error("the price feed is down")]
    #[transient]
    FeedDown,
    #[error("cannot read the price book: {0}")]
    #[internal]
    Book(#[from] std::io::Error),
}

/// The price book's last word on `symbol`: the newest `set-price` line, else 100.00.
fn booked_price(ctx: &Ctx, symbol: &str) -> std::io::Result<String> {
    let Some(path) = &ctx.effects else {
        return Ok("100.00".to_owned());
    };
    let book = match std::fs::read_to_string(path) {
        Ok(book) => book,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error),
    };
    Ok(book
        .lines()
        .rev()
        .find_map(|line| {
            let mut words = line.split(' ');
            (words.next()? == "set-price" && words.next()? == symbol)
                .then(|| words.next().map(str::to_owned))?
        })
        .unwrap_or_else(|| "100.00".to_owned()))
}

/// One run of the price upstream: its mark (`run` and the symbol), its hold, its answer.
async fn quote(
    ctx: &Ctx,
    run: &str,
    symbol: &str,
    hold_ms: Option<u32>,
) -> Result<String, PriceError> {
    ctx.record(&format!("{run} {symbol}"))?;
    tokio::time::sleep(Duration::from_millis(u64::from(hold_ms.unwrap_or(0)))).await;
    if ctx.feed_down {
        return Err(PriceError::FeedDown);
    }
    let booked = booked_price(ctx, symbol)?;
    Ok(format!(
        "{symbol}: {booked} by replica {}",
        std::process::id()
    ))
}

/// The price of a symbol; the same for every caller, so one run answers a burst of
/// identical calls across the fleet, and the answer is served for 30 s (stale for 10 min
/// more while the feed is down).
#[mcp_tool(
    read_only,
    cache = "30s",
    stale_if_error = "10m",
    cache_scope = "public"
)]
async fn price(
    #[ctx] ctx: &Ctx,
    /// The symbol to price.
    symbol: String,
    /// How long the feed takes to answer, in milliseconds.
    hold_ms: Option<u32>,
) -> Result<String, PriceError> {
    quote(ctx, "price-run", &symbol, hold_ms).await
}

/// The price of a symbol, fresh for one second only (stale for 10 min more while the feed
/// is down).
#[mcp_tool(
    read_only,
    cache = "1s",
    stale_if_error = "10m",
    cache_scope = "public"
)]
async fn quick_price(
    #[ctx] ctx: &Ctx,
    /// The symbol to price.
    symbol: String,
) -> Result<String, PriceError> {
    quote(ctx, "quick-price-run", &symbol, None).await
}

/// Set the price of a symbol; every replica's cached prices are dropped.
#[mcp_tool(idempotent, invalidates = ["price", "quick_price"])]
async fn set_price(
    #[ctx] ctx: &Ctx,
    /// The symbol to price.
    symbol: String,
    /// Its new price, as written (spaces become `_`).
    new_price: String,
) -> Result<String, OrderError> {
    let new_price = new_price.split_whitespace().collect::<Vec<_>>().join("_");
    ctx.record(&format!("set-price {symbol} {new_price}"))?;
    Ok(format!("{symbol} set to {new_price}"))
}

/// Restock an item: every client subscribed to `stock://ITEM`, on any replica, is told.
#[mcp_tool(idempotent)]
async fn restock(
    #[ctx] ctx: &Ctx,
    /// The item restocked: `apples` or `pears`.
    item: String,
    /// How many deliveries came in at once, each a change (1 by default).
    #[arg(min = 1, max = 100_000)]
    times: Option<u32>,
) -> String {
    let uri = format!("stock://{item}");
    let times = times.unwrap_or(1);
    for _ in 0..times {
        ctx.notifier.resource_updated(&uri).await;
    }
    format!("restocked {item} {times} times")
}

/// Answer `pong`; limited across the fleet.
#[mcp_tool(read_only)]
async fn ping() -> String {
    "pong".to_owned()
}

/// Echo the text back.
#[mcp_tool(read_only)]
async fn echo(text: String) -> String {
    text
}

/// The value after `flag`, parsed.
fn flag<T: std::str::FromStr>(args: &[String], flag: &str) -> Result<Option<T>, String> {
    match args.iter().position(|arg| arg == flag) {
        None => Ok(None),
        Some(at) => args
            .get(at + 1)
            .and_then(|value| value.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} takes a value")),
    }
}

/// Where the fleet's Redis is: one URL, or the Sentinels that name the primary.
enum RedisTarget {
    One(String),
    Sentinel {
        sentinels: Vec<String>,
        master: String,
    },
}

impl std::fmt::Display for RedisTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::One(url) => f.write_str(url),
            Self::Sentinel { sentinels, master } => {
                write!(f, "{master} (Sentinels {})", sentinels.join(", "))
            }
        }
    }
}

/// `--redis URL`, or `--redis-sentinel URLS` with `--redis-master NAME`.
fn redis_target(args: &[String]) -> Result<RedisTarget, String> {
    if let Some(sentinels) = flag::<String>(args, "--redis-sentinel")? {
        let master =
            flag::<String>(args, "--redis-master")?.unwrap_or_else(|| "mymaster".to_owned());
        let sentinels = sentinels.split(',').map(str::to_owned).collect();
        return Ok(RedisTarget::Sentinel { sentinels, master });
    }
    flag::<String>(args, "--redis")?
        .map(RedisTarget::One)
        .ok_or_else(|| "--redis URL (or --redis-sentinel URLS) is required".to_owned())
}

/// The 32-byte key after `flag`, written as 64 hex digits.
fn state_key(args: &[String], flag: &str) -> Result<Option<[u8; 32]>, String> {
    let Some(hex) = self::flag::<String>(args, flag)? else {
        return Ok(None);
    };
    let mut key = [0_u8; 32];
    if hex.len() != 64 || !hex.is_ascii() {
        return Err(format!("{flag} takes 64 hex digits"));
    }
    for (byte, pair) in key.iter_mut().zip(hex.as_bytes().chunks(2)) {
        let pair = std::str::from_utf8(pair).map_err(|_| format!("{flag} takes 64 hex digits"))?;
        *byte = u8::from_str_radix(pair, 16).map_err(|_| format!("{flag} takes 64 hex digits"))?;
    }
    Ok(Some(key))
}

/// `--require-surface`: a digest as given, or the text of the lockfile it names.
fn surface_pin(args: &[String]) -> Result<Option<String>, String> {
    let Some(pin) = flag::<String>(args, "--require-surface")? else {
        return Ok(None);
    };
    if std::path::Path::new(&pin).is_file() {
        return std::fs::read_to_string(&pin)
            .map(Some)
            .map_err(|error| format!("--require-surface {pin}: {error}"));
    }
    Ok(Some(pin))
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "fleet",
    about: "a replica of a fleet sharing idempotency keys, a rate limit, locks, tasks and cached answers on Redis",
    flags: &[
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT (required; 0: a free port)",
        ),
        (
            "--redis",
            "URL",
            "the Redis to share state on (required, unless --redis-sentinel)",
        ),
        (
            "--redis-sentinel",
            "URLS",
            "the Sentinels (comma-separated URLs) that name the primary to share state on",
        ),
        (
            "--redis-master",
            "NAME",
            "the primary's name at the Sentinels (default mymaster)",
        ),
        (
            "--wait-replicas",
            "N",
            "claims, results and task writes wait for N Redis replicas (WAIT; at most 500 ms)",
        ),
        (
            "--lease-ms",
            "MS",
            "the lease of an idempotency claim or a task (default 10000)",
        ),
        (
            "--task-ttl-ms",
            "MS",
            "how long a finished task is kept after its last read (default 600000)",
        ),
        (
            "--lock-lease-ms",
            "MS",
            "the lease of a `deposit` lock on Redis (default 30000)",
        ),
        (
            "--state-key",
            "HEX",
            "the request-state key, 64 hex digits (default: random per process)",
        ),
        (
            "--previous-state-key",
            "HEX",
            "a request-state key still accepted, while a new --state-key rolls out",
        ),
        (
            "--grace-ms",
            "MS",
            "how long calls and tasks may finish after SIGTERM (default 10000)",
        ),
        (
            "--rate",
            "N",
            "calls a second to `ping`, across the fleet (default 20)",
        ),
        (
            "--effects",
            "FILE",
            "append one line per order placed (or price looked up or set) to FILE",
        ),
        (
            "--price-feed-down",
            "",
            "every run of `price` and `quick_price` fails with a transient error",
        ),
        ("--stateless", "", "serve without sessions"),
        (
            "--timeout-ms",
            "MS",
            "the deadline of every call (default 300000): part of the tool surface, so replicas given another value serve another contract",
        ),
        (
            "--require-surface",
            "PIN",
            "refuse to start (exit 78) unless the tool surface is PIN: a digest, or the path of a lockfile",
        ),
    ],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let args: Vec<String> = std::env::args().collect();
    let parsed = (|| {
        Ok::<_, String>((
            flag::<u16>(&args, "--http")?.ok_or("--http PORT is required")?,
            redis_target(&args)?,
            flag::<u64>(&args, "--lease-ms")?,
            flag::<f64>(&args, "--rate")?.unwrap_or(20.0),
            flag::<PathBuf>(&args, "--effects")?,
            flag::<u64>(&args, "--grace-ms")?,
            state_key(&args, "--state-key")?,
            state_key(&args, "--previous-state-key")?,
            flag::<u64>(&args, "--timeout-ms")?,
            surface_pin(&args)?,
            flag::<u64>(&args, "--lock-lease-ms")?,
            flag::<u64>(&args, "--task-ttl-ms")?,
        ))
    })();
    let (
        port,
        url,
        lease_ms,
        rate,
        effects,
        grace_ms,
        key,
        previous_key,
        timeout_ms,
        pin,
        lock_lease_ms,
        task_ttl_ms,
    ) = match parsed {
        Ok(parsed) => parsed,
        Err(problem) => {
            eprintln!("fleet: {problem}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    let connected = match &url {
        RedisTarget::One(url) => RedisStore::connect(url).await,
        RedisTarget::Sentinel { sentinels, master } => {
            let sentinels: Vec<&str> = sentinels.iter().map(String::as_str).collect();
            RedisStore::connect_sentinel(&sentinels, master).await
        }
    };
    let mut redis = match connected {
        Ok(redis) => redis,
        Err(error) => {
            eprintln!("fleet: cannot reach Redis at {url}: {error}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    match flag::<usize>(&args, "--wait-replicas") {
        Ok(Some(replicas)) => {
            redis = redis.wait_for_replicas(replicas, Duration::from_millis(500));
        }
        Ok(None) => {}
        Err(problem) => {
            eprintln!("fleet: {problem}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    }
    if let Some(lease_ms) = lease_ms {
        redis = redis.lease(Duration::from_millis(lease_ms));
    }
    if let Some(lock_lease_ms) = lock_lease_ms {
        redis = redis.lock_lease(Duration::from_millis(lock_lease_ms));
    }
    let mut options = HttpOptions::default()
        .port(port)
        .stateless(args.iter().any(|arg| arg == "--stateless"));
    if let Some(grace_ms) = grace_ms {
        options = options.shutdown_grace(Duration::from_millis(grace_ms));
    }
    let feed_down = args.iter().any(|arg| arg == "--price-feed-down");
    let mut builder = Server::builder("fleet", "1.0.0");
    if let Some(timeout_ms) = timeout_ms {
        builder = builder.timeout(Duration::from_millis(timeout_ms));
    }
    if let Some(ttl_ms) = task_ttl_ms {
        builder = builder.task_ttl(Duration::from_millis(ttl_ms));
    }
    // A fleet pins the surface it attested: a replica built or configured otherwise
    // stops at start, naming both digests, instead of serving next to its peers.
    if let Some(pin) = pin {
        builder = builder.require_surface(pin);
    }
    builder = match (key, previous_key) {
        (Some(key), Some(previous)) => builder.request_state_keys(key, [previous]),
        (Some(key), None) => builder.request_state_key(key),
        (None, _) => builder,
    };
    let notifier = builder.notifier();
    builder
        .context(move || Ctx {
            effects: effects.clone(),
            feed_down,
            notifier: notifier.clone(),
        })
        .task_tool(place_order, Tasking::optional())
        .task_tool(ship_order, Tasking::optional())
        .task_tool(sales_report, Tasking::optional())
        .task_tool(approve_refund, Tasking::optional())
        .task_tool(record_refund, Tasking::optional())
        .tool(ping)
        .tool(echo)
        .tool(deposit)
        .tool(price)
        .tool(quick_price)
        .tool(set_price)
        .tool(restock)
        .tool(reconcile)
        .resource("stock://apples", "apples", "text/plain", || async {
            "in stock"
        })
        .resource("stock://pears", "pears", "text/plain", || async {
            "in stock"
        })
        .tool_middleware("ping", redis.rate_limit(rate, 1))
        .task_store(redis.clone())
        .lock_store(redis.clone())
        .cache_store(redis.clone())
        .change_bus(redis.clone())
        .idempotency_store(redis)
        .serve_http_with(options)
        .await
}
