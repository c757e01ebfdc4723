//! Criterion: what `#[mcp_tool(cache = "..")]` saves and costs, in process through the
//! [`Tester`] (the real pipeline without a transport). The handler does 50 µs of work (a
//! spin: tokio's sleep cannot wait less than a millisecond), a stand-in for a fast
//! upstream.
//!
//! - `cache/uncached`: the uncached twin, every call runs the handler;
//! - `cache/memory_hit`: a cached tool answered from `MemoryCacheStore`;
//! - `cache/memory_miss`: a cached tool with new arguments each call (look up, run, store);
//! - `cache/redis_hit`: a hit on `RedisStore` (one script: the generation and the entry);
//! - `cache/redis_miss`: a miss on `RedisStore` (look up, the fleet's fill lock, run,
//!   store, release: four round trips, the last off the call's path).
//!
//! Starts a `redis-server` of its own on a free loopback port (`FUSION_REDIS` or
//! `/usr/bin/redis-server`; `scripts/redis-env` installs it); without one, the Redis cases
//! are skipped with a note. After the benches it prints the Redis round trips per hit and
//! per miss, as `redis-cli monitor` sees them (a script is one).
//!
//! Run: `cargo bench -p fusion-bench --bench cache`.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use criterion::{Criterion, criterion_group, criterion_main};
use fusion_bench::redis_server::{Monitor, Redis};
use fusion_runtime::{cache::MemoryCacheStore, prelude::*, redis::RedisStore, testing::Tester};
use serde_json::json;

/// How long the handler works.
const WORK: Duration = Duration::from_micros(50);

/// The handler's work: a spin of [`WORK`].
fn work(symbol: &str) -> String {
    let started = Instant::now();
    let mut spins = 0_u64;
    while started.elapsed() < WORK {
        spins = std::hint::black_box(spins + 1);
    }
    format!("{symbol}: 42.00")
}

/// The price of a symbol, cached.
#[mcp_tool(read_only, cache = "60m", cache_scope = "public")]
async fn cached(symbol: String) -> String {
    work(&symbol)
}

/// The same, uncached.
#[mcp_tool(read_only)]
async fn uncached(symbol: String) -> String {
    work(&symbol)
}

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Arguments never used before: a miss.
fn fresh() -> serde_json::Value {
    json!({"symbol": format!("S{}", NEXT.fetch_add(1, Ordering::Relaxed))})
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let server = |store: Option<RedisStore>| {
        let builder = Server::builder("bench", "0").tool(cached).tool(uncached);
        let builder = match store {
            Some(store) => builder.cache_store(store),
            None => builder.cache_store(MemoryCacheStore::new(64 * 1024 * 1024)),
        };
        Tester::new(builder.build())
    };
    let same = json!({"symbol": "ACME"});
    let memory = server(None);
    runtime.block_on(memory.call("cached", same.clone()));
    let mut group = c.benchmark_group("cache");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("uncached", |b| {
        b.iter(|| runtime.block_on(memory.call("uncached", same.clone())));
    });
    group.bench_function("memory_hit", |b| {
        b.iter(|| runtime.block_on(memory.call("cached", same.clone())));
    });
    group.bench_function("memory_miss", |b| {
        b.iter(|| runtime.block_on(memory.call("cached", fresh())));
    });
    let Some(redis) = Redis::start() else {
        eprintln!(
            "cache bench: no redis-server (run scripts/redis-env); the Redis cases are skipped"
        );
        return;
    };
    let store = runtime
        .block_on(RedisStore::connect(&redis.url()))
        .expect("the bench's Redis");
    let shared = server(Some(store));
    runtime.block_on(shared.call("cached", same.clone()));
    group.bench_function("redis_hit", |b| {
        b.iter(|| runtime.block_on(shared.call("cached", same.clone())));
    });
    group.bench_function("redis_miss", |b| {
        b.iter(|| runtime.block_on(shared.call("cached", fresh())));
    });
    group.finish();
    // Round trips per call, counted apart from the timed runs (MONITOR slows Redis down).
    let Some(monitor) = Monitor::start(&redis) else {
        return;
    };
    const CALLS: u64 = 100;
    let counted = |what: &str, args: &dyn Fn() -> serde_json::Value| {
        // The fill locks are released by background tasks: let them finish first.
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
        monitor.clear();
        for _ in 0..CALLS {
            runtime.block_on(shared.call("cached", args()));
        }
        runtime.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
        let (by_name, total) = monitor.client_commands();
        println!(
            "Redis round trips per {what}: {:.2} ({by_name:?} over {CALLS} calls)",
            total as f64 / CALLS as f64
        );
    };
    counted("hit", &|| same.clone());
    counted("miss", &fresh);
}

criterion_group!(benches, bench);
criterion_main!(benches);
