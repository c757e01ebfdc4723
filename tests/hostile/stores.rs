//! Stores a client can grow, sprayed until they would outgrow the process: each stays
//! under the memory bound the guide's "Bounds against hostile peers" promises, whatever the
//! request rate, and forgets its oldest finished entries first.

use std::{
    collections::HashMap,
    io::Write as _,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::support::{self, stdio_peer::StdioPeer, task_client::tasks_session};

/// The most a sprayed server may hold (issue 35's bound): its store's bounds, plus what
/// the runtime and the answers in flight take, plus allocator slack.
const SPRAY_RSS_BOUND_KIB: u64 = 100 * 1024;

/// What a spray of idempotency keys saw.
struct KeySpray {
    /// The highest RSS sampled while the calls were answered.
    peak_kib: u64,
    /// The answer's text by id, for the first key, the last, and the two repeats sent
    /// after them (`"oldest"`: the first key again; `"newest"`: the last key again).
    texts: HashMap<String, String>,
}

/// The idempotency key of call `id`: `key_bytes` long, distinct per id.
fn key_of(id: usize, key_bytes: usize) -> String {
    format!("{id:012}{}", "k".repeat(key_bytes.saturating_sub(12)))
}

/// `place_order` calls with `keys` distinct idempotency keys of `key_bytes` bytes each,
/// written by a thread as fast as the server takes them, against `cancel_safety` over
/// stdio, then the first and the last key once more. Every call must be answered with
/// `isError: false`.
fn spray_idempotency_keys(keys: usize, key_bytes: usize) -> KeySpray {
    let mut server = StdioPeer::spawn(&support::example_binary("cancel_safety"), &[], &[])
        .kill_after(Duration::from_secs(240));
    server.initialize();
    let mut stdin = server.take_stdin().expect("stdin");
    let writer = thread::spawn(move || {
        let mut out = std::io::BufWriter::new(&mut stdin);
        let call = |id: Value, key: usize| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "place_order",
                    "arguments": {"request_id": key_of(key, key_bytes), "item": "spray"}}})
        };
        let mut written = 0;
        for id in 0..keys {
            if writeln!(out, "{}", call(json!(id), id)).is_err() {
                return written;
            }
            written += 1;
        }
        for (id, key) in [("oldest", 0), ("newest", keys - 1)] {
            if writeln!(out, "{}", call(json!(id), key)).is_err() {
                return written;
            }
            written += 1;
        }
        let _ = out.flush();
        written
    });
    let kept = [
        "0".to_owned(),
        (keys - 1).to_string(),
        "\"oldest\"".to_owned(),
        "\"newest\"".to_owned(),
    ];
    let mut texts = HashMap::new();
    let mut peak_kib = 0_u64;
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(200);
    let mut sampled = Instant::now();
    while answered < keys + 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(answer) = server.next(left.min(Duration::from_secs(30))) else {
            panic!(
                "{answered} of {} answered when the answers stopped\n{}",
                keys + 2,
                server.stderr_tail(4_000)
            );
        };
        assert_eq!(answer["result"]["isError"], false, "{}", cut(&answer));
        let id = answer["id"].to_string();
        if kept.contains(&id) {
            let text = answer["result"]["content"][0]["text"].as_str();
            texts.insert(
                id.trim_matches('"').to_owned(),
                text.unwrap_or("").to_owned(),
            );
        }
        answered += 1;
        if sampled.elapsed() >= Duration::from_millis(20) {
            peak_kib = peak_kib.max(server.rss_kib().unwrap_or_default());
            sampled = Instant::now();
        }
    }
    peak_kib = peak_kib.max(server.rss_kib().unwrap_or_default());
    let written = writer.join().expect("the writer thread");
    assert_eq!(written, keys + 2, "every call was written");
    KeySpray { peak_kib, texts }
}

/// An example server over HTTP on a free port (`args` after the binary), quiet in its log.
fn http_example(name: &str, args: &[&str]) -> support::HttpServer {
    let mut command = std::process::Command::new(support::example_binary(name));
    command.args(args).env("RUST_LOG", "warn");
    support::HttpServer::start(command, Duration::from_secs(30))
}

