//! The process's life over stdio: start-up checks that refuse to serve (exit 78), a fatal
//! error that ends it (exit 70, with its log event), stdin closing while a call hangs (exit
//! 0 within the grace period, the handler dropped), and a cancelled call (its `Drop` runs,
//! no answer for its id, the server goes on).

use crate::support;

use std::{
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::stdio_peer::StdioPeer;

/// The faults example over stdio (`RUST_LOG=info`), killed however a test ends.
fn spawn(args: &[&str]) -> StdioPeer {
    spawn_logging(args, "info")
}

/// The faults example with `RUST_LOG` set to `filter`.
fn spawn_logging(args: &[&str], filter: &str) -> StdioPeer {
    StdioPeer::spawn(
        &support::example_binary("faults"),
        args,
        &[("RUST_LOG", filter)],
    )
}

/// Waits for the process to exit; its code and how long it took.
fn wait_exit(server: &mut StdioPeer, limit: Duration) -> (Option<i32>, Duration) {
    let started = Instant::now();
    let status = server.wait_exit(limit);
    (status.and_then(|status| status.code()), started.elapsed())
}

/// All of stderr once the process has ended (or what came within 2 s).
fn stderr(server: &StdioPeer) -> String {
    server.stderr_to_end(Duration::from_secs(2))
}

#[test]
fn a_missing_environment_variable_refuses_to_start_with_78() {
    let mut server = spawn(&["--require-env", "FUSION_TEST_MISSING_API_KEY"]);
    let (code, _) = wait_exit(&mut server, Duration::from_secs(10));
    let stderr = stderr(&server);
    assert_eq!(code, Some(78), "{stderr}");
    assert!(stderr.contains("FUSION_TEST_MISSING_API_KEY"), "{stderr}");
    assert!(
        stderr.contains("faults: cannot start"),
        "start-up errors name the server: {stderr}"
    );
}

#[test]
fn a_failing_setup_step_refuses_to_start_with_78() {
    let mut server = spawn(&["--fail-setup"]);
    let (code, _) = wait_exit(&mut server, Duration::from_secs(10));
    let stderr = stderr(&server);
    assert_eq!(code, Some(78), "{stderr}");
    assert!(
        stderr.contains("credentials file is unreadable"),
        "{stderr}"
    );
}

/// Calls the tool that fails fatally; its answer and the server's stderr, once the server
/// has exited with 70.
fn call_fatal(mut server: StdioPeer) -> (Value, String) {
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "fail_with", "arguments": {"kind": "fatal"}}}));
    let answer = server
        .next(Duration::from_secs(10))
        .expect("the fatal call is answered");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let (code, _) = wait_exit(&mut server, Duration::from_secs(10));
    let stderr = stderr(&server);
    assert_eq!(code, Some(70), "{stderr}");
    (answer, stderr)
}

#[test]
fn a_fatal_error_logs_one_event_and_exits_70() {
    let (_, stderr) = call_fatal(spawn(&[]));
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
    let (answer, stderr) = call_fatal(spawn_logging(args, filter));
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
    let mut server = spawn(&[]);
    server.initialize();
    server.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}));
    thread::sleep(Duration::from_millis(200));
    drop(server.take_stdin());
    // The default grace is 5 s; the process may also be forced out 3 s later. The bound
    // leaves a loaded machine 4 s on top of both, and a process that ignored the grace
    // would still be running at the 20 s wait.
    let (code, took) = wait_exit(&mut server, Duration::from_secs(20));
    let stderr = stderr(&server);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < Duration::from_secs(12), "took {took:?}");
}

#[test]
fn a_cancelled_call_is_dropped_and_not_answered() {
    let mut server = spawn(&[]);
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
    drop(server.take_stdin());
    let (code, _) = wait_exit(&mut server, Duration::from_secs(15));
    let stderr = stderr(&server);
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
