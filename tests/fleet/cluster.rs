//! `RedisStore` on the topologies Redis is run in besides one server (issue 55, items 4
//! and 5), with processes of the test's own:
//!
//! - on a Redis Cluster of three primaries (`RedisStore::connect_cluster`), every script of
//!   the store runs, its keys spread over the three nodes: locks (taken, waited for across
//!   two stores, renewed, released), the cache (get, put, fill, its lock released,
//!   invalidate), the fleet's rate limit, an idempotency claim completed and one released,
//!   a task inserted, signalled and ended; a `PUBLISH` on any node reaches the task signals'
//!   subscription, which is on one node;
//! - under Sentinel (`RedisStore::connect_sentinel`), the primary SIGKILLed: commands fail
//!   (never taking more than about a second) until a replica is promoted, then succeed on
//!   it, with what was written before, and the task signals' subscription follows;
//! - a persistent Redis (`appendonly yes`, `appendfsync always`) keeps the cache's
//!   entries across a SIGKILL and a restart, and the store reconnects to it.
//!
//! Needs `redis-server` and `redis-cli` (`scripts/redis-env`); without them the tests skip
//! loudly, except under `CI=true`, where they fail.

use crate::support;

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use fusion_runtime::{
    Server,
    cache::{CacheStore, Fill},
    idempotency::{Claim, ClaimRequest, IdempotencyStore},
    lock::LockStore,
    prelude::*,
    redis::RedisStore,
    tasks::{TaskRecord, TaskSignal, TaskStore},
    testing::Tester,
};
use rmcp::model::TaskStatus;
use serde_json::json;
use support::{
    redis_cluster::RedisCluster, redis_sentinel::RedisSentinel, redis_server::RedisServer,
};

/// The longest any one step may take before the test fails.
const STEP: Duration = Duration::from_secs(10);

/// How long a cached entry is kept in these tests.
const KEEP: Duration = Duration::from_secs(60);

/// Cache tools whose keys (`{<tool>}`-tagged) land one on each node of a three-primary
/// cluster (slots 0-5460, 5461-10922, 10923-16383).
const CACHE_TOOLS: [&str; 3] = ["quote", "weather", "users"];

/// Lock keys whose Redis keys land one on each node.
const LOCK_KEYS: [&str; 3] = ["d", "a", "bob"];

/// redis-server, once redis-cli is there too; `None` (a loud skip, a failure under
/// `CI=true`) without either.
fn redis_tools() -> Option<std::path::PathBuf> {
    let server = support::redis_server()?;
    support::redis_cli()?;
    Some(server)
}

async fn cluster_store(cluster: &RedisCluster) -> RedisStore {
    let urls = cluster.urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    tokio::time::timeout(STEP, RedisStore::connect_cluster(&urls))
        .await
        .expect("connect_cluster in time")
        .expect("the test's cluster")
}

/// How many nodes hold a key that `matches`.
fn nodes_holding(cluster: &RedisCluster, matches: impl Fn(&str) -> bool) -> usize {
    cluster
        .keys_by_node()
        .iter()
        .filter(|keys| keys.iter().any(|key| matches(key)))
        .count()
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, future)
        .await
        .unwrap_or_else(|_| panic!("{what} took over {STEP:?}"))
}