/// Runs `spray` on `clients` threads against `server` and samples its RSS until they end:
/// what each thread returned, and the peak RSS in KiB.
fn spray_sampling_rss<T: Send + 'static>(
    server: &support::HttpServer,
    clients: usize,
    spray: impl Fn(std::net::SocketAddr) -> T + Send + Sync + Clone + 'static,
) -> (Vec<T>, u64) {
    let addr = server.addr();
    let sprayers: Vec<_> = (0..clients)
        .map(|_| {
            let spray = spray.clone();
            thread::spawn(move || spray(addr))
        })
        .collect();
    let mut peak_kib = 0;
    while !sprayers.iter().all(thread::JoinHandle::is_finished) {
        peak_kib = support::rss_kib(server.pid())
            .unwrap_or_default()
            .max(peak_kib);
        thread::sleep(Duration::from_millis(50));
    }
    peak_kib = support::rss_kib(server.pid())
        .unwrap_or_default()
        .max(peak_kib);
    let results = sprayers
        .into_iter()
        .map(|sprayer| sprayer.join().expect("a sprayer"))
        .collect();
    (results, peak_kib)
}

/// At most the first 300 characters of an answer, for a failure's message.
fn cut(answer: &Value) -> String {
    answer.to_string().chars().take(300).collect()
}

/// The order number in `place_order`'s text (`order #12 for …`).
fn order_number(text: &str) -> Option<u64> {
    let rest = text.strip_prefix("order #")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// Holds a spray to the bound, and to eviction of the oldest: the last key replays its
/// order, the first (evicted) runs again as a new one.
fn assert_bounded_and_oldest_evicted(spray: &KeySpray, keys: usize, what: &str) {
    eprintln!("{what}: peak RSS {} KiB", spray.peak_kib);
    assert!(
        spray.peak_kib < SPRAY_RSS_BOUND_KIB,
        "RSS peaked at {} KiB under {what} (bound {SPRAY_RSS_BOUND_KIB} KiB)",
        spray.peak_kib
    );
    let order = |id: &str| {
        let text = spray.texts.get(id).map_or("", String::as_str);
        order_number(text).unwrap_or_else(|| panic!("no order number in {id}'s answer: {text:?}"))
    };
    assert_eq!(
        order("newest"),
        order(&(keys - 1).to_string()),
        "the newest key is still kept: its repeat replays the first order"
    );
    assert_ne!(
        order("oldest"),
        order("0"),
        "the oldest key was evicted: its repeat ran as a new order"
    );
}

#[test]
fn two_hundred_thousand_idempotency_keys_keep_the_server_under_100_mb() {
    const KEYS: usize = 200_000;
    let spray = spray_idempotency_keys(KEYS, 12);
    assert_bounded_and_oldest_evicted(&spray, KEYS, "200,000 idempotency keys");
}

#[test]
fn three_hundred_keys_of_256_kib_keep_the_server_under_100_mb() {
    const KEYS: usize = 300;
    let spray = spray_idempotency_keys(KEYS, 256 * 1024);
    assert_bounded_and_oldest_evicted(&spray, KEYS, "300 idempotency keys of 256 KiB");
}

/// The `_meta` of a 2026-07-28 request that declares the tasks extension.
fn tasks_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "task-spray", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    })
}

/// One 2026-07-28 request (no session) on a connection of its own: its JSON-RPC answer.
fn stateless(addr: std::net::SocketAddr, method: &str, name: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    support::post_mcp(addr, &headers, &body, Duration::from_secs(20)).message()
}

/// A report as a task, taking `seconds`.
fn report_task(addr: std::net::SocketAddr, seconds: f64) -> Value {
    stateless(
        addr,
        "tools/call",
        "quarterly_report",
        json!({"name": "quarterly_report", "arguments": {"quarter": 1, "seconds": seconds},
            "_meta": tasks_meta()}),
    )
}

