//! The JSON log of `log::init` over a real process: the same lines as before fusion wrote
//! its own events (the fixtures were captured from tracing-subscriber's JSON formatter,
//! field for field and byte for byte, the timestamp, latency and correlation id aside),
//! and nothing lost when the process ends on SIGTERM or on a fatal error. On a terminal (a
//! pty from util-linux's `script`) the log is text lines instead; `FUSION_LOG_FORMAT`
//! chooses either way.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::stdio_peer::StdioPeer;

/// The requests the fixtures answer, one JSON-RPC message a line.
const REQUESTS: &str = include_str!("../fixtures/call_log_requests.jsonl");

/// What the quickstart logged for them before, with the default filter (`info,rmcp=warn`).
const BEFORE: &str = include_str!("../fixtures/call_log_before.jsonl");

/// ... and with `RUST_LOG=info`, where rmcp's span puts a `spans` list on each event. (rmcp's
/// own "client initialized" line is gone since fusion handles `notifications/initialized`
/// itself, for Streamable HTTP's calls served past rmcp.)
const BEFORE_INFO: &str = include_str!("../fixtures/call_log_before_info.jsonl");

const EXIT_TIMEOUT: Duration = Duration::from_secs(20);

/// A log line with what differs from run to run (the time, the latency, the correlation
/// id's process part) replaced, after checking that the line is exactly serde_json's
/// compact form of itself (so comparing values compares the bytes).
fn normalized(line: &str) -> String {
    let mut event: Value =
        serde_json::from_str(line).unwrap_or_else(|error| panic!("not JSON ({error}): {line}"));
    assert_eq!(event.to_string(), line, "not in compact form");
    let timestamp = event["timestamp"].as_str().unwrap_or_default();
    assert!(
        timestamp.len() == 27 && timestamp.ends_with('Z') && timestamp.as_bytes()[19] == b'.',
        "{timestamp}"
    );
    event["timestamp"] = json!("<timestamp>");
    let fields = &mut event["fields"];
    if fields.get("latency_us").is_some() {
        assert!(fields["latency_us"].is_u64(), "{line}");
        fields["latency_us"] = json!(0);
    }
    if let Some(id) = fields.get("correlation_id").and_then(Value::as_str) {
        let suffix = id.rsplit_once('-').map_or("", |(_, n)| n).to_owned();
        fields["correlation_id"] = json!(format!("<process>-{suffix}"));
    }
    // A panic's location moves with every edit of the quickstart.
    for key in ["error", "source_chain"] {
        if let Some(text) = fields.get(key).and_then(Value::as_str) {
            fields[key] = json!(without_line_numbers(text, "examples/quickstart.rs:"));
        }
    }
    event.to_string()
}

/// `text` with the `line:column` after each `file` replaced by `<line>`.
fn without_line_numbers(text: &str, file: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(file) {
        let after = at + file.len();
        out.push_str(&rest[..after]);
        out.push_str("<line>");
        rest = rest[after..].trim_start_matches(|c: char| c.is_ascii_digit() || c == ':');
    }
    out.push_str(rest);
    out
}

fn json_lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|line| line.starts_with('{'))
        .map(normalized)
        .collect()
}

/// Sends the fixture's requests to the quickstart, one at a time, and returns its stderr.
fn log_of_the_requests(filter: &str) -> String {
    log_of_the_requests_with(&[("RUST_LOG", filter), ("RUST_BACKTRACE", "0")])
}

/// [`log_of_the_requests`] with these environment variables.
fn log_of_the_requests_with(env: &[(&str, &str)]) -> String {
    let mut server = StdioPeer::spawn(&support::example_binary("quickstart"), &[], env);
    for line in REQUESTS.lines() {
        let request: Value = serde_json::from_str(line).expect("a fixture request");
        assert!(server.send(&request));
        if let Some(id) = request.get("id") {
            server.answer(id);
        }
    }
    drop(server.take_stdin());
    let status = server.wait_exit(EXIT_TIMEOUT);
    assert_eq!(status.and_then(|status| status.code()), Some(0));
    server.stderr_to_end(Duration::from_secs(5))
}

