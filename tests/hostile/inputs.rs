//! Giant names, keys and values: each answered once, at once, with a short answer that
//! quotes a cut prefix, and no other request waits behind it (issue 15, must 2). Secrets of
//! every length failing every kind of check never reach a message, `_meta` or the log
//! (issue 15, must 7).
//!
//! The stdio cases drive the example servers (built by `cargo build --examples`, and the
//! demo by `cargo build -p fusion-demo`): every wait is bounded and the child is killed when
//! the peer is dropped, on every exit path, a failed assertion included. The secret matrix
//! runs in memory through the tester, with the `fusion::call` events captured.

use std::{
    collections::HashSet,
    io::{BufRead, BufReader, Read, Write},
    process::{Child, ChildStdin, Command, Stdio},
    sync::{
        Arc, Mutex,
        mpsc::{self, Receiver},
    },
    thread,
    time::{Duration, Instant},
};

use fusion_runtime::{Server, prelude::*, testing::Tester};
use serde_json::{Value, json};

use crate::support;

/// The size of a hostile name, key or value: just under stdio's 16 MiB line limit, as in
/// the issue.
const GIANT: usize = 15 << 20;

/// The most an answer to a giant input may weigh (before the fix: the whole input, echoed).
const ANSWER_BYTES: usize = 4 << 10;

/// The longest stderr line a giant input may cause (before the fix: twice the input).
const LOG_LINE_BYTES: usize = 4 << 10;

/// How long a `ping` sent right after a giant input may wait. Before the fix it waited as
/// long as the giant call (8 to 30 s). What remains is reading and parsing the line once,
/// which an unoptimized build does at tens of MB/s: a few hundred ms in debug, a few ms in
/// release (see the closing note of issue 15). Generous, for loaded CI machines.
const PING_BOUND: Duration = if cfg!(debug_assertions) {
    Duration::from_secs(3)
} else {
    Duration::from_secs(1)
};

/// How long the giant call itself may take to be answered, from its last byte written.
const CALL_BOUND: Duration = Duration::from_secs(5);

/// One answer line: when it came, how large it was, what it said.
struct Line {
    at: Instant,
    bytes: usize,
    value: Value,
}

