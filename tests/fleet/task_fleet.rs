//! Tasks that outlive their replica (issue 33): `examples/fleet.rs` replicas, stateless, on a
//! Redis of the test's own (`.task_store(redis)`), driven with raw 2026-07-28 requests.
//!
//! - A task created on one replica is polled, answered (`tasks/update`) and cancelled on
//!   another, and reaches only the caller that created it.
//! - (The chaos of killed and paused replicas is `chaos.rs`.)
//! - SIGTERM: a stopping replica hands its running reports over at once, long before
//!   their lease would lapse.
//! - Redis frozen: creating a task answers a transient `isError`, polling a transient
//!   error that is not "unknown task"; once Redis answers again, the next poll does too.
//! - Expiry from activity: a finished task (a TTL of 1 s) read every 100 ms on either
//!   replica is still there after three TTLs, and is forgotten at its cap of ten TTLs
//!   however often it is read; one nobody reads is forgotten after its TTL.
//!
//! Needs `redis-server` (`scripts/redis-env`); without it the tests skip loudly, except
//! under `CI=true`, where they fail.

use crate::support;

use std::{
    net::SocketAddr,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{
    fleet::Fleet,
    redis_server::RedisServer,
    task_client::{create, get, is_unknown, poll_end, send, send_as, status},
};

#[test]
fn a_task_created_on_one_replica_is_polled_answered_and_cancelled_on_another() {
    let Some(fleet) = Fleet::start("cross") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&[]));

    // Polled on the other replica, to its end.
    let report = create(
        a.addr(),
        "sales_report",
        json!({"report_id": "q3", "delay_ms": 300}),
    )
    .expect("a task");
    let working = get(b.addr(), &report).expect("tasks/get on b");
    assert!(!is_unknown(&working), "{working}");
    let done = poll_end(b.addr(), &report, Duration::from_secs(20));
    assert_eq!(status(&done), "completed", "{done}");
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("report q3: all good"), "{done}");
    assert_eq!(
        get(a.addr(), &report).expect("tasks/get on a")["result"],
        done["result"],
        "both replicas report the same end"
    );

    // Its question shows on the other replica, and the answer sent there reaches the
    // handler waiting on the first.
    let refund = create(a.addr(), "approve_refund", json!({"order_id": "r1"})).expect("a task");
    let deadline = Instant::now() + Duration::from_secs(20);
    let asking = loop {
        let answer = get(b.addr(), &refund).expect("tasks/get on b");
        if status(&answer) == "input_required" || Instant::now() >= deadline {
            break answer;
        }
        thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status(&asking), "input_required", "{asking}");
    assert!(
        asking["result"]["inputRequests"]["approval"].is_object(),
        "{asking}"
    );
    let sent = Instant::now();
    let ack = send(
        b.addr(),
        "tasks/update",
        &refund,
        json!({"taskId": refund, "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}}),
    )
    .expect("tasks/update on b");
    assert!(ack.get("error").is_none(), "{ack}");
    let answered = poll_end(a.addr(), &refund, Duration::from_secs(20));
    eprintln!(
        "an answer sent to another replica ended its task in {:?}",
        sent.elapsed()
    );
    assert_eq!(status(&answered), "completed", "{answered}");
    let text = answered["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("refund r1: approve=true"), "{answered}");
    assert!(
        text.ends_with(&format!("by replica {}", a.pid())),
        "the handler that asked got the answer: {answered}"
    );

    // Cancelled on the other replica: the work on the first stops.
    let long = create(
        a.addr(),
        "sales_report",
        json!({"report_id": "long", "delay_ms": 60_000}),
    )
    .expect("a task");
    let asked = Instant::now();
    let ack =
        send(b.addr(), "tasks/cancel", &long, json!({"taskId": long})).expect("tasks/cancel on b");
    assert!(ack.get("error").is_none(), "{ack}");
    let cancelled = poll_end(a.addr(), &long, Duration::from_secs(20));
    eprintln!(
        "a cancel sent to another replica ended its task in {:?}",
        asked.elapsed()
    );
    assert_eq!(status(&cancelled), "cancelled", "{cancelled}");
}

#[test]
fn a_stopping_replica_hands_its_reports_over_before_their_lease_would_lapse() {
    let Some(fleet) = Fleet::start("handover") else {
        return;
    };
    // A long lease: a take-over that waited for it would take 20 s.
    let extra = ["--lease-ms", "20000", "--grace-ms", "200"];
    let mut stopping = fleet.replica(&extra);
    let survivor = fleet.replica(&extra);
    let ids: Vec<String> = (0..3)
        .map(|n| {
            create(
                stopping.addr(),
                "sales_report",
                json!({"report_id": format!("h{n}"), "delay_ms": 3000}),
            )
            .expect("a task")
        })
        .collect();
    let ship = create(
        stopping.addr(),
        "ship_order",
        json!({"order_id": "s-h", "delay_ms": 3000}),
    )
    .expect("a task");
    thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    stopping.signal("TERM");
    let exited = stopping.wait_exit(Duration::from_secs(20));
    assert!(
        exited.is_some(),
        "the replica stopped: {}",
        stopping.stderr()
    );
    for id in &ids {
        let done = poll_end(survivor.addr(), id, Duration::from_secs(30));
        assert_eq!(status(&done), "completed", "{done}");
        let text = done["result"]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(
            text.ends_with(&format!("by replica {}", survivor.pid())),
            "run again on the survivor: {done}"
        );
    }
    let took = signalled.elapsed();
    eprintln!("three reports handed over and finished {took:?} after SIGTERM");
    assert!(
        took < Duration::from_secs(18),
        "handed over, not left to their 20 s lease: {took:?}"
    );
    // The shipment is not safe to run again: it failed as an unknown outcome, at once.
    let shipped = poll_end(survivor.addr(), &ship, Duration::from_secs(10));
    assert_eq!(status(&shipped), "failed", "{shipped}");
    assert_eq!(
        shipped["result"]["error"]["data"]["_meta"]["fusion/failure"]["class"], "unknown_outcome",
        "{shipped}"
    );
    assert!(fleet.effects().is_empty(), "{:?}", fleet.effects());
}

#[test]
fn while_redis_is_frozen_tasks_answer_transient_errors_and_nothing_is_lost() {
    let Some(mut fleet) = Fleet::start("frozen") else {
        return;
    };
    let replica = fleet.replica(&[]);
    let id = create(
        replica.addr(),
        "sales_report",
        json!({"report_id": "f", "delay_ms": 500}),
    )
    .expect("a task");
    fleet.redis().freeze();
    let created = send(
        replica.addr(),
        "tools/call",
        "sales_report",
        json!({"name": "sales_report", "arguments": {"report_id": "g"}}),
    );
    let polled = get(replica.addr(), &id);
    fleet.redis().thaw();
    let created = created.expect("an answer while Redis is frozen");
    assert_eq!(created["result"]["isError"], true, "{created}");
    assert_eq!(
        created["result"]["_meta"]["fusion/failure"]["class"], "transient",
        "{created}"
    );
    let polled = polled.expect("an answer while Redis is frozen");
    assert!(!is_unknown(&polled), "not 'unknown task': {polled}");
    assert_eq!(
        polled["error"]["data"]["_meta"]["fusion/failure"]["class"], "transient",
        "{polled}"
    );
    let done = poll_end(replica.addr(), &id, Duration::from_secs(30));
    assert_eq!(status(&done), "completed", "{done}");
}

#[tokio::test(flavor = "current_thread")]
async fn the_redis_task_store_is_bounded_in_all_and_per_caller() {
    use fusion_runtime::{
        redis::RedisStore,
        tasks::{TaskRecord, TaskStore, TaskStoreError},
    };
    use rmcp::model::TaskStatus;

    let Some(binary) = support::redis_server() else {
        return;
    };
    let redis = RedisServer::start(&binary);
    let store = RedisStore::connect(&redis.url())
        .await
        .expect("Redis")
        .task_limits(5, 2);
    let record = |id: &str, owner: Option<&str>, ttl: Duration| {
        let mut record = TaskRecord::working(id, ttl, ttl);
        record.owner = owner.map(str::to_owned);
        record.requestor = owner.map(|owner| format!("sub:{owner}"));
        record
    };
    let minute = Duration::from_secs(60);
    let short = Duration::from_millis(1);
    let alice_first = record("a1", Some("alice"), short);
    store
        .insert(alice_first.clone(), "runner")
        .await
        .expect("alice's first");
    store
        .insert(record("a2", Some("alice"), minute), "runner")
        .await
        .expect("alice's second");
    assert_eq!(
        store
            .insert(record("a3", Some("alice"), minute), "runner")
            .await,
        Err(TaskStoreError::CallerFull(2)),
        "alice holds her two"
    );
    for id in ["b1", "n1", "n2"] {
        let owner = (id == "b1").then_some("bob");
        store
            .insert(record(id, owner, minute), "runner")
            .await
            .unwrap_or_else(|error| panic!("{id}: {error}"));
    }
    assert!(
        matches!(
            store.insert(record("n3", None, minute), "runner").await,
            Err(TaskStoreError::Full(_))
        ),
        "five in all"
    );
    // Another runner cannot write alice's task; its own runner ends it, and once its TTL
    // is over it no longer counts.
    let mut ended = alice_first;
    ended.finish(TaskStatus::Completed, Some(json!({})), None);
    assert_eq!(store.update(ended.clone(), "intruder").await, Ok(false));
    assert_eq!(store.update(ended, "runner").await, Ok(true));
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.get("a1").await, Ok(None), "expired");
    store
        .insert(record("a3", Some("alice"), minute), "runner")
        .await
        .expect("alice has room again, and the store too");
    // Full again, of running tasks; once one finishes, the next task takes its place
    // before its TTL (the task that finished first goes), and the rest still run.
    let mut n1 = record("n1", None, minute);
    n1.finish(TaskStatus::Completed, Some(json!({})), None);
    assert_eq!(store.update(n1, "runner").await, Ok(true));
    store
        .insert(record("n3", None, minute), "runner")
        .await
        .expect("the finished task made room");
    assert_eq!(store.get("n1").await, Ok(None), "forgotten to make room");
    assert!(store.get("n2").await.expect("Redis").is_some(), "running");
    assert!(
        matches!(
            store.insert(record("n4", None, minute), "runner").await,
            Err(TaskStoreError::Full(_))
        ),
        "five running: full"
    );
}

#[test]
fn a_fleet_rolls_its_request_state_key_without_failing_the_rounds_in_progress() {
    let Some(fleet) = Fleet::start("keys") else {
        return;
    };
    let (old, new) = ("11".repeat(32), "22".repeat(32));
    let on_old = fleet.replica(&["--state-key", &old]);
    let rolled = fleet.replica(&["--state-key", &new, "--previous-state-key", &old]);
    let on_new = fleet.replica(&["--state-key", &new]);
    let arguments = json!({"order_id": "k1"});
    // The first round of a call without tasks: `input_required`, with the request state.
    let first_round = |addr: SocketAddr| {
        let answer = send_as(
            addr,
            "tools/call",
            "approve_refund",
            json!({"name": "approve_refund", "arguments": arguments}),
            false,
        )
        .expect("the first round");
        assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
        assert!(
            answer["result"]["inputRequests"]["approval"].is_object(),
            "{answer}"
        );
        answer["result"]["requestState"]
            .as_str()
            .expect("a request state")
            .to_owned()
    };
    // The next round, with the answer and the state.
    let next_round = |addr: SocketAddr, state: &str| {
        send_as(
            addr,
            "tools/call",
            "approve_refund",
            json!({
                "name": "approve_refund",
                "arguments": arguments,
                "requestState": state,
                "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}},
            }),
            false,
        )
        .expect("the next round")
    };
    let approved = |answer: &Value| {
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("refund k1: approve=true"))
    };
    let refused = |answer: &Value| {
        answer["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("requestState failed verification"))
    };
    // A round begun on the old fleet ends on a replica already rolled to the new key.
    let sealed_by_old = first_round(on_old.addr());
    let ended = next_round(rolled.addr(), &sealed_by_old);
    assert!(approved(&ended), "{ended}");
    // A round begun on a rolled replica ends on one that has only the new key...
    let sealed_by_rolled = first_round(rolled.addr());
    let ended = next_round(on_new.addr(), &sealed_by_rolled);
    assert!(approved(&ended), "{ended}");
    // ...and on another rolled one.
    assert!(approved(&next_round(rolled.addr(), &sealed_by_rolled)));
    // Once the old key is dropped, its states are refused with the usual error.
    let stale = next_round(on_new.addr(), &sealed_by_old);
    assert!(refused(&stale), "{stale}");
    // A tampered state is refused by a replica that lists every key.
    let mut tampered = sealed_by_rolled.clone();
    tampered.pop();
    let forged = next_round(rolled.addr(), &tampered);
    assert!(refused(&forged), "{forged}");
}

/// Polls task `id` on `replicas` in turn every 100 ms while `keep_reading` says so; the time
/// from `since` when it became unknown, or `None` when it never did within `limit`.
fn read_until_forgotten(
    replicas: &[SocketAddr],
    id: &str,
    since: Instant,
    limit: Duration,
) -> Option<Duration> {
    let mut turn = 0;
    while since.elapsed() < limit {
        let answer = get(replicas[turn % replicas.len()], id)
            .unwrap_or_else(|error| panic!("poll {id}: {error}"));
        if is_unknown(&answer) {
            return Some(since.elapsed());
        }
        assert_eq!(status(&answer), "completed", "{answer}");
        turn += 1;
        thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn a_finished_task_is_kept_while_its_client_reads_it_and_never_past_ten_ttls() {
    let Some(fleet) = Fleet::start("task-activity") else {
        return;
    };
    let extra = ["--task-ttl-ms", "1000"];
    let (a, b) = (fleet.replica(&extra), fleet.replica(&extra));
    let replicas = [a.addr(), b.addr()];

    // Read on and on: kept past its TTL, until its cap.
    let read = create(a.addr(), "sales_report", json!({"report_id": "kept"})).expect("a task");
    let done = poll_end(a.addr(), &read, Duration::from_secs(10));
    assert_eq!(status(&done), "completed", "{done}");
    let ended = Instant::now();
    assert_eq!(
        read_until_forgotten(&replicas, &read, ended, Duration::from_secs(3)),
        None,
        "a task read every 100 ms is kept past its 1 s TTL"
    );
    let forgotten = read_until_forgotten(&replicas, &read, ended, Duration::from_secs(30));
    let at = forgotten.expect("forgotten at its cap of ten TTLs, however often it is read");
    eprintln!("a task read every 100 ms was forgotten {at:?} after it ended (TTL 1 s, cap 10 s)");

    // Nobody reads it: forgotten after its TTL.
    let unread = create(a.addr(), "sales_report", json!({"report_id": "unread"})).expect("a task");
    let done = poll_end(b.addr(), &unread, Duration::from_secs(10));
    assert_eq!(status(&done), "completed", "{done}");
    thread::sleep(Duration::from_millis(2500));
    let answer = get(b.addr(), &unread).expect("an answer");
    assert!(
        is_unknown(&answer),
        "an unread task is forgotten after its TTL: {answer}"
    );
}