#[test]
fn fusions_events_are_written_as_tracing_subscriber_wrote_them() {
    let stderr = log_of_the_requests("info,rmcp=warn");
    assert_eq!(json_lines(&stderr), json_lines(BEFORE), "{stderr}");
}

#[test]
fn events_inside_a_span_are_written_as_before_too() {
    let stderr = log_of_the_requests("info");
    assert_eq!(json_lines(&stderr), json_lines(BEFORE_INFO), "{stderr}");
}

/// How many call events the fixture's log has.
fn calls_in_fixture() -> usize {
    BEFORE
        .lines()
        .filter(|line| line.contains("\"target\":\"fusion::call\""))
        .count()
}

/// The text log's call lines in `output`: each names the tool, its outcome and latency.
fn text_call_lines(output: &str) -> Vec<&str> {
    let lines: Vec<&str> = output
        .lines()
        .filter(|line| line.contains("fusion::call:"))
        .collect();
    for line in &lines {
        for field in ["tool=", "outcome=", "latency_us="] {
            assert!(line.contains(field), "{field} missing: {line}");
        }
    }
    lines
}

/// What the terminal shows when the fixture's requests are typed into the quickstart on a
/// pty (`script`), with these environment variables: its answers, its log, the echoed
/// requests. `None` (skipped, loudly) without `script`, except under `CI=true`.
fn terminal_output(env: &[(&str, &str)]) -> Option<String> {
    let script = std::path::Path::new("/usr/bin/script");
    if !script.is_file() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "util-linux's script is required under CI=true"
        );
        eprintln!("SKIPPED: no /usr/bin/script (util-linux) for a terminal");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("fusion-log-pty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let input = dir.join(format!("input-{}", env.len()));
    // The requests, then end-of-file as a terminal types it (Ctrl-D).
    std::fs::write(&input, format!("{REQUESTS}\u{4}")).expect("the input file");
    let binary = support::example_binary("quickstart");
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!(
            "exec {} -qec '{}' /dev/null < '{}'",
            script.display(),
            binary.display(),
            input.display()
        ))
        .env("RUST_LOG", "info,rmcp=warn")
        .env("RUST_BACKTRACE", "0")
        .env_remove("FUSION_LOG_FORMAT");
    for (name, value) in env {
        command.env(name, value);
    }
    let out = support::run_with_timeout(command, EXIT_TIMEOUT);
    let _ = std::fs::remove_file(&input);
    assert!(out.success(), "{}", out.report());
    Some(without_colors(&out.stdout.replace('\r', "")))
}

/// `text` without the ANSI colour sequences (`ESC [ ... m`) a terminal log carries.
fn without_colors(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Up to and including the final `m`.
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn a_terminal_reads_text_lines_and_a_pipe_gets_json() {
    let Some(terminal) = terminal_output(&[]) else {
        return;
    };
    assert_eq!(
        text_call_lines(&terminal).len(),
        calls_in_fixture(),
        "{terminal}"
    );
    assert!(
        !terminal.contains("{\"timestamp\""),
        "no JSON on a terminal: {terminal}"
    );
    // The same quickstart with stderr on a pipe (as MCP clients run it): JSON.
    let piped = log_of_the_requests("info,rmcp=warn");
    assert_eq!(json_lines(&piped), json_lines(BEFORE), "{piped}");
}

#[test]
fn fusion_log_format_overrides_either_way() {
    let text = log_of_the_requests_with(&[
        ("RUST_LOG", "info,rmcp=warn"),
        ("FUSION_LOG_FORMAT", "text"),
    ]);
    assert_eq!(text_call_lines(&text).len(), calls_in_fixture(), "{text}");
    assert!(!text.contains("{\"timestamp\""), "{text}");
    let Some(terminal) = terminal_output(&[("FUSION_LOG_FORMAT", "json")]) else {
        return;
    };
    // Typed in at once, the calls run together: their events, in any order, are the
    // fixture's, byte for byte.
    let calls = |lines: Vec<String>| {
        let mut calls: Vec<String> = lines
            .into_iter()
            .filter(|line| line.contains("\"target\":\"fusion::call\""))
            .collect();
        calls.sort();
        calls
    };
    let logged: Vec<String> = terminal
        .lines()
        .filter(|line| line.starts_with("{\"timestamp\""))
        .map(normalized)
        .collect();
    assert_eq!(calls(logged), calls(json_lines(BEFORE)), "{terminal}");
}

/// The call events in `stderr`, by request id.
fn logged_request_ids(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["target"] == "fusion::call")
        .filter_map(|event| event["fields"]["request_id"].as_str().map(str::to_owned))
        .collect()
}

