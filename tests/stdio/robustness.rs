//! The stdio server against hostile input, over a real process boundary.
//!
//! Spawns `examples/faults` (`src/faults.rs`: tools that hang, sleep, print to stdout,
//! echo, panic and fail fatally) and writes raw lines to its stdin: malformed JSON, JSON
//! that is not JSON-RPC, an unknown method, a panic, a cancelled call, 200 concurrent
//! calls, a 10 MB argument, a line over the size limit, 10,000-deep nesting, stray bytes,
//! a tool that prints. Each request gets exactly one answer (none for the cancelled one),
//! the server answers a ping after each, and every line on its stdout is a JSON-RPC
//! message. Then stdin closes while `hang` runs: the process must exit with 0 within the
//! shutdown grace (5 s) plus a margin, dropping the call. Other tests: answers go out
//! while the rest of a burst is served (a later call blocks the server's thread until the
//! test has read the first answers); a call running when stdin closes is answered first; a fatal error is answered, then the process exits 70;
//! the server works over a regular file and over a socket pair instead of pipes.
//!
//! Needs the built example (`cargo build --examples`; `cargo test` builds it). Every wait
//! is bounded and the child is killed on every exit path.
//!
//! The throughput check is `#[ignore]`d (examples are not rebuilt by `cargo test --test`):
//! `cargo build --release --examples && cargo test --release --test robustness --
//! --ignored --nocapture throughput`.

use crate::support;

use std::{
    io::{BufRead as _, BufReader, BufWriter, Read, Write},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::stdio_peer::StdioPeer;

/// The server's default shutdown grace, and the margin the test allows on top of it.
const GRACE: Duration = Duration::from_secs(5);
const MARGIN: Duration = Duration::from_secs(4);

/// The `faults` example over stdio, strict (a stdout line that is not JSON-RPC, or stdout
/// closing while an answer is awaited, fails the test at once), killed when dropped and by a
/// watchdog after [`PROCESS_LIMIT`].
fn faults() -> StdioPeer {
    StdioPeer::spawn(&support::example_binary("faults"), &[], &[])
        .strict()
        .kill_after(PROCESS_LIMIT)
}

/// The handshake, with the faults server's name checked.
fn initialize(server: &mut StdioPeer) {
    let init = server.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "faults", "{init}");
}

/// Closes stdin and waits (bounded) for the process to exit.
fn close_and_wait(server: &mut StdioPeer, limit: Duration) -> (Option<ExitStatus>, Duration) {
    drop(server.take_stdin());
    let started = Instant::now();
    let status = server.wait_exit(limit);
    (status, started.elapsed())
}

fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"].as_i64().unwrap_or(0)
}

