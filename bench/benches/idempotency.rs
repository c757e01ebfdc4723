//! Criterion: the cost of an idempotency key, in process through the [`Tester`] (the real
//! pipeline without a transport), against the same tool without a key:
//!
//! - `idempotency/unkeyed`: a tool without a key (no store involved);
//! - `idempotency/memory_first_run`: a keyed call with a new key each time, `MemoryStore`;
//! - `idempotency/redis_first_run`: the same on `RedisStore` (claim `SET NX PX`, then the
//!   result stored by a script: two Redis round trips, the second off the call's path);
//! - `idempotency/redis_replay`: a repeated key on `RedisStore` (the claim script finds the
//!   stored result: one round trip);
//! - `idempotency/redis_first_run_wait_1`: a first run on a `RedisStore` that waits for one
//!   replica to acknowledge the claim before the handler runs
//!   (`RedisStore::wait_for_replicas(1, ..)`, a replica of the bench's Redis on loopback):
//!   what safety across a failover costs.
//!
//! Starts a `redis-server` of its own on a free loopback port (`FUSION_REDIS` or
//! `redis-server` on `PATH` or `/usr/bin/redis-server`; `scripts/redis-env` installs it);
//! without one, the Redis cases are skipped with a note. After the benches it prints the
//! Redis commands per call, from Redis's own `INFO commandstats`.
//!
//! Run: `cargo bench -p fusion-bench --bench idempotency`.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use criterion::{Criterion, criterion_group, criterion_main};
use fusion_bench::redis_server::Redis;
use fusion_runtime::{idempotency::MemoryStore, prelude::*, redis::RedisStore, testing::Tester};
use serde_json::json;

/// Record an order (does nothing: the bench measures the key's cost).
#[mcp_tool(idempotency_key = "order_id")]
async fn keyed(order_id: String) -> String {
    order_id
}

/// The same without a key.
#[mcp_tool]
async fn unkeyed(order_id: String) -> String {
    order_id
}

static NEXT: AtomicU64 = AtomicU64::new(0);

fn fresh_key() -> serde_json::Value {
    json!({"order_id": format!("order-{}", NEXT.fetch_add(1, Ordering::Relaxed))})
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let plain = Tester::new(Server::builder("bench", "0").tool(unkeyed).build());
    let memory = Tester::new(
        Server::builder("bench", "0")
            .idempotency_store(MemoryStore::new())
            .tool(keyed)
            .build(),
    );
    let mut group = c.benchmark_group("idempotency");
    group.bench_function("unkeyed", |b| {
        b.iter(|| runtime.block_on(plain.call("unkeyed", fresh_key())));
    });
    group.bench_function("memory_first_run", |b| {
        b.iter(|| runtime.block_on(memory.call("keyed", fresh_key())));
    });
    let Some(redis) = Redis::start() else {
        eprintln!(
            "idempotency bench: no redis-server (run scripts/redis-env); the Redis cases are skipped"
        );
        return;
    };
    let store = runtime
        .block_on(RedisStore::connect(&redis.url()))
        .expect("the bench's Redis");
    let shared = Tester::new(
        Server::builder("bench", "0")
            .idempotency_store(store)
            .tool(keyed)
            .build(),
    );
    let before = redis.commands();
    let mut first_runs = 0_u64;
    group.bench_function("redis_first_run", |b| {
        b.iter(|| {
            first_runs += 1;
            runtime.block_on(shared.call("keyed", fresh_key()))
        });
    });
    // The results are stored by background tasks: let them finish before counting.
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
    let after_first = redis.commands();
    let repeated = json!({"order_id": "repeated"});
    runtime.block_on(shared.call("keyed", repeated.clone()));
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    let before_replays = redis.commands();
    let mut replays = 0_u64;
    group.bench_function("redis_replay", |b| {
        b.iter(|| {
            replays += 1;
            runtime.block_on(shared.call("keyed", repeated.clone()))
        });
    });
    let after_replays = redis.commands();
    match Redis::replica_of(&redis) {
        Some(replica) => {
            let waiting = runtime
                .block_on(RedisStore::connect(&redis.url()))
                .expect("the bench's Redis")
                .wait_for_replicas(1, Duration::from_millis(500));
            let replicated = Tester::new(
                Server::builder("bench", "0")
                    .idempotency_store(waiting)
                    .tool(keyed)
                    .build(),
            );
            group.bench_function("redis_first_run_wait_1", |b| {
                b.iter(|| runtime.block_on(replicated.call("keyed", fresh_key())));
            });
            drop(replica);
        }
        None => eprintln!(
            "idempotency bench: the replica did not sync; redis_first_run_wait_1 is skipped"
        ),
    }
    group.finish();
    if let (Some(before), Some(after_first), Some(before_replays), Some(after_replays)) =
        (before, after_first, before_replays, after_replays)
    {
        println!(
            "Redis commands per call: first run {:.2}, replay {:.2} (INFO commandstats over {first_runs} and {replays} calls)",
            (after_first - before) as f64 / first_runs.max(1) as f64,
            (after_replays - before_replays) as f64 / replays.max(1) as f64,
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