/// An example server over stdio. Dropping it kills the process, so a failed assertion
/// leaves nothing behind.
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stash: Vec<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Peer {
    fn spawn(binary: std::path::PathBuf) -> Self {
        Self::spawn_with(binary, &[])
    }

    /// The server at `binary`, started with `args`.
    fn spawn_with(binary: std::path::PathBuf, args: &[&str]) -> Self {
        let mut command = Command::new(binary);
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("RUST_LOG", "info");
        let mut child = command.spawn().expect("spawn the example server");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = Vec::new();
            while let Ok(1..) = stdout.read_until(b'\n', &mut line) {
                let at = Instant::now();
                let value = serde_json::from_slice(&line).unwrap_or_else(
                    |error| json!({"unparsable": format!("{error}"), "bytes": line.len()}),
                );
                if sender
                    .send(Line {
                        at,
                        bytes: line.len(),
                        value,
                    })
                    .is_err()
                {
                    break;
                }
                line.clear();
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&stderr);
        let mut pipe = child.stderr.take().expect("piped stderr");
        thread::spawn(move || {
            let mut chunk = [0u8; 65536];
            while let Ok(read @ 1..) = pipe.read(&mut chunk) {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..read]);
            }
        });
        let mut peer = Self {
            child,
            stdin,
            lines,
            stash: Vec::new(),
            stderr,
        };
        peer.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "hostile-inputs", "version": "1"}
            }}),
        );
        let init = peer.answer("init", Duration::from_secs(10));
        assert!(
            init.value["result"]["serverInfo"].is_object(),
            "{}",
            init.value
        );
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        peer
    }

    fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to the server");
        stdin.flush().expect("flush to the server");
    }

    fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("serializes");
        line.push(b'\n');
        self.write(&line);
    }

    /// Sends a `ping` with id `id` and returns when it was sent.
    fn ping(&mut self, id: &str) -> Instant {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        Instant::now()
    }

    /// The answer with id `id`, within `timeout`, or a failure that says what came instead.
    fn answer(&mut self, id: &str, timeout: Duration) -> Line {
        if let Some(at) = self.stash.iter().position(|l| l.value["id"] == id) {
            return self.stash.remove(at);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.value["id"] == id => return line,
                Ok(line) => self.stash.push(line),
                Err(_) => panic!(
                    "no answer for id {id} within {timeout:?}; stderr: {}",
                    self.stderr_prefix()
                ),
            }
        }
    }

    /// No further answer arrives within `wait` (exactly one answer per id).
    fn no_more_answers(&mut self, wait: Duration) {
        if let Ok(line) = self.lines.recv_timeout(wait) {
            panic!("an extra answer ({} bytes): {}", line.bytes, line.value);
        }
        assert!(self.stash.is_empty(), "unclaimed answers");
    }

    fn stderr_bytes(&self) -> Vec<u8> {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn stderr_prefix(&self) -> String {
        let bytes = self.stderr_bytes();
        String::from_utf8_lossy(&bytes[..bytes.len().min(2000)]).into_owned()
    }

    /// Waits (bounded) for the `fusion::call` event of the giant call, then checks that
    /// every stderr line is short: names, keys and values are cut in the log too.
    fn log_is_bounded(&self, since: usize) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let bytes = self.stderr_bytes();
            let fresh = &bytes[since.min(bytes.len())..];
            let complete = fresh
                .split(|b| *b == b'\n')
                .any(|line| line.windows(12).any(|w| w == b"fusion::call"));
            if complete {
                for line in fresh.split(|b| *b == b'\n') {
                    assert!(
                        line.len() <= LOG_LINE_BYTES,
                        "a log line of {} bytes: {}",
                        line.len(),
                        String::from_utf8_lossy(&line[..300.min(line.len())])
                    );
                }
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no fusion::call event within 5 s (stderr so far: {} bytes, first lines: {})",
                bytes.len(),
                self.stderr_prefix()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        drop(self.stdin.take());
        // Errors mean the process is already gone.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a tool result.
fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
}

/// Sends one giant `tools/call`, then a ping right behind it; checks that both are answered
/// once and quickly, that the answer is short, and that the log stays bounded. Returns the
/// answer to the giant call.
fn giant_call(peer: &mut Peer, case: &str, params: Value) -> Value {
    let mut line = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": "giant", "method": "tools/call", "params": params
    }))
    .expect("serializes");
    line.push(b'\n');
    let log_mark = peer.stderr_bytes().len();
    let started = Instant::now();
    // Returns once the server has read all but the pipe's buffer of it.
    peer.write(&line);
    let written = Instant::now();
    let ping_sent = peer.ping("after");
    let giant = peer.answer("giant", CALL_BOUND + PING_BOUND);
    let pong = peer.answer("after", PING_BOUND);
    let call_latency = giant.at.saturating_duration_since(written);
    let ping_latency = pong.at.saturating_duration_since(ping_sent);
    // The measured numbers, for the record (`--nocapture` shows them).
    eprintln!(
        "{case}: {} bytes written in {:?}; answered {:?} after the last byte ({} bytes); \
         ping sent right after answered in {:?}",
        line.len(),
        written - started,
        call_latency,
        giant.bytes,
        ping_latency
    );
    assert_eq!(pong.value["result"], json!({}), "{}", pong.value);
    assert!(
        ping_latency <= PING_BOUND,
        "{case}: the ping waited {ping_latency:?} behind the giant call"
    );
    assert!(
        call_latency <= CALL_BOUND,
        "{case}: answered after {call_latency:?}"
    );
    assert!(
        giant.bytes <= ANSWER_BYTES,
        "{case}: an answer of {} bytes: {}",
        giant.bytes,
        &giant.value.to_string()[..300.min(giant.bytes)]
    );
    peer.no_more_answers(Duration::from_millis(200));
    peer.log_is_bounded(log_mark);
    giant.value
}

/// `x` repeated to `bytes`.
fn giant(bytes: usize) -> String {
    "x".repeat(bytes)
}

/// What a cut name or key looks like in a message.
fn cut_of(bytes: usize) -> String {
    format!("{}… ({bytes} bytes in all)", "x".repeat(60))
}