/// Sends `calls` echo calls at once (ids 1..=calls) without reading their answers.
fn send_calls(server: &mut StdioPeer, calls: u64) {
    let mut batch = Vec::new();
    for id in 1..=calls {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x".repeat(100)}}});
        batch.extend(serde_json::to_vec(&request).expect("JSON"));
        batch.push(b'\n');
    }
    assert!(server.write(&batch));
}

/// The ids answered, reading until `quiet` passes without an answer.
fn answered_ids(server: &mut StdioPeer, quiet: Duration) -> Vec<String> {
    let mut ids = Vec::new();
    while let Some(answer) = server.next(quiet) {
        if let Some(id) = answer["id"].as_u64() {
            ids.push(id.to_string());
        }
    }
    ids
}

#[test]
fn sigterm_loses_no_log_line() {
    let mut server = StdioPeer::spawn(
        &support::example_binary("quickstart"),
        &[],
        &[("RUST_LOG", "info,rmcp=warn")],
    );
    server.initialize();
    send_calls(&mut server, 5_000);
    // Some answered, maybe not all: the calls read before the signal are served.
    server.answer(&json!(1));
    server.signal("TERM");
    let status = server.wait_exit(EXIT_TIMEOUT);
    assert_eq!(status.and_then(|status| status.code()), Some(0));
    let mut answered = answered_ids(&mut server, Duration::from_millis(500));
    answered.push("1".into());
    let stderr = server.stderr_to_end(Duration::from_secs(5));
    assert!(answered.len() > 1, "{}", server.stderr_tail(2000));
    every_answer_is_logged_once(&answered, &stderr);
    // The last event, logged just before the process ends: the flush on the way out.
    assert!(
        stderr.contains("\"message\":\"stopped\""),
        "the last event: {}",
        server.stderr_tail(2000)
    );
}

/// Each answered call has its event, and no call has two (a call dropped unanswered at
/// the end is logged as cancelled).
fn every_answer_is_logged_once(answered: &[String], stderr: &str) {
    let logged = logged_request_ids(stderr);
    let unique: std::collections::HashSet<&String> = logged.iter().collect();
    assert_eq!(unique.len(), logged.len(), "a call logged twice");
    let missing: Vec<&String> = answered.iter().filter(|id| !unique.contains(id)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} answered calls have no event, e.g. {:?}",
        missing.len(),
        answered.len(),
        &missing[..missing.len().min(5)]
    );
}

#[test]
fn a_fatal_exit_loses_no_log_line() {
    let mut server = StdioPeer::spawn(
        &support::example_binary("faults"),
        &[],
        &[("RUST_LOG", "info")],
    );
    server.initialize();
    send_calls(&mut server, 3_000);
    server.send(
        &json!({"jsonrpc": "2.0", "id": "fatal", "method": "tools/call",
        "params": {"name": "fail_with", "arguments": {"kind": "fatal"}}}),
    );
    let fatal = server.answer(&json!("fatal"));
    assert_eq!(fatal["result"]["isError"], true, "{fatal}");
    let status = server.wait_exit(EXIT_TIMEOUT);
    assert_eq!(status.and_then(|status| status.code()), Some(70));
    let mut answered = answered_ids(&mut server, Duration::from_millis(500));
    answered.push("fatal".into());
    let stderr = server.stderr_to_end(Duration::from_secs(5));
    every_answer_is_logged_once(&answered, &stderr);
    assert!(
        stderr.contains("\"target\":\"fusion::fatal\""),
        "the fatal event: {}",
        server.stderr_tail(2000)
    );
}