#[tokio::test]
async fn locks_on_a_cluster_are_taken_renewed_and_released_on_every_node() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let cluster = RedisCluster::start(&binary);
    const LEASE: Duration = Duration::from_millis(600);
    // Two stores: two replicas of a fleet, each with its own local queue.
    let first = cluster_store(&cluster).await.lock_lease(LEASE);
    let second = cluster_store(&cluster).await.lock_lease(LEASE);

    let mut guards = Vec::new();
    for key in LOCK_KEYS {
        guards.push(
            within("a free lock", LockStore::lock(&first, key))
                .await
                .expect("taken"),
        );
    }
    assert_eq!(
        nodes_holding(&cluster, |key| key.starts_with("fusion:lock:")),
        3,
        "the locks are on the three nodes: {:?}",
        cluster.keys_by_node()
    );
    // Held over a lease: renewed (every third of it), never lost.
    let mut held = guards.remove(0);
    tokio::select! {
        () = held.lost() => panic!("a lock renewed on the cluster was lost"),
        () = tokio::time::sleep(LEASE * 2) => {}
    }
    // The other store waits for it while it is held, and gets it once released.
    let waiting = {
        let second = second.clone();
        tokio::spawn(async move {
            LockStore::lock(&second, LOCK_KEYS[0])
                .await
                .map(|_guard| ())
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the second store waits for the key");
    drop(held);
    within("the released lock", waiting)
        .await
        .expect("its task")
        .expect("taken after the release");
    drop(guards);
    // Every release reaches its node.
    let deadline = Instant::now() + STEP;
    while nodes_holding(&cluster, |key| key.starts_with("fusion:lock:")) > 0 {
        assert!(
            Instant::now() < deadline,
            "locks left: {:?}",
            cluster.keys_by_node()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_cache_on_a_cluster_keeps_a_tools_keys_in_one_slot() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let cluster = RedisCluster::start(&binary);
    let store = cluster_store(&cluster).await;
    let other = cluster_store(&cluster).await;
    for tool in CACHE_TOOLS {
        // GET and PUT: the generation and the entry in one script each.
        let lookup = within("get", CacheStore::get(&store, tool, "k", KEEP))
            .await
            .expect("get");
        assert!(lookup.entry.is_none(), "{tool}");
        assert!(
            within(
                "put",
                CacheStore::put(
                    &store,
                    tool,
                    "k",
                    json!({ "tool": tool }),
                    KEEP,
                    lookup.generation
                )
            )
            .await
            .expect("put"),
            "{tool}"
        );
        let hit = within("get", CacheStore::get(&other, tool, "k", KEEP))
            .await
            .expect("get");
        assert_eq!(
            hit.entry.map(|entry| entry.value),
            Some(json!({ "tool": tool })),
            "another replica reads it"
        );
        // FILL: the generation, the entry and the fill lock in one script.
        let Fill::Filled(entry) = within("fill", CacheStore::fill(&other, tool, "k", KEEP, STEP))
            .await
            .expect("fill")
        else {
            panic!("{tool}: a stored entry fills the call");
        };
        assert_eq!(entry.value, json!({ "tool": tool }));
        let Fill::Run(Some(turn)) = within("fill", CacheStore::fill(&store, tool, "f", KEEP, STEP))
            .await
            .expect("fill")
        else {
            panic!("{tool}: the first asker runs it, under a lock");
        };
        let waiter = {
            let other = other.clone();
            tokio::spawn(async move { CacheStore::fill(&other, tool, "f", KEEP, STEP).await })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished(), "{tool}: the second asker waits");
        // The fill lock released (its own script) without an entry: the waiter runs it.
        drop(turn);
        let Fill::Run(Some(_turn)) = within("the waiter", waiter)
            .await
            .expect("its task")
            .expect("fill")
        else {
            panic!("{tool}: the waiter runs it once the lock is released");
        };
        // INCR of the generation: the entry is gone for every replica, and a read from
        // before it cannot store.
        within("invalidate", CacheStore::invalidate(&other, tool))
            .await
            .expect("invalidate");
        let after = within("get", CacheStore::get(&store, tool, "k", KEEP))
            .await
            .expect("get");
        assert!(after.entry.is_none(), "{tool}");
        assert_eq!(after.generation, lookup.generation + 1, "{tool}");
        assert!(
            !within(
                "put",
                CacheStore::put(&store, tool, "k", json!(0), KEEP, lookup.generation)
            )
            .await
            .expect("put"),
            "{tool}: a stale generation is refused"
        );
    }
    let by_node = cluster.keys_by_node();
    for tool in CACHE_TOOLS {
        let tag = format!("{{{tool}}}");
        let holders: Vec<usize> = by_node
            .iter()
            .enumerate()
            .filter(|(_, keys)| keys.iter().any(|key| key.contains(&tag)))
            .map(|(node, _)| node)
            .collect();
        assert_eq!(holders.len(), 1, "{tool}'s keys on one node: {by_node:?}");
    }
    assert_eq!(
        nodes_holding(&cluster, |key| key.starts_with("fusion:cache:")),
        3,
        "the tools spread over the three nodes: {by_node:?}"
    );
}

/// Tools of the rate-limit test: their buckets (`fusion:rate:<tool>`) land one on each
/// node.
/// The news.
#[mcp_tool(read_only)]
async fn news() -> String {
    "news".to_owned()
}

/// A price.
#[mcp_tool(read_only)]
async fn price() -> String {
    "price".to_owned()
}

/// A quote.
#[mcp_tool(read_only)]
async fn quote() -> String {
    "quote".to_owned()
}

#[tokio::test]
async fn the_fleets_rate_limit_holds_on_a_cluster() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let cluster = RedisCluster::start(&binary);
    let replica = |store: RedisStore| {
        Tester::new(
            Server::builder("limited", "1.0.0")
                .middleware(store.rate_limit(0.2, 2))
                .tool(news)
                .tool(price)
                .tool(quote)
                .build(),
        )
    };
    let first = replica(cluster_store(&cluster).await);
    let second = replica(cluster_store(&cluster).await);
    for tool in ["news", "price", "quote"] {
        // A burst of two for the fleet: one call on each replica, then nothing.
        for tester in [&first, &second] {
            let result = within("a call", tester.call(tool, json!({}))).await;
            assert!(!result.is_error, "{tool}: {}", result.text());
        }
        for tester in [&first, &second] {
            let refused = within("a call", tester.call(tool, json!({}))).await;
            assert!(refused.is_error, "{tool}: over the burst");
            assert!(
                refused.text().contains("across the fleet"),
                "{tool}: {}",
                refused.text()
            );
        }
    }
    assert_eq!(
        nodes_holding(&cluster, |key| key.starts_with("fusion:rate:")),
        3,
        "the buckets are on the three nodes: {:?}",
        cluster.keys_by_node()
    );
}

#[tokio::test]
async fn idempotency_keys_and_tasks_on_a_cluster() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let cluster = RedisCluster::start(&binary);
    let window = Duration::from_secs(60);
    // A short lease: renewed (its script) while the claim is held.
    let store = cluster_store(&cluster)
        .await
        .lease(Duration::from_millis(300));
    let other = cluster_store(&cluster).await;
    let claim = |key| ClaimRequest::new(key, window).fingerprint("f1");
    let mut fences = std::collections::HashMap::new();
    for key in ["a", "b", "carol", "dave"] {
        match within("claim", IdempotencyStore::claim(&store, claim(key))).await {
            Claim::Run { fencing_token } => {
                fences.insert(key, fencing_token);
            }
            other => panic!("{key}: {other:?}"),
        }
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    // Completed: another replica replays the result (it waits while the claim is held).
    for key in ["a", "b"] {
        IdempotencyStore::complete(&store, key, fences[key], json!({ "ran": key }));
        match within("replay", IdempotencyStore::claim(&other, claim(key))).await {
            Claim::Replay(result) => assert_eq!(result, json!({ "ran": key })),
            other => panic!("{key}: replayed, not {other:?}"),
        }
    }
    // Released: another replica runs it, under a newer fencing token.
    IdempotencyStore::release(&store, "carol", fences["carol"]);
    match within(
        "claim after release",
        IdempotencyStore::claim(&other, claim("carol")),
    )
    .await
    {
        Claim::Run { fencing_token } => {
            assert!(fencing_token > fences["carol"]);
            IdempotencyStore::release(&other, "carol", fencing_token);
        }
        other => panic!("carol: {other:?}"),
    }
    // Abandoned (stopped part-way): an unknown outcome for a tool unsafe to repeat, a
    // conflict for other arguments, a take-over for one safe to repeat.
    IdempotencyStore::abandon(&store, "dave", fences["dave"]);
    let deadline = Instant::now() + STEP;
    loop {
        match within("stopped", IdempotencyStore::claim(&other, claim("dave"))).await {
            Claim::Stopped => break,
            other => assert!(Instant::now() < deadline, "dave: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        within(
            "other arguments",
            IdempotencyStore::claim(&other, ClaimRequest::new("dave", window).fingerprint("f2"))
        )
        .await,
        Claim::Conflict
    );
    match within(
        "take-over",
        IdempotencyStore::claim(&other, claim("dave").repeatable(true)),
    )
    .await
    {
        Claim::Run { fencing_token } => assert!(fencing_token > fences["dave"]),
        other => panic!("dave: {other:?}"),
    }

    // Tasks: every key of a task script under the `{tasks}` hash tag, one slot.
    let tasks = cluster_store(&cluster).await;
    let (signalled, listener) = recorder();
    let subscription =
        tokio::spawn(TaskStore::subscribe(&tasks, listener).expect("a shared store"));
    let minute = Duration::from_secs(60);
    let record = TaskRecord::working("t1", minute, minute);
    within(
        "insert",
        TaskStore::insert(&tasks, record.clone(), "runner"),
    )
    .await
    .expect("inserted");
    assert_eq!(
        within("get", TaskStore::get(&tasks, "t1"))
            .await
            .expect("get"),
        Some(record.clone())
    );
    // A signal (the hash and the PUBLISH, one transaction) reaches the subscription.
    let deadline = Instant::now() + STEP;
    while !signalled
        .lock()
        .is_ok_and(|ids| ids.iter().any(|id| id == "t1"))
    {
        within(
            "signal",
            TaskStore::signal(&tasks, "t1", TaskSignal::Cancel),
        )
        .await
        .expect("signalled");
        assert!(Instant::now() < deadline, "the signal never arrived");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        within("signals", TaskStore::signals(&tasks, "t1"))
            .await
            .expect("signals")
            .cancel
    );
    let mut ended = record;
    ended.finish(TaskStatus::Cancelled, None, None);
    assert_eq!(
        within("update", TaskStore::update(&tasks, ended, "runner")).await,
        Ok(true)
    );
    assert_eq!(
        within("orphans", TaskStore::orphans(&tasks)).await,
        Ok(Vec::new())
    );
    // A runner whose lease lapsed: the task is an orphan; another takes it over under a
    // newer fencing token, and from then on only the new runner writes or renews it.
    let leased = cluster_store(&cluster)
        .await
        .lease(Duration::from_millis(300));
    let orphan = TaskRecord::working("t2", minute, minute);
    let first = within("insert", TaskStore::insert(&leased, orphan.clone(), "r1"))
        .await
        .expect("inserted");
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(
        within("orphans", TaskStore::orphans(&leased)).await,
        Ok(vec!["t2".to_owned()])
    );
    let second = within("acquire", TaskStore::acquire(&leased, "t2", "r2"))
        .await
        .expect("acquired")
        .expect("the lease was free");
    assert!(second > first, "{second} > {first}");
    assert_eq!(
        within("acquire again", TaskStore::acquire(&leased, "t2", "r3")).await,
        Ok(None)
    );
    assert_eq!(
        within("stale renew", TaskStore::renew(&leased, "t2", "r1")).await,
        Ok(false)
    );
    assert_eq!(
        within(
            "stale update",
            TaskStore::update(&leased, orphan.clone(), "r1")
        )
        .await,
        Ok(false)
    );
    assert_eq!(
        within("renew", TaskStore::renew(&leased, "t2", "r2")).await,
        Ok(true)
    );
    let mut done = orphan;
    done.finish(TaskStatus::Completed, None, None);
    assert_eq!(
        within("update", TaskStore::update(&leased, done, "r2")).await,
        Ok(true)
    );
    subscription.abort();
}

#[tokio::test]
async fn a_publish_on_any_node_reaches_the_subscription_on_one() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let cluster = RedisCluster::start(&binary);
    let store = cluster_store(&cluster).await;
    let (heard, listener) = recorder();
    let subscription =
        tokio::spawn(TaskStore::subscribe(&store, listener).expect("a shared store"));
    // Published on each node with redis-cli, outside the store.
    for port in cluster.ports() {
        let message = format!("from-{port}");
        publish_until_heard(&heard, &message, || {
            cluster.cli(port, &["PUBLISH", "fusion:{tasks}:task-signals", &message])
        })
        .await;
    }
    subscription.abort();
}

/// What a task-signal listener heard, and the listener.
fn recorder() -> (
    Arc<Mutex<Vec<String>>>,
    fusion_runtime::tasks::SignalListener,
) {
    let heard = Arc::new(Mutex::new(Vec::<String>::new()));
    let listener = {
        let heard = Arc::clone(&heard);
        Arc::new(move |id: &str| {
            if let Ok(mut ids) = heard.lock() {
                ids.push(id.to_owned());
            }
        })
    };
    (heard, listener)
}

/// Publishes `message` (with `publish`, every 100 ms: until the subscription is up, the
/// first ones may go unheard) until `heard` has it; fails after [`STEP`].
async fn publish_until_heard(
    heard: &Mutex<Vec<String>>,
    message: &str,
    publish: impl Fn() -> Option<String>,
) {
    let deadline = Instant::now() + STEP;
    while !heard
        .lock()
        .is_ok_and(|ids| ids.iter().any(|id| id == message))
    {
        publish().expect("PUBLISH");
        assert!(
            Instant::now() < deadline,
            "{message} never reached the subscription: {:?}",
            heard.lock().map(|ids| ids.clone())
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_store_under_sentinel_follows_the_promoted_replica() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let mut sentinel = RedisSentinel::start(&binary);
    let urls = sentinel.sentinel_urls();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();
    let store = within(
        "connect_sentinel",
        RedisStore::connect_sentinel(&urls, sentinel.master_name()),
    )
    .await
    .expect("the test's sentinels");
    // The task signals, subscribed on the primary.
    let (heard, listener) = recorder();
    let subscription =
        tokio::spawn(TaskStore::subscribe(&store, listener).expect("a shared store"));
    publish_until_heard(&heard, "before", || {
        sentinel.cli(
            sentinel.primary_port(),
            &["PUBLISH", "fusion:{tasks}:task-signals", "before"],
        )
    })
    .await;

    let before = within("get", CacheStore::get(&store, "quote", "k", KEEP))
        .await
        .expect("get");
    assert!(
        within(
            "put",
            CacheStore::put(
                &store,
                "quote",
                "k",
                json!("before"),
                KEEP,
                before.generation
            )
        )
        .await
        .expect("put")
    );
    // On the replica before the primary dies (replication is asynchronous).
    let replica_has_it = || {
        sentinel
            .cli(
                sentinel.replica_port(),
                &["EXISTS", "fusion:cache:{quote}:entry:k"],
            )
            .is_some_and(|reply| reply.trim() == "1")
    };
    let deadline = Instant::now() + STEP;
    while !replica_has_it() {
        assert!(Instant::now() < deadline, "the replica never got the entry");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    sentinel.kill_primary();
    let killed_at = Instant::now();
    let mut failures = 0;
    let recovered = loop {
        let sent = Instant::now();
        let lookup = CacheStore::get(&store, "quote", "k", KEEP).await;
        let took = sent.elapsed();
        assert!(
            took < Duration::from_millis(1500),
            "a command took {took:?} during the failover"
        );
        match lookup {
            Ok(lookup) => break lookup,
            Err(_) => failures += 1,
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(30),
            "no command succeeded within 30 s of the kill ({failures} failed)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let after = killed_at.elapsed();
    println!("commands failed for {after:?} ({failures} of them) after the primary was killed");
    assert!(failures > 0, "commands failed while no primary was named");
    assert_eq!(
        recovered.entry.map(|entry| entry.value),
        Some(json!("before")),
        "what the replica had is there"
    );
    let promoted = sentinel.wait_for_failover(STEP);
    assert_eq!(
        promoted,
        sentinel.replica_port(),
        "the replica was promoted"
    );
    // Writes go to the new primary.
    within("invalidate", CacheStore::invalidate(&store, "quote"))
        .await
        .expect("invalidate on the new primary");
    assert_eq!(
        sentinel
            .cli(promoted, &["GET", "fusion:cache:{quote}:gen"])
            .map(|reply| reply.trim().to_owned()),
        Some("1".to_owned())
    );
    let _lock = within("a lock", LockStore::lock(&store, "account"))
        .await
        .expect("a lock on the new primary");
    // The subscription moved to the new primary.
    publish_until_heard(&heard, "after", || {
        sentinel.cli(
            promoted,
            &["PUBLISH", "fusion:{tasks}:task-signals", "after"],
        )
    })
    .await;
    subscription.abort();
}

#[tokio::test]
async fn a_persistent_redis_keeps_the_entries_across_a_kill() {
    let Some(binary) = redis_tools() else {
        return;
    };
    let mut redis = RedisServer::start_persistent(&binary);
    let store = within("connect", RedisStore::connect(&redis.url()))
        .await
        .expect("the test's Redis");
    let lookup = within("get", CacheStore::get(&store, "quote", "k", KEEP))
        .await
        .expect("get");
    assert!(
        within(
            "put",
            CacheStore::put(&store, "quote", "k", json!("kept"), KEEP, lookup.generation)
        )
        .await
        .expect("put")
    );
    redis.stop();
    assert!(
        CacheStore::get(&store, "quote", "k", KEEP).await.is_err(),
        "Redis is away"
    );
    redis.resume();
    let deadline = Instant::now() + STEP;
    let found = loop {
        if let Ok(found) = CacheStore::get(&store, "quote", "k", KEEP).await {
            break found;
        }
        assert!(Instant::now() < deadline, "the store never reconnected");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(found.entry.map(|entry| entry.value), Some(json!("kept")));
}
