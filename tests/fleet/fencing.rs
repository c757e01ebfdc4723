//! Fencing tokens at the handler's own database (`examples/fencing.rs`), as real processes:
//! two replicas on a Redis of the test's own, writing payments to one SQLite file.
//!
//! A replica paused (SIGSTOP) in the middle of a keyed call, past its lease, loses the key
//! to the other replica, which runs the call again (the tool is idempotent) under a larger
//! fencing token and writes the row. Resumed (SIGCONT), the first replica goes on to its own
//! write, and SQLite refuses it: the row keeps the second run's token, the first answers
//! (and logs) that it was fenced out, and later calls with the key replay the second run.
//!
//! Needs `redis-server` (`scripts/redis-env`); without it the test skips loudly, except
//! under `CI=true`, where it fails.

use crate::support;

use std::{
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{
    HttpServer,
    fleet::{call, is_error, text},
    redis_server::RedisServer,
};

/// How long a replica may take to report its URL.
const START: Duration = Duration::from_secs(30);
/// The limit of the paused replica's exchange: its pause, its run and its answer.
const PAUSED_CALL: Duration = Duration::from_secs(30);
/// The replicas' lease: a stopped replica's key is free for a takeover after it.
const LEASE: Duration = Duration::from_millis(1000);
/// How long the first run's work takes: the replica is stopped in it.
const WORK_MS: u64 = 4000;

/// A SQLite file in the temp dir, removed (with its WAL files) before and after.
struct DbFile(PathBuf);

impl DbFile {
    fn new() -> Self {
        let path = std::env::temp_dir().join(format!(
            "fusion-fencing-{}-{}.db",
            std::process::id(),
            fastrand::u64(..)
        ));
        let file = Self(path);
        file.remove();
        file
    }

    fn remove(&self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut path = self.0.clone().into_os_string();
            path.push(suffix);
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for DbFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// One replica of `examples/fencing.rs`, stateless, on a free port.
fn replica(redis: &RedisServer, db: &Path) -> HttpServer {
    let mut command = Command::new(support::example_binary("fencing"));
    command
        .args(["--http", "0", "--stateless", "--redis", &redis.url()])
        .arg("--db")
        .arg(db)
        .args(["--lease-ms", &LEASE.as_millis().to_string()])
        // `info`: the call lines, with the fenced-out message of a refused write.
        .env("RUST_LOG", "info");
    HttpServer::start(command, START)
}

/// The payment's row: `(amount_cents, fence, replica)`, read from the file as the
/// replicas left it.
fn row(db: &Path, id: &str) -> Option<(i64, i64, u32)> {
    let connection = rusqlite::Connection::open(db)
        .unwrap_or_else(|error| panic!("cannot open {}: {error}", db.display()));
    connection
        .busy_timeout(Duration::from_secs(5))
        .expect("a busy timeout");
    let mut statement = connection
        .prepare("SELECT amount_cents, fence, replica FROM payments WHERE id = ?1")
        .expect("the payments table");
    let mut rows = statement
        .query_map([id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("a query of the payments table");
    rows.next().map(|row| row.expect("a payment's row"))
}

/// The number after `marker` in `text` (a fencing token in an answer or a log line).
fn number_after(text: &str, marker: &str) -> Option<i64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Waits (at most `limit`) until `server`'s stderr contains `needle`; all of it.
fn wait_for_log(server: &HttpServer, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    loop {
        let log = server.stderr();
        if log.contains(needle) {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "no `{needle}` in the log within {limit:?}:\n{log}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_replica_paused_past_its_lease_is_fenced_out_at_the_database() {
    let Some(binary) = support::redis_server() else {
        return;
    };
    let redis = RedisServer::start(&binary);
    let db = DbFile::new();
    let a = replica(&redis, &db.0);
    let b = replica(&redis, &db.0);
    let payment = json!({"payment_id": "pay-1", "amount_cents": 1250, "delay_ms": WORK_MS});

    // A claims the key and starts its slow work; its answer comes only after it is resumed.
    let started = Instant::now();
    let a_addr = a.addr();
    let first = {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "record_payment", "arguments": payment}});
        thread::spawn(move || {
            support::try_raw_http(
                a_addr,
                "POST",
                "/mcp",
                &support::mcp_headers(&[("MCP-Protocol-Version", "2025-06-18")]),
                body.to_string().as_bytes(),
                PAUSED_CALL,
            )
        })
    };
    thread::sleep(Duration::from_millis(300));
    a.signal("STOP");
    let stopped = Instant::now();

    // Past A's lease (it renews every third of it, so at most a lease and a third after
    // the claim), B takes the key over and runs the call again: the same arguments, as a
    // client's retry sends them.
    thread::sleep(2 * LEASE);
    let b_started = Instant::now();
    let b_answer = call(b.addr(), "record_payment", payment.clone());
    let b_took = b_started.elapsed();
    assert!(!is_error(&b_answer), "B takes the key over: {b_answer}");
    let b_text = text(&b_answer).to_owned();
    assert!(
        b_text.contains(&format!("by replica {}", b.pid())),
        "{b_answer}"
    );
    let b_fence = number_after(&b_text, "under fence ")
        .unwrap_or_else(|| panic!("B's answer names its fence: {b_text}"));
    assert_eq!(
        row(&db.0, "pay-1"),
        Some((1250, b_fence, b.pid())),
        "B's row"
    );

    // A wakes up past its work's end and writes: SQLite refuses it.
    a.signal("CONT");
    let resumed = Instant::now();
    let a_result = first.join().expect("A's caller thread");
    let a_answered = resumed.elapsed();
    let a_log = wait_for_log(&a, "fenced out", Duration::from_secs(10));
    let a_line = a_log
        .lines()
        .find(|line| line.contains("fenced out"))
        .unwrap_or_default();
    let a_fence = number_after(a_line, "a stale writer (fence ")
        .unwrap_or_else(|| panic!("A's log names its fence: {a_line}"));
    match &a_result {
        Ok(response) => {
            let message = response
                .try_message()
                .unwrap_or_else(|error| panic!("A's answer: {error}"));
            let result = message.get("result").cloned().unwrap_or(Value::Null);
            assert!(is_error(&result), "A's late write is refused: {message}");
            assert!(
                text(&result).contains("fenced out, a stale writer"),
                "{message}"
            );
            assert_eq!(
                result["_meta"]["fusion/failure"]["code"], "conflict",
                "{message}"
            );
            assert_eq!(
                number_after(text(&result), "a stale writer (fence "),
                Some(a_fence),
                "the answer and the log name one fence: {message}"
            );
        }
        // A's answer may never reach the client; its log says what happened.
        Err(error) => eprintln!("A's answer did not arrive ({error}); its log: {a_line}"),
    }
    assert!(a_fence < b_fence, "A's fence {a_fence} < B's {b_fence}");
    assert_eq!(
        row(&db.0, "pay-1"),
        Some((1250, b_fence, b.pid())),
        "the row is still B's after A's late write"
    );

    // The key's result is B's, on either replica.
    for (name, replica) in [("A", &a), ("B", &b)] {
        let again = call(replica.addr(), "record_payment", payment.clone());
        assert_eq!(text(&again), b_text, "{name} replays B's result: {again}");
    }
    eprintln!(
        "fencing: A stopped at {:?}, B took the key over {:?} after the stop and ran in {b_took:?}, \
         A answered {a_answered:?} after SIGCONT, whole test {:?} (fences: A {a_fence}, B {b_fence})",
        stopped - started,
        b_started - stopped,
        started.elapsed()
    );
}
