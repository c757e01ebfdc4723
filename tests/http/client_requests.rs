//! A call of a client that declared sampling, elicitation and roots, over Streamable HTTP,
//! at the level of bytes (the TypeScript and Python SDK clients drive the same flows in
//! `tests/clients/`): a call that asks nothing is one JSON body; a call's question to the
//! client rides the answer to the call's own POST, and the client's answer, POSTed on the
//! session, reaches that call and no other; a client that hangs up while asked cancels
//! the call and frees its id. Against `examples/conformance.rs`.

use crate::support::{self, HttpServer};

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    process::Command,
    time::{Duration, Instant},
};

const WAIT: Duration = Duration::from_secs(10);

fn server() -> HttpServer {
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]).env("RUST_LOG", "warn");
    HttpServer::start(command, Duration::from_secs(30))
}

/// A session of a client that declared roots, sampling and elicitation; its id.
fn open_session(server: &HttpServer) -> String {
    let opened = support::post_mcp(
        server.addr(),
        &[],
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"claude-like","version":"0"}}}"#,
        WAIT,
    );
    let session = opened
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {opened:?}"))
        .to_owned();
    let initialized = post(
        server,
        &session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    session
}

fn post(server: &HttpServer, session: &str, body: &str) -> support::RawResponse {
    support::post_mcp(
        server.addr(),
        &[
            ("Mcp-Session-Id", session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        body,
        WAIT,
    )
}

/// A POST whose answer is read as it comes (an SSE stream stays open while its call runs).
struct Streaming {
    stream: TcpStream,
    read: Vec<u8>,
}

impl Streaming {
    fn post(addr: SocketAddr, session: &str, body: &str) -> Self {
        let mut stream = TcpStream::connect_timeout(&addr, WAIT).expect("connects");
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .ok();
        stream.set_write_timeout(Some(WAIT)).ok();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).expect("sent");
        Self {
            stream,
            read: Vec::new(),
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.read).into_owned()
    }

    /// Reads until what came holds `needle` (panics after [`WAIT`]); what came.
    fn read_until(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        while !self.text().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} within {WAIT:?}; came: {}",
                self.text()
            );
            let mut buffer = [0; 4096];
            match self.stream.read(&mut buffer) {
                Ok(0) => panic!("closed before {needle:?}; came: {}", self.text()),
                Ok(read) => self.read.extend_from_slice(&buffer[..read]),
                Err(error)
                    if matches!(
                        error.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(error) => panic!("read failed: {error}"),
            }
        }
        self.text()
    }

    /// Whether anything more came within `wait`.
    fn quiet_for(&mut self, wait: Duration) -> bool {
        let before = self.read.len();
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            let mut buffer = [0; 4096];
            if let Ok(read) = self.stream.read(&mut buffer) {
                self.read.extend_from_slice(&buffer[..read]);
            }
        }
        self.read.len() == before
    }
}

/// The id of the first request the server sent on `text` (an SSE stream).
fn asked_id(text: &str) -> serde_json::Value {
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .find(|message| message.get("method").is_some() && message.get("id").is_some())
        .map(|message| message["id"].clone())
        .unwrap_or_else(|| panic!("no request in {text}"))
}

fn sampling_answer(id: &serde_json::Value, text: &str) -> String {
    serde_json::json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}
    })
    .to_string()
}

#[test]
fn a_call_that_asks_nothing_is_one_json_body() {
    let server = server();
    let session = open_session(&server);
    let answer = post(
        &server,
        &session,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}"#,
    );
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.header("content-type"),
        Some("application/json"),
        "{answer:?}"
    );
    assert_eq!(
        answer.message()["result"]["content"][0]["text"],
        "This is a simple text response for testing."
    );
}

#[test]
fn a_question_rides_the_calls_stream_and_only_its_sessions_answer_reaches_it() {
    let server = server();
    let session = open_session(&server);
    let stranger = open_session(&server);
    let mut call = Streaming::post(
        server.addr(),
        &session,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"the capital?"}}}"#,
    );
    let asked = call.read_until("sampling/createMessage");
    assert!(asked.contains("text/event-stream"), "{asked}");
    assert!(asked.contains("the capital?"), "{asked}");
    let id = asked_id(&asked);

    // Another session's answer under that id does not reach the call.
    let _ = post(&server, &stranger, &sampling_answer(&id, "forged"));
    assert!(
        call.quiet_for(Duration::from_millis(300)),
        "another session answered the call's question: {}",
        call.text()
    );

    let answered = post(&server, &session, &sampling_answer(&id, "Paris"));
    assert_eq!(answered.status, 202, "{answered:?}");
    let text = call.read_until("LLM response");
    assert!(text.contains(r#""id":7"#), "{text}");
    assert!(text.contains("LLM response: Paris"), "{text}");
    assert!(!text.contains("forged"), "{text}");

    // A second answer under the same id reaches nothing, and the session serves on.
    let _ = post(&server, &session, &sampling_answer(&id, "again"));
    let next = post(
        &server,
        &session,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}"#,
    );
    assert_eq!(next.header("content-type"), Some("application/json"));
}

#[test]
fn a_client_that_hangs_up_while_asked_cancels_the_call_and_frees_its_id() {
    let server = server();
    let session = open_session(&server);
    let mut call = Streaming::post(
        server.addr(),
        &session,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"who?"}}}"#,
    );
    let asked = call.read_until("elicitation/create");
    let id = asked_id(&asked);
    drop(call);

    // The id comes free once the server noticed the hang-up; until then a request under
    // it is refused as a duplicate.
    let deadline = Instant::now() + WAIT;
    let reused = loop {
        let reused = post(
            &server,
            &session,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}"#,
        );
        if reused.message().get("result").is_some() || Instant::now() >= deadline {
            break reused;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        reused.message()["result"]["content"][0]["text"],
        "This is a simple text response for testing.",
        "{reused:?}"
    );
    // The question went with its call: a late answer reaches nothing and breaks nothing.
    let late = serde_json::json!({
        "jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {}}
    })
    .to_string();
    let _ = post(&server, &session, &late);
    let after = post(
        &server,
        &session,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}"#,
    );
    assert_eq!(after.status, 200, "{after:?}");
}