#[test]
fn hostile_input_gets_one_answer_each_and_the_server_survives() {
    let mut server = faults();
    // Before the handshake: a stray notification (rmcp alone exits with 1 on it) and a
    // blank line are ignored, garbage is answered.
    server.write(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n\n");
    server.write(b"garbage before the handshake\n");
    assert_eq!(error_code(&server.answer(&Value::Null)), -32700);
    initialize(&mut server);

    // Malformed JSON: a parse error with a null id, written by the transport.
    server.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\n");
    let answer = server.answer(&Value::Null);
    assert_eq!(error_code(&answer), -32700, "{answer}");
    server.write(b"this is not json\n");
    assert_eq!(error_code(&server.answer(&Value::Null)), -32700);
    server.alive("after malformed JSON");

    // Valid JSON that is not JSON-RPC: an invalid request, with the id when there is one.
    server.write(b"{\"hello\":\"world\"}\n");
    assert_eq!(error_code(&server.answer(&Value::Null)), -32600);
    server.write(b"[1,2,3]\n");
    assert_eq!(error_code(&server.answer(&Value::Null)), -32600);
    server.write(b"{\"id\":\"no-version\",\"method\":\"ping\"}\n");
    assert_eq!(error_code(&server.answer(&json!("no-version"))), -32600);
    server.alive("after JSON that is not JSON-RPC");

    // An unknown method.
    let answer = server.request(json!("unknown"), "no/such/method", json!({}));
    assert_eq!(error_code(&answer), -32601, "{answer}");
    server.alive("after an unknown method");

    // A panicking tool, then a normal call.
    let answer = server.call(json!("explode"), "explode", json!({}));
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let answer = server.call(json!("after-crash"), "echo", json!({"text": "still here"}));
    assert_eq!(text(&answer), "still here", "{answer}");

    // A slow call, cancelled, then a normal call: no answer for the cancelled id.
    server.send(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 1500}}}),
    );
    let sent = Instant::now();
    thread::sleep(Duration::from_millis(100));
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": "slow", "reason": "the user gave up"}}),
    );
    let answer = server.call(json!("after-cancel"), "echo", json!({"text": "next"}));
    assert_eq!(text(&answer), "next", "{answer}");

    // 200 concurrent calls, in one write.
    let mut burst = Vec::new();
    for i in 0..200 {
        let call = json!({"jsonrpc": "2.0", "id": 1000 + i, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": format!("call {i}")}}});
        serde_json::to_writer(&mut burst, &call).expect("serializes");
        burst.push(b'\n');
    }
    server.write(&burst);
    for i in 0..200 {
        let answer = server.answer(&json!(1000 + i));
        assert_eq!(text(&answer), format!("call {i}"), "{answer}");
    }
    server.alive("after 200 concurrent calls");

    // The cancelled call's handler has finished by now (1.5 s); its answer must not come.
    let settle = Duration::from_millis(1500 + 500).saturating_sub(sent.elapsed());
    let unasked = server.unasked(settle);
    assert!(
        !unasked.iter().any(|a| a["id"] == "slow"),
        "the cancelled call was answered: {unasked:?}"
    );

    // A 10 MB string argument: one answer (the argument limits reject it as a tool error).
    let big = "a".repeat(10 * 1024 * 1024);
    let answer = server.call(json!("big"), "echo", json!({"text": big}));
    assert!(
        answer.get("result").is_some(),
        "{}",
        &answer.to_string()[..300.min(answer.to_string().len())]
    );
    server.alive("after a 10 MB argument");

    // A line over the 16 MiB limit: answered with the id read from its start, skipped.
    let huge = json!({"jsonrpc": "2.0", "id": "huge", "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "b".repeat(17 * 1024 * 1024)}}});
    server.send(&huge);
    let answer = server.answer(&json!("huge"));
    assert_eq!(error_code(&answer), -32600, "{answer}");
    server.alive("after a line over the size limit");

    // 10,000-deep nesting: answered, not silence.
    let deep = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"deep\",\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":{}{}}}}}}}\n",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    server.write(deep.as_bytes());
    let answer = server.answer(&json!("deep"));
    assert_eq!(error_code(&answer), -32602, "{answer}");
    server.alive("after 10,000-deep nesting");

    // Stray bytes, and a line with a byte order mark (read as the message after it).
    server.write(b"\x00\xff\xfe\x01 garbage \x1b[31m\n");
    assert_eq!(error_code(&server.answer(&Value::Null)), -32700);
    server.write(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"bom\",\"method\":\"ping\"}\n");
    assert_eq!(server.answer(&json!("bom"))["result"], json!({}));
    server.alive("after stray bytes");

    // A tool that prints to stdout: the protocol stream stays clean (the reader thread
    // fails the test on any line that is not JSON-RPC) and the text lands on stderr.
    let answer = server.call(json!("shout"), "shout", json!({"text": "quiet please"}));
    assert_eq!(text(&answer), "QUIET PLEASE", "{answer}");
    server.alive("after a tool printed to stdout");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !server.stderr().contains("SHOUTING ON STDOUT") && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(
        server.stderr().contains("SHOUTING ON STDOUT"),
        "the tool's output went nowhere"
    );

    // Nothing left over, and every id answered exactly once.
    let unasked = server.unasked(Duration::from_millis(200));
    assert!(unasked.is_empty(), "unexpected answers: {unasked:?}");
    assert_eq!(
        server.seen().get("null"),
        Some(&6),
        "id-less answers: {:?}",
        server.seen()
    );
    let repeated: Vec<_> = server
        .seen()
        .iter()
        .filter(|(id, count)| id.as_str() != "null" && **count != 1)
        .collect();
    assert!(repeated.is_empty(), "answered more than once: {repeated:?}");
    assert!(!server.seen().contains_key("\"slow\""));

    // stdin closes while `hang` runs: exit 0 within the grace plus a margin, the call dropped.
    server.send(
        &json!({"jsonrpc": "2.0", "id": "hang", "method": "tools/call",
        "params": {"name": "hang", "arguments": {}}}),
    );
    thread::sleep(Duration::from_millis(300));
    let (status, took) = close_and_wait(&mut server, GRACE + MARGIN);
    let stderr = server.stderr();
    let status = status.unwrap_or_else(|| {
        panic!(
            "the server did not exit within {:?} of stdin closing\n{stderr}",
            GRACE + MARGIN
        )
    });
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(
        took >= GRACE - Duration::from_millis(500),
        "exited after {took:?}, before the grace"
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    while !server.stderr().contains("hang dropped") && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    assert!(
        server.stderr().contains("hang dropped"),
        "{}",
        server.stderr()
    );
}

