//! A slow call made a task by the server (`task_after`, issue 60 item 2): `reconcile` of
//! `examples/fleet.rs` is an ordinary tool with `#[mcp_tool(task_after = "1s")]`, on
//! replicas that share tasks on a Redis of the test's own.
//!
//! - A 2026-07-28 client that declared the tasks extension: a call that ends within the
//!   second is answered directly; one still running is answered with a task at the
//!   deadline, and the task completes, polled on another replica.
//! - Three replicas behind nginx: the replica running such a task is SIGTERMed; the task
//!   is handed over and completes on another, polled through nginx.
//! - A 2026-07-28 client without the extension waits for the answer, as always.
//! - A 2025-11-25 session whose client declared the extension gets a task at the deadline
//!   too, and is told on its event stream when it completes (`notifications/tasks`).
//!
//! Needs redis-server (and nginx for the hand-over); without them the tests skip loudly,
//! except under `CI=true`.

use crate::support;

use std::{
    io::{BufRead as _, BufReader, Write as _},
    net::{SocketAddr, TcpStream},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{
    fleet::Fleet,
    nginx_proxy::Nginx,
    task_client::{create, poll_end, send_as, status, tasks_session},
};

const REQUEST: Duration = Duration::from_secs(20);

fn reconcile(ledger: &str, delay_ms: u64) -> Value {
    json!({"ledger": ledger, "delay_ms": delay_ms})
}

/// The text of a completed task's result.
fn task_text(done: &Value) -> &str {
    done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn a_call_past_its_deadline_becomes_a_task_and_one_within_it_is_answered_directly() {
    let Some(fleet) = Fleet::start("task-after") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&[]));

    let quick = send_as(
        a.addr(),
        "tools/call",
        "reconcile",
        json!({"name": "reconcile", "arguments": reconcile("quick", 200)}),
        true,
    )
    .expect("an answer");
    assert_eq!(
        quick["result"]["content"][0]["text"],
        format!("ledger quick reconciled by replica {}", a.pid()),
        "answered directly within the deadline: {quick}"
    );

    let asked = Instant::now();
    let id = create(a.addr(), "reconcile", reconcile("slow", 3000)).expect("a task");
    let answered = asked.elapsed();
    assert!(
        answered >= Duration::from_millis(900),
        "not before its deadline: {answered:?}"
    );
    let done = poll_end(b.addr(), &id, REQUEST);
    assert_eq!(status(&done), "completed", "{done}");
    assert_eq!(
        task_text(&done),
        format!("ledger slow reconciled by replica {}", a.pid()),
        "the work went on where it started: {done}"
    );

    let plain = send_as(
        a.addr(),
        "tools/call",
        "reconcile",
        json!({"name": "reconcile", "arguments": reconcile("plain", 1500)}),
        false,
    )
    .expect("an answer");
    assert!(plain["result"]["taskId"].is_null(), "{plain}");
    assert_eq!(
        plain["result"]["content"][0]["text"],
        format!("ledger plain reconciled by replica {}", a.pid()),
        "a client without the extension waits for the answer: {plain}"
    );
}

#[test]
fn a_task_made_at_its_deadline_is_handed_over_when_its_replica_stops() {
    let Some(fleet) = Fleet::start("task-after-handover") else {
        return;
    };
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let extra = ["--lease-ms", "20000", "--grace-ms", "200"];
    let mut stopping = fleet.replica(&extra);
    let (b, c) = (fleet.replica(&extra), fleet.replica(&extra));
    let nginx = Nginx::start(&nginx_binary, &[stopping.addr(), b.addr(), c.addr()]);
    // Made on the replica that stops, so that the test knows which one runs it.
    let id = create(stopping.addr(), "reconcile", reconcile("handed", 4000)).expect("a task");
    stopping.signal("TERM");
    assert!(
        stopping.wait_exit(REQUEST).is_some(),
        "the replica stopped: {}",
        stopping.stderr()
    );
    // Polled through nginx, which sends the polls to the replicas left.
    let done = poll_end(nginx.addr(), &id, Duration::from_secs(30));
    assert_eq!(status(&done), "completed", "{done}");
    let survivors =
        [b.pid(), c.pid()].map(|pid| format!("ledger handed reconciled by replica {pid}"));
    assert!(
        survivors.iter().any(|text| text == task_text(&done)),
        "run again on a survivor: {done}"
    );
}

fn in_session(addr: SocketAddr, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    support::post_mcp(addr, &[("Mcp-Session-Id", session)], &body, REQUEST).message()
}

#[test]
fn a_session_of_2025_11_25_that_declared_tasks_gets_a_task_at_the_deadline() {
    let Some(fleet) = Fleet::start("task-after-session") else {
        return;
    };
    let replica = fleet.replica_with_sessions(&[]);
    let addr = replica.addr();
    let session = tasks_session(addr, "task-after");
    let told = session_stream(addr, &session);
    let quick = in_session(
        addr,
        &session,
        "tools/call",
        json!({"name": "reconcile", "arguments": reconcile("quick", 100)}),
    );
    assert!(
        quick["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.starts_with("ledger quick reconciled")),
        "{quick}"
    );
    let slow = in_session(
        addr,
        &session,
        "tools/call",
        json!({"name": "reconcile", "arguments": reconcile("slow", 2500)}),
    );
    let id = slow["result"]["task"]["taskId"]
        .as_str()
        .or_else(|| slow["result"]["taskId"].as_str())
        .unwrap_or_else(|| panic!("a task: {slow}"))
        .to_owned();
    let deadline = Instant::now() + REQUEST;
    loop {
        let got = in_session(addr, &session, "tasks/get", json!({"taskId": id}));
        if got["result"]["status"] == "completed" {
            assert!(got.to_string().contains("ledger slow reconciled"), "{got}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the task did not complete: {got}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The session was told on its stream (`notifications/tasks`), with the result.
    let deadline = Instant::now() + REQUEST;
    loop {
        let heard = told.lock().map(|lines| lines.clone()).unwrap_or_default();
        let completed = heard.iter().find(|line| {
            line.contains("notifications/tasks") && line.contains(&id) && line.contains("completed")
        });
        if let Some(line) = completed {
            assert!(line.contains("ledger slow reconciled"), "{line}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no notifications/tasks: {heard:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The session's `GET` event stream, read on a thread of its own: its `data:` lines so far.
fn session_stream(addr: SocketAddr, session: &str) -> Arc<Mutex<Vec<String>>> {
    let mut stream = TcpStream::connect_timeout(&addr, REQUEST).expect("the stream connects");
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\n\r\n"
    );
    stream
        .write_all(head.as_bytes())
        .expect("the stream's request");
    // Bounded: the thread ends when the replica closes the stream or goes quiet for long.
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    let lines = Arc::new(Mutex::new(Vec::new()));
    let heard = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { return };
            if line.starts_with("data:")
                && let Ok(mut heard) = heard.lock()
            {
                heard.push(line);
            }
        }
    });
    lines
}