#[test]
fn a_giant_tool_name_is_refused_at_once_and_stalls_nothing() {
    let mut peer = Peer::spawn(support::example_binary("quickstart"));
    let answer = giant_call(
        &mut peer,
        "15 MiB tool name (quickstart)",
        json!({"name": giant(GIANT), "arguments": {}}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let message = text(&answer);
    assert!(
        message.starts_with(&format!("Unknown tool `{}`.", cut_of(GIANT))),
        "{message}"
    );
    assert!(message.contains("Available tools: `echo`"), "{message}");
    // Still the same server: a normal call works.
    peer.send(
        &json!({"jsonrpc": "2.0", "id": "add", "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}),
    );
    let add = peer.answer("add", Duration::from_secs(5));
    assert_eq!(text(&add.value), "5", "{}", add.value);
}

#[test]
fn a_one_megabyte_tool_name_on_the_fault_server_is_answered() {
    // The issue's case that got no answer at all.
    let mut peer = Peer::spawn(support::example_binary("faults"));
    let answer = giant_call(
        &mut peer,
        "1 MB tool name (faults)",
        json!({"name": giant(1_000_000), "arguments": {"text": "t"}}),
    );
    assert!(
        text(&answer).starts_with(&format!("Unknown tool `{}`.", cut_of(1_000_000))),
        "{answer}"
    );
}

/// The tool search of `fusion-demo --tool-search` (issue 58): a query that would be a
/// regex bomb, a query of a megabyte, a limit of 10^30 and a `call_tool` of a megabyte's
/// name, each answered at once with a clear error or a bounded result, and nothing waits
/// behind them.
#[test]
fn tool_search_answers_hostile_queries_at_once() {
    let mut peer = Peer::spawn_with(support::package_binary("fusion-demo"), &["--tool-search"]);
    let search = |arguments: Value| json!({"name": "search_tools", "arguments": arguments});
    // Matched as words, never as a pattern: two hundred words of `(a+)+$` are too many.
    let bomb = giant_call(
        &mut peer,
        "regex bomb query",
        search(json!({"query": "(a+)+$".repeat(150)})),
    );
    assert_eq!(bomb["result"]["isError"], true, "{bomb}");
    assert!(text(&bomb).contains("at most 32 are searched"), "{bomb}");
    // A few of them are a search like any other: bounded, and nothing matches.
    let few = giant_call(
        &mut peer,
        "short regex bomb query",
        search(json!({"query": "(x+)+$ ".repeat(4), "limit": 50})),
    );
    assert_eq!(few["result"]["isError"], false, "{few}");
    let megabyte = giant_call(
        &mut peer,
        "1 MB query",
        search(json!({"query": giant(1 << 20)})),
    );
    assert_eq!(megabyte["result"]["isError"], true, "{megabyte}");
    assert!(
        text(&megabyte).contains("longer than 1024 characters"),
        "{megabyte}"
    );
    // A limit no search returns: refused by the schema's bound, with the bound.
    let huge = giant_call(
        &mut peer,
        "huge limit",
        search(json!({"query": "user", "limit": 1e30})),
    );
    assert_eq!(huge["result"]["isError"], true, "{huge}");
    assert!(text(&huge).contains("limit"), "{huge}");
    let named = giant_call(
        &mut peer,
        "1 MB name through call_tool",
        json!({"name": "call_tool", "arguments": {"name": giant(1_000_000)}}),
    );
    assert!(
        text(&named).starts_with(&format!("Unknown tool `{}`.", cut_of(1_000_000))),
        "{named}"
    );
    // Still the same server: a search finds, and `call_tool` calls.
    peer.send(
        &json!({"jsonrpc": "2.0", "id": "found", "method": "tools/call",
        "params": search(json!({"query": "health"}))}),
    );
    let found = peer.answer("found", Duration::from_secs(5));
    assert_eq!(
        found.value["result"]["structuredContent"]["tools"][0]["name"], "system",
        "{}",
        found.value
    );
}

#[test]
fn names_within_the_limit_still_get_a_suggestion() {
    let mut peer = Peer::spawn(support::example_binary("quickstart"));
    peer.send(
        &json!({"jsonrpc": "2.0", "id": "typo", "method": "tools/call",
        "params": {"name": "get_wether", "arguments": {}}}),
    );
    let answer = peer.answer("typo", Duration::from_secs(5)).value;
    assert!(
        text(&answer).contains("Did you mean `get_weather`?"),
        "{answer}"
    );
}

#[test]
fn a_giant_action_name_is_refused_at_once() {
    let mut peer = Peer::spawn(support::package_binary("fusion-demo"));
    let answer = giant_call(
        &mut peer,
        "15 MiB action name (demo, db_user)",
        json!({"name": "db_user", "arguments": {"action": giant(GIANT)}}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = text(&answer);
    assert!(
        text.starts_with(&format!(
            "Unknown action `{}` for tool `db_user`.",
            cut_of(GIANT)
        )),
        "{text}"
    );
    assert!(text.contains("Valid actions: `find_many`"), "{text}");
}

#[test]
fn a_giant_argument_key_is_refused_before_decoding() {
    let mut peer = Peer::spawn(support::example_binary("quickstart"));
    let answer = giant_call(
        &mut peer,
        "15 MiB argument key (quickstart)",
        json!({"name": "echo", "arguments": {"text": "hi", giant(GIANT): 1}}),
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let issues = &answer["result"]["_meta"]["fusion/issues"];
    assert_eq!(issues.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(issues[0]["code"], "too_large", "{answer}");
    assert_eq!(
        issues[0]["path"],
        format!("[\"{}\"]", cut_of(GIANT)),
        "{answer}"
    );
    assert!(
        text(&answer).contains("a key of at most 256 bytes"),
        "{answer}"
    );
}

#[test]
fn a_giant_value_is_quoted_cut() {
    let mut peer = Peer::spawn(support::example_binary("quickstart"));
    // Over the 1 MiB string limit: refused before decoding, quoted cut.
    let answer = giant_call(
        &mut peer,
        "15 MiB string value (quickstart)",
        json!({"name": "add", "arguments": {"a": giant(GIANT), "b": 1}}),
    );
    let issues = &answer["result"]["_meta"]["fusion/issues"];
    assert_eq!(issues[0]["code"], "too_large", "{answer}");
    // Under the limit, of the wrong type: the preview and the hint stay short.
    let nines = "9".repeat(900_000);
    let answer = giant_call(
        &mut peer,
        "900 kB numeric string (quickstart)",
        json!({"name": "add", "arguments": {"a": nines, "b": 1}}),
    );
    let issue = &answer["result"]["_meta"]["fusion/issues"][0];
    assert_eq!(issue["code"], "type", "{answer}");
    let hint = issue["hint"].as_str().unwrap_or("");
    assert!(
        hint.contains("without quotes") && hint.len() < 60,
        "{answer}"
    );
    let received = issue["received"].as_str().unwrap_or("");
    assert!(received.starts_with("\"999"), "{answer}");
    assert!(received.chars().count() < 80, "{received}");
}

// ---------------------------------------------------------------------------------------
// Secrets of every length, failing every kind of check.

/// A test secret of `chars` characters, of characters that no message uses (so even a
/// one-character secret found in a message is a leak), with a quote and a backslash (so
/// an escaped spelling is tried too). Never a number, an email or an allowed value: it
/// fails every check below.
fn secret(chars: usize) -> String {
    const ALPHABET: [char; 10] = ['Ж', 'Q', '§', 'Z', 'ǂ', '"', '\\', 'Ψ', 'J', 'ß'];
    (0..chars)
        .map(|i| ALPHABET[(i * 7 + i / 10) % ALPHABET.len()])
        .collect()
}

const SECRET_LENGTHS: [usize; 9] = [1, 2, 7, 8, 59, 60, 61, 200, 10_000];

/// An integer secret (a PIN): a string is the wrong type.
#[mcp_tool]
async fn typed(#[arg(secret)] value: u64) -> String {
    format!("{value}")
}

/// A text secret sent inside a list: the wrong type again, quoted as a list.
#[mcp_tool]
async fn listed(#[arg(secret)] value: String) -> String {
    value
}

/// A secret that must be very long.
#[mcp_tool]
async fn long(#[arg(secret, length(min = 20_000))] value: String) -> String {
    value
}

/// A secret of digits.
#[mcp_tool]
async fn digits(#[arg(secret, pattern = "^[0-9]+$")] value: String) -> String {
    value
}

/// A secret that is an email address.
#[mcp_tool]
async fn mailbox(#[arg(secret, format = "email")] value: String) -> String {
    value
}

/// A secret from a list.
#[mcp_tool]
async fn chosen(#[arg(secret, one_of = ["alpha", "beta"])] value: String) -> String {
    value
}

fn refuse_politely(_: &str) -> Result<(), String> {
    Err("this token was revoked".into())
}

fn refuse_quoting(value: &str) -> Result<(), String> {
    Err(format!("the token {value} was revoked"))
}

fn refuse_quoting_a_prefix(value: &str) -> Result<(), String> {
    let start: String = value.chars().take(12).collect();
    Err(format!("the token starting {start}… was revoked"))
}

/// A secret refused by the tool's own check, in words that do not quote it.
#[mcp_tool]
async fn custom(#[arg(secret, validate = refuse_politely)] value: String) -> String {
    value
}

/// A secret refused by a check that quotes it whole.
#[mcp_tool]
async fn custom_quoting(#[arg(secret, validate = refuse_quoting)] value: String) -> String {
    value
}

/// A secret refused by a check that quotes its start.
#[mcp_tool]
async fn custom_prefix(#[arg(secret, validate = refuse_quoting_a_prefix)] value: String) -> String {
    value
}

/// Credentials with a secret inside.
#[mcp_type]
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Credentials {
    /// Who.
    user: String,
    /// A token of digits.
    #[arg(secret, pattern = "^[0-9]+$", length(max = 10))]
    token: String,
}

/// A secret nested in a `#[mcp_type]` struct.
#[mcp_tool]
async fn nested(creds: Credentials) -> String {
    creds.user
}

/// A secret nested in a list of structs, of the wrong type.
#[mcp_tool]
async fn nested_list(creds: Vec<Credentials>) -> String {
    format!("{}", creds.len())
}

/// The `fusion::call` events, captured as JSON lines.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    fn take(&self) -> Vec<Value> {
        let bytes = std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()));
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

/// Every string in a JSON value (keys too), decoded.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(entries) => {
            for (key, item) in entries {
                out.push(key.clone());
                strings(item, out);
            }
        }
        _ => {}
    }
}

/// Where `text` quotes `secret`: whole, or (for 8 characters or more) any 8 characters of
/// it in a row, as sent or JSON-escaped (a preview escapes the quote and the backslash).
fn leak(text: &str, secret: &str) -> Option<String> {
    const WINDOW: usize = 8;
    let escaped = Value::String(secret.to_owned()).to_string();
    let escaped = &escaped[1..escaped.len() - 1];
    for spelling in [secret, escaped] {
        let chars: Vec<char> = spelling.chars().collect();
        if chars.len() < WINDOW {
            if text.contains(spelling) {
                return Some(spelling.to_owned());
            }
            continue;
        }
        let text_chars: Vec<char> = text.chars().collect();
        let windows: HashSet<&[char]> = text_chars.windows(WINDOW).collect();
        if let Some(window) = chars.windows(WINDOW).find(|w| windows.contains(w)) {
            return Some(window.iter().collect());
        }
    }
    None
}

#[tokio::test]
async fn secrets_of_every_length_never_leak_from_any_check() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(captured.clone())
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let tester = Tester::new(
        Server::builder("secrets", "0")
            .tool(typed)
            .tool(listed)
            .tool(long)
            .tool(digits)
            .tool(mailbox)
            .tool(chosen)
            .tool(custom)
            .tool(custom_quoting)
            .tool(custom_prefix)
            .tool(nested)
            .tool(nested_list)
            .build(),
    );
    let mut checked = 0;
    for chars in SECRET_LENGTHS {
        let secret = secret(chars);
        // (tool, arguments, the code reported, the path reported)
        let cases = [
            ("typed", json!({"value": secret}), "type", "value"),
            ("listed", json!({"value": [secret]}), "type", "value"),
            ("long", json!({"value": secret}), "min_length", "value"),
            ("digits", json!({"value": secret}), "pattern", "value"),
            ("mailbox", json!({"value": secret}), "format", "value"),
            ("chosen", json!({"value": secret}), "enum", "value"),
            ("custom", json!({"value": secret}), "custom", "value"),
            (
                "custom_quoting",
                json!({"value": secret}),
                "custom",
                "value",
            ),
            ("custom_prefix", json!({"value": secret}), "custom", "value"),
            (
                "nested",
                json!({"creds": {"user": "ada", "token": secret}}),
                "pattern",
                "creds.token",
            ),
            (
                "nested_list",
                json!({"creds": [{"user": "ada", "token": [secret]}]}),
                "type",
                "creds[0].token",
            ),
        ];
        for (tool, args, code, path) in cases {
            let result = tester.call(tool, args).await;
            let raw = serde_json::to_value(&result.raw).expect("a result serializes");
            let what = format!("{tool} with a secret of {chars} chars");
            assert_eq!(raw["isError"], true, "{what}: {raw}");
            // The problem is still reported, at its place, with its rule.
            let issues = raw["_meta"]["fusion/issues"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                issues
                    .iter()
                    .any(|issue| issue["code"] == code && issue["path"] == path),
                "{what}: expected a `{code}` problem at `{path}`: {raw}"
            );
            let mut texts = Vec::new();
            strings(&raw, &mut texts);
            let events = captured.take();
            assert!(
                events.iter().any(|event| event["target"] == "fusion::call"),
                "{what}: no call event"
            );
            for event in &events {
                strings(event, &mut texts);
            }
            for text in &texts {
                if let Some(quoted) = leak(text, &secret) {
                    panic!("{what}: the secret leaked ({quoted:?}) in {text:?}");
                }
            }
            checked += 1;
        }
    }
    assert_eq!(checked, SECRET_LENGTHS.len() * 11);
}

/// Echo.
#[mcp_tool]
async fn shown(text: String) -> String {
    text
}

#[test]
fn an_app_view_over_the_limit_or_broken_is_refused_when_the_server_is_built() {
    use fusion_runtime::{
        BuildError,
        apps::{AppView, MAX_VIEW_BYTES},
    };
    let build = |tool: &str, view: AppView| {
        Server::builder("views", "0")
            .tool(shown)
            .app_view(tool, view)
            .try_build()
            .err()
            .unwrap_or_default()
    };
    let html = |bytes: usize| format!("<!DOCTYPE html>{}", "x".repeat(bytes));
    let huge = build(
        "shown",
        AppView::new("ui://views/huge", "huge").html(html(MAX_VIEW_BYTES)),
    );
    assert!(
        matches!(&huge[..], [BuildError::InvalidAppView { reason, .. }] if reason.contains("over the limit")),
        "{huge:?}"
    );
    // At the limit, it is served.
    let at_limit = html(MAX_VIEW_BYTES - "<!DOCTYPE html>".len());
    assert!(
        build(
            "shown",
            AppView::new("ui://views/max", "max").html(at_limit)
        )
        .is_empty(),
        "a view at the limit builds"
    );
    let not_ui = build(
        "shown",
        AppView::new("https://evil.example/view", "v").html(html(1)),
    );
    assert!(
        matches!(&not_ui[..], [BuildError::InvalidAppView { reason, .. }] if reason.contains("ui://")),
        "{not_ui:?}"
    );
    let empty = build("shown", AppView::new("ui://views/empty", "v").html("  "));
    assert!(
        matches!(&empty[..], [BuildError::InvalidAppView { reason, .. }] if reason.contains("empty")),
        "{empty:?}"
    );
    let nowhere = build(
        "missing_tool",
        AppView::new("ui://views/nowhere", "v").html(html(1)),
    );
    assert!(
        matches!(&nowhere[..], [BuildError::UnknownTarget(name)] if name == "missing_tool"),
        "{nowhere:?}"
    );
    // Two different views under one URI: the second is refused.
    let twice = Server::builder("views", "0")
        .tool(shown)
        .app_view("shown", AppView::new("ui://views/one", "a").html(html(1)))
        .app_view("shown", AppView::new("ui://views/one", "b").html(html(2)))
        .try_build()
        .err()
        .unwrap_or_default();
    assert!(
        matches!(&twice[..], [BuildError::InvalidAppView { reason, .. }] if reason.contains("another view")),
        "{twice:?}"
    );
}