#[test]
fn a_call_running_when_stdin_closes_is_answered_before_exit() {
    let mut server = faults();
    initialize(&mut server);
    server.send(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 800}}}),
    );
    thread::sleep(Duration::from_millis(100));
    let (status, took) = close_and_wait(&mut server, GRACE + MARGIN);
    let stderr = server.stderr();
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    assert!(
        took < GRACE,
        "waited {took:?}: the grace is for calls still running"
    );
    let answer = server.answer(&json!("slow"));
    assert_eq!(text(&answer), "slept 800 ms", "{answer}");
}

/// Answers go out while the rest of what was read is served, not after all of it: 40
/// calls and then one whose handler blocks the server's thread arrive in one write; the
/// blocked handler waits for a file the test creates only once it has read the first 16
/// answers. A server that held its answers until the input ran dry would only write them
/// after the handler gave up ("timed out").
#[test]
fn answers_go_out_while_the_rest_of_the_input_is_served() {
    let mut server = faults();
    initialize(&mut server);
    let release = std::env::temp_dir().join(format!(
        "fusion-release-{}-{:?}",
        std::process::id(),
        Instant::now()
    ));
    let _ = std::fs::remove_file(&release);
    let mut flood = String::new();
    for id in 1..=40 {
        flood.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{id}\"}}}}}}\n"
        ));
    }
    let block = json!({"jsonrpc": "2.0", "id": "block", "method": "tools/call",
        "params": {"name": "block_until",
                   "arguments": {"path": release.to_string_lossy(), "max_ms": 20_000}}});
    flood.push_str(&format!("{block}\n"));
    assert!(server.write(flood.as_bytes()), "the server reads its input");
    for id in 1..=16 {
        let answer = server.answer_within(&json!(id), Duration::from_secs(10));
        let Some(answer) = answer else {
            panic!(
                "call {id} was not answered while a later call blocked the server\n--- stderr ---\n{}",
                server.stderr()
            );
        };
        assert_eq!(text(&answer), id.to_string(), "{answer}");
    }
    std::fs::write(&release, b"go").expect("the release file");
    let blocked = server.answer(&json!("block"));
    let _ = std::fs::remove_file(&release);
    assert_eq!(text(&blocked), "seen", "{blocked}");
    for id in 17..=40 {
        let answer = server.answer(&json!(id));
        assert_eq!(text(&answer), id.to_string(), "{answer}");
    }
    server.alive("after-the-flood");
}

#[test]
fn a_fatal_error_is_answered_then_the_process_exits_70() {
    let mut server = faults();
    initialize(&mut server);
    server.send(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
        "params": {"name": "slow", "arguments": {"ms": 300}}}),
    );
    let fatal = server.call(json!("fatal"), "fail_with", json!({"kind": "fatal"}));
    assert_eq!(fatal["result"]["isError"], true, "{fatal}");
    // The call in flight is still answered before the process goes.
    let slow = server.answer(&json!("slow"));
    assert_eq!(text(&slow), "slept 300 ms", "{slow}");
    let status = server.wait_exit(Duration::from_secs(10));
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(70),
        "{}",
        server.stderr()
    );
}

/// Requests for the file and socket tests: the handshake, a call, garbage, a printing tool.
fn script() -> Vec<u8> {
    let mut lines = vec![
        json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":"echo","method":"tools/call","params":{"name":"echo","arguments":{"text":"over a file"}}}),
        json!({"jsonrpc":"2.0","id":"shout","method":"tools/call","params":{"name":"shout","arguments":{"text":"x"}}}),
    ]
    .into_iter()
    .flat_map(|line| {
        let mut bytes = serde_json::to_vec(&line).expect("serializes");
        bytes.push(b'\n');
        bytes
    })
    .collect::<Vec<u8>>();
    lines.extend_from_slice(b"not json\n");
    lines
}

