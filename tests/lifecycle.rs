//! The process's life over stdio: start-up checks that refuse to serve (exit 78), a fatal
//! error that ends it (exit 70, with its log event), stdin closing while a call hangs (exit
//! 0 within the grace period, the handler dropped), and a cancelled call (its `Drop` runs,
//! no answer for its id, the server goes on).

mod support;

use std::{
    io::{BufRead, BufReader, Write},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// Kills the server however a test ends.
struct Faults {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Faults {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Faults {
    fn spawn(args: &[&str]) -> Self {
        Self::spawn_logging(args, "info")
    }

    /// The server with `RUST_LOG` set to `filter`.
    fn spawn_logging(args: &[&str], filter: &str) -> Self {
        let binary = support::example_binary("faults");
        let mut child = Command::new(&binary)
            .args(args)
            .env("RUST_LOG", filter)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr_pipe = child.stderr.take().expect("piped stderr");
        let (line_tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value =
                    serde_json::from_str(&line).unwrap_or_else(|_| json!({"not_json": line}));
                if line_tx.send(value).is_err() {
                    break;
                }
            }
        });
        let (err_tx, stderr) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                if err_tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            stderr,
        }
    }

    fn send(&mut self, message: &Value) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(format!("{message}\n").as_bytes());
        }
    }

    fn initialize(&mut self) {
        self.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
        let answer = self
            .next(Duration::from_secs(10))
            .expect("an initialize answer");
        assert_eq!(answer["id"], 0, "{answer}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn next(&self, wait: Duration) -> Option<Value> {
        self.lines.recv_timeout(wait).ok()
    }

    /// Waits for the process to exit; its code and how long it took.
    fn wait_exit(&mut self, limit: Duration) -> (Option<i32>, Duration) {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return (status.code(), started.elapsed());
            }
            if started.elapsed() > limit {
                return (None, started.elapsed());
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// All stderr lines so far (after the process ended, all of them).
    fn stderr(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut text = String::new();
        while let Ok(line) = self
            .stderr
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            text.push_str(&line);
            text.push('\n');
        }
        text
    }
}

#[test]
fn a_missing_environment_variable_refuses_to_start_with_78() {
    let mut server = Faults::spawn(&["--require-env", "FUSION_TEST_MISSING_API_KEY"]);
    let (code, _) = server.wait_exit(Duration::from_secs(10));
    let stderr = server.stderr();
    assert_eq!(code, Some(78), "{stderr}");
    assert!(stderr.contains("FUSION_TEST_MISSING_API_KEY"), "{stderr}");
    assert!(stderr.contains("cannot start"), "{stderr}");
}

#[test]
fn a_failing_setup_step_refuses_to_start_with_78() {
    let mut server = Faults::spawn(&["--fail-setup"]);
    let (code, _) = server.wait_exit(Duration::from_secs(10));
    let stderr = server.stderr();
    assert_eq!(code, Some(78), "{stderr}");
    assert!(
        stderr.contains("credentials file is unreadable"),
        "{stderr}"
    );
}

/// Calls the tool that fails fatally; its answer and the server's stderr, once the server
/// has exited with 70.
fn call_fatal(mut server: Faults) -> (Value, String) {
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fail_with", "arguments": {"kind": "fatal"}}}));
    let answer = server
        .next(Duration::from_secs(10))
        .expect("the fatal call is answered");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let (code, _) = server.wait_exit(Duration::from_secs(10));
    let stderr = server.stderr();
    assert_eq!(code, Some(70), "{stderr}");
    (answer, stderr)
}

#[test]
fn a_fatal_error_logs_one_event_and_exits_70() {
    let (_, stderr) = call_fatal(Faults::spawn(&[]));
    let fatal: Vec<Value> = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["target"] == "fusion::fatal")
        .collect();
    assert_eq!(fatal.len(), 1, "{stderr}");
    assert_eq!(fatal[0]["fields"]["tool"], "fail_with");
    assert!(
        fatal[0]["fields"]["source_chain"]
            .as_str()
            .is_some_and(|c| c.contains("revoked"))
    );
    // The subscriber took the event: no second, plain copy.
    assert!(
        !stderr.contains("fusion: fatal error"),
        "a plain line next to the event: {stderr}"
    );
}

/// A fatal error whose event no subscriber takes still says why the process ended: one
/// plain stderr line with the tool, the error, the correlation id and the exit code.
fn assert_fatal_is_loud(args: &[&str], filter: &str) {
    let (answer, stderr) = call_fatal(Faults::spawn_logging(args, filter));
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| line.starts_with("fusion: fatal error"))
        .collect();
    assert_eq!(lines.len(), 1, "one plain line: {stderr}");
    let line = lines[0];
    assert!(line.contains("tool `fail_with`"), "{line}");
    assert!(line.contains("credentials were revoked"), "{line}");
    assert!(line.contains("exiting with code 70"), "{line}");
    let id = line
        .split("correlation id ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_default();
    assert!(!id.is_empty(), "{line}");
    assert!(
        text.contains(id),
        "the model's message carries the same id `{id}`: {text}"
    );
}

#[test]
fn a_fatal_error_without_a_subscriber_prints_one_line() {
    assert_fatal_is_loud(&["--no-log"], "info");
}

#[test]
fn a_fatal_error_filtered_out_of_the_log_prints_one_line() {
    assert_fatal_is_loud(&[], "off");
}

#[test]
fn stdin_closing_while_a_call_hangs_exits_within_the_grace_period() {
    let mut server = Faults::spawn(&[]);
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}));
    thread::sleep(Duration::from_millis(200));
    server.stdin.take();
    // The default grace is 5 s; the process may also be forced out 3 s later.
    let (code, took) = server.wait_exit(Duration::from_secs(15));
    let stderr = server.stderr();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < Duration::from_secs(9), "took {took:?}");
}

#[test]
fn a_cancelled_call_is_dropped_and_not_answered() {
    let mut server = Faults::spawn(&[]);
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": "doomed", "method": "tools/call", "params": {"name": "hang", "arguments": {}}}));
    thread::sleep(Duration::from_millis(200));
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "doomed", "reason": "test"}}));
    server.send(&json!({"jsonrpc": "2.0", "id": "after", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "next"}}}));
    let answer = server
        .next(Duration::from_secs(10))
        .expect("the next call is answered");
    assert_eq!(
        answer["id"], "after",
        "no answer for the cancelled id: {answer}"
    );
    assert!(
        server.next(Duration::from_millis(500)).is_none(),
        "nothing else is sent"
    );
    server.stdin.take();
    let (code, _) = server.wait_exit(Duration::from_secs(15));
    let stderr = server.stderr();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("hang dropped"),
        "the handler's Drop ran: {stderr}"
    );
    let cancelled = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .any(|event| {
            event["target"] == "fusion::call" && event["fields"]["outcome"] == "cancelled"
        });
    assert!(cancelled, "the call log says cancelled: {stderr}");
}