#[test]
fn twenty_thousand_tasks_never_lock_the_store_and_keep_the_server_under_100_mb() {
    const TASKS: usize = 20_000;
    const CLIENTS: usize = 4;
    let server = http_example("report_task", &["--port", "0"]);
    let (newest, peak_kib) = spray_sampling_rss(&server, CLIENTS, |addr| {
        let mut last = String::new();
        for index in 0..TASKS / CLIENTS {
            let created = report_task(addr, 0.0);
            assert_eq!(
                created["result"]["resultType"],
                "task",
                "task {index}: every task is created: {}",
                cut(&created)
            );
            last = created["result"]["taskId"]
                .as_str()
                .unwrap_or("")
                .to_owned();
        }
        last
    });
    let addr = server.addr();
    eprintln!("{TASKS} tasks: peak RSS {peak_kib} KiB");
    assert!(
        peak_kib < SPRAY_RSS_BOUND_KIB,
        "RSS peaked at {peak_kib} KiB under {TASKS} tasks (bound {SPRAY_RSS_BOUND_KIB} KiB)"
    );
    // The newest tasks are still there, with their results. The last one a client created
    // may still be finishing as the spray ends (its run is a spawn away from its creation):
    // each is asked until it has completed, for at most 10 s.
    for id in &newest {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let got = loop {
            let got = stateless(
                addr,
                "tasks/get",
                id,
                json!({"taskId": id, "_meta": tasks_meta()}),
            );
            if got["result"]["status"] != "working" || std::time::Instant::now() > deadline {
                break got;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(got["result"]["status"], "completed", "{}", cut(&got));
    }
    // Another client, after the spray: its task is created.
    let after = report_task(addr, 0.0);
    assert_eq!(after["result"]["resultType"], "task", "{}", cut(&after));
}

/// `slow_compute` taking `seconds`, in `session`: its answer.
fn slow_compute(addr: std::net::SocketAddr, session: &str, id: usize, seconds: f64) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "slow_compute", "arguments": {"seconds": seconds}}});
    support::post_mcp(
        addr,
        &[("Mcp-Session-Id", session)],
        &call.to_string(),
        Duration::from_secs(20),
    )
    .message()
}

/// The id of the task an answer created, if it created one.
fn created_task(answer: &Value) -> Option<&str> {
    answer["result"]["taskId"].as_str()
}

#[test]
fn one_session_cannot_take_every_task_and_its_extra_call_runs_as_an_ordinary_call() {
    const PER_CALLER: usize = 100;
    let server = http_example("conformance", &["--port", "0"]);
    let addr = server.addr();
    let hog = tasks_session(addr, "task-hog");
    for id in 0..PER_CALLER {
        let answer = slow_compute(addr, &hog, id, 60.0);
        assert!(
            created_task(&answer).is_some(),
            "task {id}: {}",
            cut(&answer)
        );
    }
    // Over its cap: the tool's tasking is optional, so the call runs as an ordinary call.
    let extra = slow_compute(addr, &hog, PER_CALLER, 0.0);
    assert!(created_task(&extra).is_none(), "{}", cut(&extra));
    assert_eq!(
        extra["result"]["content"][0]["text"],
        "Computed after 0 seconds",
        "{}",
        cut(&extra)
    );
    // Another client still gets its task.
    let other = tasks_session(addr, "task-hog");
    let answer = slow_compute(addr, &other, 0, 0.0);
    assert!(created_task(&answer).is_some(), "{}", cut(&answer));
}

#[test]
fn two_thousand_sessions_keep_the_server_under_100_mb() {
    const SESSIONS: usize = 2_000;
    const CLIENTS: usize = 4;
    let server = http_example("faults", &["--http", "0"]);
    let (opened, peak_kib) = spray_sampling_rss(&server, CLIENTS, |addr| {
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"session-spray","version":"0"}}}"#;
        let mut opened = 0;
        for _ in 0..SESSIONS / CLIENTS {
            let answer = support::post_mcp(addr, &[], init, Duration::from_secs(20));
            match answer.status {
                200 => opened += 1,
                // Over `max_sessions` (1024): refused, as the guide's bounds say.
                503 => {}
                other => panic!("initialize answered {other}: {answer:?}"),
            }
        }
        opened
    });
    let opened: usize = opened.into_iter().sum();
    eprintln!("{SESSIONS} initializes, {opened} sessions: peak RSS {peak_kib} KiB");
    assert_eq!(opened, 1024, "the sessions are capped at max_sessions");
    assert!(
        peak_kib < SPRAY_RSS_BOUND_KIB,
        "RSS peaked at {peak_kib} KiB under {SESSIONS} initializes (bound {SPRAY_RSS_BOUND_KIB} KiB)"
    );
}