fn check_script_output(stdout: &[u8], stderr: &str) {
    let answers: Vec<Value> = stdout
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            serde_json::from_slice(line).unwrap_or_else(|e| {
                panic!(
                    "not JSON on stdout ({e}): {:?}\n{stderr}",
                    String::from_utf8_lossy(line)
                )
            })
        })
        .collect();
    let ids: Vec<String> = answers.iter().map(|a| a["id"].to_string()).collect();
    assert_eq!(ids.len(), 4, "{answers:?}\n{stderr}");
    for id in ["\"init\"", "\"echo\"", "\"shout\"", "null"] {
        assert!(
            ids.iter().any(|seen| seen == id),
            "no answer for {id}: {answers:?}"
        );
    }
    let echo = answers
        .iter()
        .find(|a| a["id"] == "echo")
        .expect("echo answered");
    assert_eq!(text(echo), "over a file");
}

#[test]
fn serves_over_regular_files() {
    let dir = std::env::temp_dir().join(format!("fusion-robustness-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("in.jsonl");
    let output = dir.join("out.jsonl");
    std::fs::write(&input, script()).expect("write the requests");
    let mut command = Command::new(support::example_binary("faults"));
    command
        .stdin(std::fs::File::open(&input).expect("open"))
        .stdout(std::fs::File::create(&output).expect("create"));
    command.stderr(std::fs::File::create(dir.join("err.log")).expect("create"));
    let mut child = KillOnDrop::new(command.spawn().expect("spawn examples/faults"));
    let started = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = child.0.try_wait() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(20) {
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let stdout = std::fs::read(&output).expect("read the answers");
    let stderr = std::fs::read_to_string(dir.join("err.log")).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    check_script_output(&stdout, &stderr);
    assert!(stderr.contains("SHOUTING ON STDOUT"), "{stderr}");
}

#[cfg(unix)]
#[test]
fn serves_over_sockets() {
    use std::os::{fd::OwnedFd, unix::net::UnixStream};

    // Node-based clients (libuv) give their servers socket pairs, not pipes.
    let (mut ours, theirs) = UnixStream::pair().expect("a socket pair");
    let theirs_out = theirs.try_clone().expect("clone");
    let mut command = Command::new(support::example_binary("faults"));
    command
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)))
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn");
    // The parent's copies of the child's ends must go, or EOF never comes.
    drop(command);
    let mut stderr_pipe = child.stderr.take().expect("stderr");
    let mut child = KillOnDrop::new(child);
    ours.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    ours.write_all(&script()).expect("write");
    ours.shutdown(std::net::Shutdown::Write)
        .expect("half-close");
    let mut stdout = Vec::new();
    let _ = ours.read_to_end(&mut stdout);
    let started = Instant::now();
    let status = loop {
        if let Ok(Some(status)) = child.0.try_wait() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(10) {
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if status.is_some() {
        let _ = stderr_pipe.read_to_string(&mut stderr);
    }
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{stderr}");
    check_script_output(&stdout, &stderr);
}

/// Throughput of `echo` calls with 32 in flight, over our transport and over rmcp's
/// `stdio_pipes()` (selected with `FUSION_STDIO_TRANSPORT=rmcp`), same binary; over pipes
/// (as Python clients spawn servers) and over a socket pair (as Node clients do, where
/// `stdio_pipes()` falls back to tokio's blocking stdin/stdout).
#[test]
#[ignore = "a measurement: cargo build --release --examples && cargo test --release --test robustness -- --ignored --nocapture throughput"]
fn throughput() {
    const CALLS: usize = 100_000;
    const IN_FLIGHT: usize = 32;
    for (transport, medium) in [
        ("fusion", "pipes"),
        ("rmcp", "pipes"),
        ("fusion", "socket"),
        ("rmcp", "socket"),
    ] {
        let mut command = Command::new(support::example_binary("faults"));
        command
            .env("FUSION_STDIO_TRANSPORT", transport)
            .env("RUST_LOG", "warn")
            .stderr(Stdio::null());
        // The watchdog in `KillOnDrop` bounds the blocking reads and writes below.
        let (mut child, to_server, from_server): (KillOnDrop, Box<dyn Write>, Box<dyn Read>) =
            if medium == "pipes" {
                command.stdin(Stdio::piped()).stdout(Stdio::piped());
                let mut child = KillOnDrop::new(command.spawn().expect("spawn examples/faults"));
                let stdin = child.0.stdin.take().expect("stdin");
                let stdout = child.0.stdout.take().expect("stdout");
                (child, Box::new(stdin), Box::new(stdout))
            } else {
                socket_child(command)
            };
        let pid = child.0.id();
        let mut writer = BufWriter::new(to_server);
        let mut reader = BufReader::new(from_server);
        let mut line = String::new();
        writeln!(
            writer,
            "{}",
            json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{
                "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}})
        )
        .expect("write");
        writeln!(
            writer,
            "{}",
            json!({"jsonrpc":"2.0","method":"notifications/initialized"})
        )
        .expect("write");
        writer.flush().expect("flush");
        reader.read_line(&mut line).expect("the initialize answer");
        let request = |id: usize| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"hello {id}\"}}}}}}\n"
            )
        };
        let cpu_before = cpu_ticks(pid);
        let started = Instant::now();
        let mut sent = 0;
        while sent < IN_FLIGHT {
            writer.write_all(request(sent).as_bytes()).expect("write");
            sent += 1;
        }
        writer.flush().expect("flush");
        for _ in 0..CALLS {
            line.clear();
            let read = reader.read_line(&mut line).expect("an answer");
            assert!(read > 0 && line.contains("\"result\""), "{line}");
            if sent < CALLS {
                writer.write_all(request(sent).as_bytes()).expect("write");
                sent += 1;
            }
            // Flush only when no answer is buffered, so requests go out in batches, as
            // answers do.
            if reader.buffer().is_empty() {
                writer.flush().expect("flush");
            }
        }
        let wall = started.elapsed();
        let cpu = cpu_ticks(pid).saturating_sub(cpu_before);
        let cpu_us_per_call = cpu as f64 * 1e6 / clock_ticks_per_second() / CALLS as f64;
        println!(
            "{transport:>6} over {medium:<6}: {CALLS} echo calls, {IN_FLIGHT} in flight: {:.3} s, {:.0} calls/s, server CPU {:.1} µs/call",
            wall.as_secs_f64(),
            CALLS as f64 / wall.as_secs_f64(),
            cpu_us_per_call
        );
        drop(child.0.stdin.take());
    }
}

/// Spawns `command` with a socket pair as its stdin and stdout.
#[cfg(unix)]
fn socket_child(mut command: Command) -> (KillOnDrop, Box<dyn Write>, Box<dyn Read>) {
    use std::os::{fd::OwnedFd, unix::net::UnixStream};
    let (ours, theirs) = UnixStream::pair().expect("a socket pair");
    let theirs_out = theirs.try_clone().expect("clone");
    command
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(theirs_out)));
    let child = KillOnDrop::new(command.spawn().expect("spawn examples/faults"));
    let writer = ours.try_clone().expect("clone");
    (child, Box::new(writer), Box::new(ours))
}

#[cfg(not(unix))]
fn socket_child(_command: Command) -> (KillOnDrop, Box<dyn Write>, Box<dyn Read>) {
    unimplemented!("socket pairs are a Unix thing")
}

/// A child process killed when dropped, and by a watchdog after [`PROCESS_LIMIT`]: blocking
/// reads and writes on its pipes then fail instead of hanging the test.
struct KillOnDrop(Child, Arc<AtomicBool>);

/// No test process may live longer than this.
const PROCESS_LIMIT: Duration = Duration::from_secs(180);

impl KillOnDrop {
    fn new(child: Child) -> Self {
        let stood_down = support::process::watchdog(child.id(), PROCESS_LIMIT);
        Self(child, stood_down)
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Before the child is reaped, so the watchdog never kills a recycled pid.
        self.1.store(true, Ordering::SeqCst);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The server's user + system CPU time, in clock ticks (Linux `/proc`; 0 elsewhere).
fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command name (which may hold spaces) start at the state, field 3.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| {
        fields
            .get(n - 3)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(14) + field(15)
}

fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100.0)
}
