//! Per-caller tool lists over Streamable HTTP (issue 40, item 3), on the demo as a resource
//! server of a real authorization server: a guest's token lists no user writes (`--flat`),
//! an admin's does; under 2026-07-28 the list is `cacheScope: "private"` (and a server
//! whose list is the same for all says `public`), with the `ttlMs` of `list_ttl`; a session whose caller comes back with a
//! token of other grants is sent `notifications/tools/list_changed` on its stream.

use crate::support;

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{AuthServer, HttpServer, RawResponse};

const START: Duration = Duration::from_secs(30);
const REQUEST: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"visibility-test","version":"0"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

/// The demo, one tool per action, as a resource server of `auth`.
fn flat_demo(auth: &AuthServer) -> HttpServer {
    let mut command = Command::new(support::package_binary("fusion-demo"));
    command.args(["--http", "0", "--flat", "--oauth-issuer", auth.issuer()]);
    HttpServer::start(command, START)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The names in a `tools/list` answer.
fn names(response: &RawResponse) -> Vec<String> {
    let message = response.message();
    message["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {message}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// Opens a session for `token`: its id, once the client said it is initialized.
fn open_session(server: &HttpServer, token: &str) -> String {
    let authorization = bearer(token);
    let init = support::post_mcp(
        server.addr(),
        &[("Authorization", &authorization)],
        INITIALIZE,
        REQUEST,
    );
    assert_eq!(init.status, 200, "{init:?}\n{}", server.stderr());
    let capabilities = &init.message()["result"]["capabilities"]["tools"];
    assert_eq!(capabilities["listChanged"], true, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let initialized = support::post_mcp(
        server.addr(),
        &in_session(&session, &authorization),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        REQUEST,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    session
}

fn in_session<'a>(session: &'a str, authorization: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18"),
        ("Authorization", authorization),
    ]
}

#[test]
fn a_guest_token_lists_no_user_writes_and_an_admin_token_does() {
    let auth = AuthServer::start();
    let demo = flat_demo(&auth);
    let guest = auth.token(&auth.claims(demo.url(), "gus", "read"));
    let admin = auth.token(&auth.claims(demo.url(), "ann", "admin"));
    for (who, token, sees_create) in [("guest", &guest, false), ("admin", &admin, true)] {
        let session = open_session(&demo, token);
        let authorization = bearer(token);
        let listed = support::post_mcp(
            demo.addr(),
            &in_session(&session, &authorization),
            LIST,
            REQUEST,
        );
        let names = names(&listed);
        assert_eq!(
            names.contains(&"db_user_create".to_owned()),
            sees_create,
            "{who}: {names:?}"
        );
        assert!(
            names.contains(&"db_user_find_many".to_owned()),
            "{who}: {names:?}"
        );
        // What a caller is not shown it cannot call: the same answer as for no such tool.
        let call = support::post_mcp(
            demo.addr(),
            &in_session(&session, &authorization),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"db_user_create","arguments":{"name":"Eve","email":"eve@example.com"}}}"#,
            REQUEST,
        );
        let answer = call.message();
        let code = &answer["result"]["_meta"]["fusion/failure"]["code"];
        if sees_create {
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        } else {
            assert_eq!(code, "unknown_tool", "{answer}");
            assert!(
                !answer.to_string().contains("db_user_create\\`?"),
                "no did-you-mean names it: {answer}"
            );
        }
    }
}

/// The `cacheScope` and `ttlMs` of a 2026-07-28 `tools/list` (no session) with `headers`.
fn list_hints_2026(server: &HttpServer, headers: &[(&str, &str)]) -> (Value, Value) {
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"visibility-test","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let mut all = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/list"),
    ];
    all.extend_from_slice(headers);
    let listed = support::post_mcp(server.addr(), &all, body, REQUEST);
    assert_eq!(listed.status, 200, "{listed:?}\n{}", server.stderr());
    let message = listed.message();
    assert!(message["result"]["tools"].is_array(), "a list: {message}");
    (
        message["result"]["cacheScope"].clone(),
        message["result"]["ttlMs"].clone(),
    )
}

#[test]
fn a_list_that_depends_on_the_caller_is_private_and_one_that_does_not_is_public() {
    let auth = AuthServer::start();
    let demo = flat_demo(&auth);
    let guest = bearer(&auth.token(&auth.claims(demo.url(), "gus", "read")));
    // A minute: `ServerBuilder::list_ttl`'s default.
    assert_eq!(
        list_hints_2026(&demo, &[("Authorization", &guest)]),
        (json!("private"), json!(60_000))
    );
    let mut command = Command::new(support::example_binary("quickstart"));
    command.args(["--http", "0"]);
    let quickstart = HttpServer::start(command, START);
    assert_eq!(
        list_hints_2026(&quickstart, &[]),
        (json!("public"), json!(60_000))
    );
}

/// A `GET /mcp` event stream of `session`, its response head read.
fn open_stream(server: &HttpServer, session: &str, authorization: &str) -> TcpStream {
    let addr = server.addr();
    let mut stream = TcpStream::connect(addr).expect("connects");
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-06-18\r\n\
         Authorization: {authorization}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).expect("sends");
    let head = read_until(&mut stream, "\r\n\r\n", REQUEST);
    assert!(head.starts_with("HTTP/1.1 200"), "the stream: {head}");
    stream
}

/// What `stream` sends until `needle` (or the deadline, or its end).
fn read_until(stream: &mut TcpStream, needle: &str, limit: Duration) -> String {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !String::from_utf8_lossy(&got).contains(needle) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        if stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => got.extend_from_slice(&buffer[..read]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn a_session_whose_caller_gets_other_grants_is_told_the_list_changed() {
    let auth = AuthServer::start();
    let demo = flat_demo(&auth);
    // One user, first with a token that makes them a guest, then with an admin's.
    let as_guest = bearer(&auth.token(&auth.claims(demo.url(), "ann", "read")));
    let as_admin = bearer(&auth.token(&auth.claims(demo.url(), "ann", "admin")));
    let session = open_session(&demo, &as_guest[7..]);
    let mut stream = open_stream(&demo, &session, &as_guest);
    let first = support::post_mcp(demo.addr(), &in_session(&session, &as_guest), LIST, REQUEST);
    assert!(!names(&first).contains(&"db_user_create".to_owned()));
    // Listed again with the same grants: nothing changed, nothing is sent.
    let again = support::post_mcp(demo.addr(), &in_session(&session, &as_guest), LIST, REQUEST);
    assert_eq!(names(&again), names(&first));
    let quiet = read_until(&mut stream, "list_changed", Duration::from_millis(500));
    assert!(
        !quiet.contains("notifications/tools/list_changed"),
        "{quiet}"
    );
    // The admin's token on the same session: the view changed, and the client is told.
    let upgraded = support::post_mcp(
        demo.addr(),
        &in_session(&session, &as_admin),
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"system_health","arguments":{}}}"#,
        REQUEST,
    );
    assert_eq!(upgraded.status, 200, "{upgraded:?}");
    let told = format!(
        "{}{}",
        upgraded.body,
        read_until(&mut stream, "notifications/tools/list_changed", REQUEST)
    );
    assert!(
        told.contains("notifications/tools/list_changed"),
        "no list_changed: {told}\n{}",
        demo.stderr()
    );
    let now = support::post_mcp(demo.addr(), &in_session(&session, &as_admin), LIST, REQUEST);
    assert!(names(&now).contains(&"db_user_create".to_owned()));
}
