//! Criterion: the cost of a task on Redis against one in memory (issue 33), through the
//! real HTTP transport: a server in this process serving Streamable HTTP without sessions
//! on a loopback port, and 2026-07-28 requests on one keep-alive connection.
//!
//! - `tasks/memory_create`, `tasks/redis_create`: `tools/call` of a task tool, until the
//!   answer with the task id (the record is stored, and the runner's lease taken, before
//!   the answer);
//! - `tasks/memory_first_poll`, `tasks/redis_first_poll`: the first `tasks/get` of a task
//!   just created.
//!
//! After the benches it prints the Redis round trips per task, as `redis-cli monitor` sees
//! the client commands (a script is one), for a create with its run and end, and for a poll.
//!
//! Starts a `redis-server` of its own (`FUSION_REDIS`, else `/usr/bin/redis-server`;
//! `scripts/redis-env` installs it); without one, the Redis cases are skipped with a note.
//!
//! Run: `cargo bench -p fusion-bench --bench tasks`.
#![allow(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::{net::SocketAddr, time::Duration};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use fusion_bench::{
    http_load::{Sender, answer_in, connect, post_with},
    redis_server::{Monitor, Redis},
};
use fusion_runtime::{
    HttpOptions,
    prelude::*,
    redis::RedisStore,
    tasks::{TaskStore, Tasking},
};
use serde_json::{Value, json};

/// Build report `n` (at once: the bench measures the task, not the work).
#[mcp_tool(read_only)]
async fn report(n: u64) -> String {
    format!("report {n}")
}

/// How many tasks the round trips are counted over.
const COUNTED: u64 = 200;

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-bench", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    })
}

async fn send(
    sender: &mut Sender,
    addr: SocketAddr,
    method: &str,
    name: &str,
    params: Value,
) -> Value {
    let mut params = params;
    params["_meta"] = meta();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", name),
    ];
    let (_, answer) = post_with(sender, addr, &headers, body)
        .await
        .unwrap_or_else(|error| panic!("{method}: {error}"));
    answer_in(&answer).unwrap_or_else(|| panic!("{method}: no answer in {answer:?}"))
}

async fn create(sender: &mut Sender, addr: SocketAddr, n: u64) -> String {
    let answer = send(
        sender,
        addr,
        "tools/call",
        "report",
        json!({"name": "report", "arguments": {"n": n}}),
    )
    .await;
    answer["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("not a task: {answer}"))
        .to_owned()
}

async fn poll(sender: &mut Sender, addr: SocketAddr, id: &str) -> Value {
    let answer = send(sender, addr, "tasks/get", id, json!({"taskId": id})).await;
    assert!(answer.get("result").is_some(), "{answer}");
    answer
}

/// Serves a server with the `report` task tool, and `store` when given, on a free loopback
/// port of this runtime; a connection to it.
fn serve(runtime: &tokio::runtime::Runtime, store: Option<RedisStore>) -> (SocketAddr, Sender) {
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    // Criterion makes hundreds of thousands of tasks: each is forgotten a moment after it
    // ends, so that the stores stay at their usual size (the first poll comes before).
    let mut builder = Server::builder("tasks-bench", "0")
        .task_tool(report, Tasking::optional())
        .task_ttl(Duration::from_millis(20));
    if let Some(store) = store {
        builder = builder.task_store(store);
    }
    let options = HttpOptions::default().port(port).stateless(true);
    runtime.spawn(builder.serve_http_with(options));
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let sender = runtime.block_on(async {
        for _ in 0..200 {
            if let Ok(sender) = connect(addr).await {
                return sender;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the bench's server did not listen on {addr}")
    });
    (addr, sender)
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut group = c.benchmark_group("tasks");
    let mut n = 0_u64;
    let (memory_addr, mut memory) = serve(&runtime, None);
    group.bench_function("memory_create", |b| {
        b.iter(|| {
            n += 1;
            runtime.block_on(create(&mut memory, memory_addr, n))
        });
    });
    group.bench_function("memory_first_poll", |b| {
        // Tasks made on a connection of their own: the timed poll has the other.
        let mut setup = runtime
            .block_on(connect(memory_addr))
            .expect("a second connection");
        b.iter_batched(
            || {
                n += 1;
                runtime.block_on(create(&mut setup, memory_addr, n))
            },
            |id| runtime.block_on(poll(&mut memory, memory_addr, &id)),
            BatchSize::PerIteration,
        );
    });
    let Some(redis) = Redis::start() else {
        eprintln!(
            "tasks bench: no redis-server (run scripts/redis-env); the Redis cases are skipped"
        );
        return;
    };
    let store = runtime
        .block_on(RedisStore::connect(&redis.url()))
        .expect("the bench's Redis");
    let lease = store.lease_duration();
    let (redis_addr, mut shared) = serve(&runtime, Some(store));
    group.bench_function("redis_create", |b| {
        b.iter(|| {
            n += 1;
            runtime.block_on(create(&mut shared, redis_addr, n))
        });
    });
    group.bench_function("redis_first_poll", |b| {
        // Tasks made on a connection of their own: the timed poll has the other.
        let mut setup = runtime
            .block_on(connect(redis_addr))
            .expect("a second connection");
        b.iter_batched(
            || {
                n += 1;
                runtime.block_on(create(&mut setup, redis_addr, n))
            },
            |id| runtime.block_on(poll(&mut shared, redis_addr, &id)),
            BatchSize::PerIteration,
        );
    });
    group.finish();
    let Some(monitor) = Monitor::start(&redis) else {
        eprintln!("tasks bench: no redis-cli; round trips not counted");
        return;
    };
    // Let the benches' last runners end, then count over tasks that start, end and are
    // polled while watched, each polled at once (it is forgotten 20 ms after it ends). A
    // poll is one `GET`; a create, its run and its end are the rest (a sweep of orphans,
    // every third of a lease, may fall in: the breakdown shows it).
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    monitor.clear();
    let mut setup = runtime.block_on(connect(redis_addr)).expect("a connection");
    for _ in 0..COUNTED {
        n += 1;
        let id = runtime.block_on(create(&mut setup, redis_addr, n));
        runtime.block_on(poll(&mut shared, redis_addr, &id));
    }
    runtime.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    let (commands, total) = monitor.client_commands();
    let polls = commands.get("GET").copied().unwrap_or(0);
    println!(
        "Redis round trips per task (client commands over {COUNTED} tasks, lease {lease:?}): create, run and end {:.2}; first poll {:.2}; by command {commands:?}",
        (total - polls) as f64 / COUNTED as f64,
        polls as f64 / COUNTED as f64,
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
