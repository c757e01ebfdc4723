//! The OAuth 2.1 resource server over the wire (issue 17): the demo started as
//! `fusion-demo --http 0 --oauth-issuer <URL>` in front of the test authorization server
//! (`support::AuthServer`: RSA keys made at start, RFC 8414 metadata, a JWKS), driven with
//! raw HTTP/1.1 requests. Every bad token gets `401` with the metadata pointer, a valid one
//! initializes a session and calls a tool (and the session answers no other user), a key
//! published after start-up is picked up, a missing required scope gets `403`, the RFC 9728 document is served at both URLs, an
//! unreachable issuer makes `503` (not a dead server), and no token reaches the log.
//!
//! Needs the built demo (`cargo build -p fusion-demo`). Each server is killed when its test
//! ends, whatever the outcome; every request and wait has a timeout.

use crate::support;

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{AuthServer, HttpServer, RawResponse, raw_http};

const START: Duration = Duration::from_secs(30);
const REQUEST: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"oauth-test","version":"0"}}}"#;

/// The demo as a resource server of `auth`, with `extra` arguments, logging at debug level
/// (so that a token written anywhere in the log would show).
fn demo(auth: &AuthServer, extra: &[&str]) -> HttpServer {
    demo_of(auth.issuer(), extra)
}

fn demo_of(issuer: &str, extra: &[&str]) -> HttpServer {
    let mut command = Command::new(support::package_binary("fusion-demo"));
    command
        .args(["--http", "0", "--oauth-issuer", issuer])
        .args(extra)
        .env("RUST_LOG", "debug");
    HttpServer::start(command, START)
}

fn metadata_url(demo: &HttpServer) -> String {
    format!(
        "http://{}/.well-known/oauth-protected-resource/mcp",
        demo.addr()
    )
}

fn post(demo: &HttpServer, extra: &[(&str, &str)], body: &str) -> RawResponse {
    support::post_mcp(demo.addr(), extra, body, REQUEST)
}

fn post_with_token(
    demo: &HttpServer,
    token: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> RawResponse {
    let authorization = format!("Bearer {token}");
    let mut headers = vec![("Authorization", authorization.as_str())];
    headers.extend_from_slice(extra);
    post(demo, &headers, body)
}

fn challenge(response: &RawResponse) -> &str {
    response.header("www-authenticate").unwrap_or_default()
}

/// `401` whose challenge points at the demo's metadata document, with
/// `error="invalid_token"` when `invalid`, without an error code otherwise (RFC 6750 §3.1:
/// a request without credentials gets none).
fn assert_unauthorized(demo: &HttpServer, case: &str, response: &RawResponse, invalid: bool) {
    assert_eq!(response.status, 401, "{case}: {response:?}");
    let challenge = challenge(response);
    assert!(challenge.starts_with("Bearer "), "{case}: {challenge}");
    assert!(
        challenge.contains(&format!("resource_metadata=\"{}\"", metadata_url(demo))),
        "{case}: {challenge}"
    );
    assert_eq!(
        challenge.contains("error=\"invalid_token\""),
        invalid,
        "{case}: {challenge}"
    );
}

/// Waits (bounded) until the demo fetched the issuer's keys once at start-up.
fn wait_for_keys(auth: &AuthServer, demo: &HttpServer) {
    let deadline = Instant::now() + START;
    while auth.jwks_fetches() == 0 {
        assert!(
            Instant::now() < deadline,
            "the demo never fetched the JWKS\n{}",
            demo.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Neither any token nor its signature appears in what the server wrote.
fn assert_not_logged(demo: &HttpServer, tokens: &[String]) {
    let log = demo.stderr();
    assert!(!log.is_empty(), "the demo logs at debug level");
    for token in tokens {
        let signature = token.rsplit('.').next().unwrap_or_default();
        assert!(!log.contains(token.as_str()), "a token in the log:\n{log}");
        assert!(
            signature.len() < 8 || !log.contains(signature),
            "a token's signature in the log:\n{log}"
        );
    }
}

#[test]
fn every_bad_token_gets_401_with_the_metadata_pointer() {
    let auth = AuthServer::start();
    let demo = demo(&auth, &[]);
    let resource = demo.url().to_owned();
    let good = auth.claims(&resource, "ann", "admin");
    let with = |changes: Value| AuthServer::with(good.clone(), changes);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let bad_tokens = [
        ("expired", auth.token(&with(json!({"exp": now - 3600})))),
        (
            "not yet valid",
            auth.token(&with(json!({"nbf": now + 3600}))),
        ),
        (
            "wrong issuer",
            auth.token(&with(json!({"iss": "http://127.0.0.1:9/other"}))),
        ),
        (
            "wrong audience",
            auth.token(&with(json!({"aud": "http://127.0.0.1:9/mcp"}))),
        ),
        ("no audience", auth.token(&with(json!({"aud": null})))),
        ("no expiry", auth.token(&with(json!({"exp": null})))),
        ("bad signature", auth.forge_bad_signature(&good)),
        ("a key never published", auth.forge_foreign_key(&good)),
        ("alg none", auth.forge_alg_none(&good)),
        (
            "HS256 keyed with the RSA public key",
            auth.forge_hs256_with_public_key(&good),
        ),
        ("garbage", "garbage".to_owned()),
        ("three parts of garbage", "a.b.c".to_owned()),
    ];
    for (case, token) in &bad_tokens {
        let response = post_with_token(&demo, token, &[], INITIALIZE);
        assert_unauthorized(&demo, case, &response, true);
    }
    let valid = auth.token(&good);
    for (case, headers) in [
        ("no token", vec![]),
        (
            "Basic auth",
            vec![("Authorization", "Basic YWxpY2U6czNjcmV0")],
        ),
        ("another scheme", vec![("Authorization", "Token abc")]),
    ] {
        let response = post(&demo, &headers, INITIALIZE);
        assert_unauthorized(&demo, case, &response, false);
    }
    // A token in the query string is never read (OAuth 2.1 §5.2).
    let query = raw_http(
        demo.addr(),
        "POST",
        &format!("/mcp?access_token={valid}"),
        &support::mcp_headers(&[]),
        INITIALIZE.as_bytes(),
        REQUEST,
    );
    assert_unauthorized(&demo, "a token in the query string", &query, false);
    // `/metrics` is behind the same check; the probes are not.
    let metrics = raw_http(demo.addr(), "GET", "/metrics", &[], b"", REQUEST);
    assert_unauthorized(&demo, "/metrics without a token", &metrics, false);
    let health = raw_http(demo.addr(), "GET", "/healthz", &[], b"", REQUEST);
    assert_eq!(health.status, 200, "{health:?}");
    let mut sent: Vec<String> = bad_tokens.into_iter().map(|(_, token)| token).collect();
    sent.push(valid);
    assert_not_logged(&demo, &sent);
}

#[test]
fn a_valid_token_initializes_and_calls_a_tool() {
    let auth = AuthServer::start();
    let demo = demo(&auth, &[]);
    let token = auth.token(&auth.claims(demo.url(), "ann", "admin"));
    let init = post_with_token(&demo, &token, &[], INITIALIZE);
    assert_eq!(init.status, 200, "{init:?}\n{}", demo.stderr());
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let with_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let initialized = post_with_token(
        &demo,
        &token,
        &with_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    let call = post_with_token(
        &demo,
        &token,
        &with_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"system","arguments":{"action":"health"}}}"#,
    );
    assert_eq!(call.status, 200, "{call:?}");
    assert!(
        call.body.contains(r#""id":2"#)
            && call.body.contains(r#""status":"ok""#)
            && !call.body.contains(r#""isError":true"#),
        "the tool's result: {call:?}"
    );
    // The session is the token's subject's: another user's valid token, naming it, gets
    // what an unknown session gets, and the owner goes on.
    let other = auth.token(&auth.claims(demo.url(), "mallory", "admin"));
    for (method, body) in [
        ("POST", r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#),
        ("DELETE", ""),
    ] {
        let authorization = format!("Bearer {other}");
        let mut headers = with_session.to_vec();
        headers.push(("Authorization", authorization.as_str()));
        headers.push(("Content-Type", "application/json"));
        headers.push(("Accept", "application/json, text/event-stream"));
        let stolen = raw_http(
            demo.addr(),
            method,
            "/mcp",
            &headers,
            body.as_bytes(),
            REQUEST,
        );
        assert_eq!(
            stolen.status, 404,
            "{method} with another user's token: {stolen:?}"
        );
    }
    let still = post_with_token(
        &demo,
        &token,
        &with_session,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#,
    );
    assert_eq!(still.status, 200, "the owner after the attempts: {still:?}");
    // The session needs the token on every request, not only the first.
    let without = post(
        &demo,
        &with_session,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    );
    assert_unauthorized(
        &demo,
        "a session's request without its token",
        &without,
        false,
    );
    let metrics = raw_http(
        demo.addr(),
        "GET",
        "/metrics",
        &[("Authorization", &format!("Bearer {token}"))],
        b"",
        REQUEST,
    );
    assert_eq!(metrics.status, 200, "{metrics:?}");
    assert_not_logged(&demo, &[token]);
}

/// A session for `token`: `initialize`, `notifications/initialized`, then `call` (a
/// JSON-RPC request with id 2); the call's response.
fn session_call(addr: std::net::SocketAddr, token: &str, call: &str) -> RawResponse {
    let authorization = format!("Bearer {token}");
    let auth = ("Authorization", authorization.as_str());
    let init = support::post_mcp(addr, &[auth], INITIALIZE, REQUEST);
    assert_eq!(init.status, 200, "{init:?}");
    let session = init.header("mcp-session-id").unwrap_or_default().to_owned();
    let headers = [
        auth,
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let initialized = support::post_mcp(
        addr,
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        REQUEST,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    support::post_mcp(addr, &headers, call, REQUEST)
}

#[test]
fn admin_and_guest_tokens_get_different_answers_at_once() {
    let auth = AuthServer::start();
    let demo = demo(&auth, &[]);
    let find_many = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"db_user","arguments":{"action":"find_many","take":2}}}"#;
    let admin = auth.token(&auth.claims(demo.url(), "ann", "admin"));
    let guest = auth.token(&auth.claims(demo.url(), "gus", "read"));
    let addr = demo.addr();
    let callers: Vec<_> = [admin, guest]
        .into_iter()
        .map(|token| std::thread::spawn(move || session_call(addr, &token, find_many)))
        .collect();
    let mut answers = callers.into_iter().map(|caller| {
        caller
            .join()
            .unwrap_or_else(|_| panic!("a caller panicked"))
    });
    let (admin, guest) = (
        answers.next().expect("the admin's answer"),
        answers.next().expect("the guest's answer"),
    );
    assert_eq!(admin.status, 200, "{admin:?}");
    assert!(
        !admin.body.contains(r#""isError":true"#) && admin.body.contains("email"),
        "the admin reads users: {admin:?}"
    );
    assert_eq!(guest.status, 200, "{guest:?}");
    assert!(
        guest.body.contains(r#""isError":true"#),
        "the guest is refused: {guest:?}"
    );
}

/// The official Python SDK: discovery through its own parsers and models, an admin and a
/// guest at the same time, an expired token (`tests/python/oauth_client.py`).
#[test]
fn the_python_sdk_discovers_the_issuer_and_calls_as_two_users() {
    let Some(python) = support::python() else {
        return;
    };
    let auth = AuthServer::start();
    let demo = demo(&auth, &[]);
    let url = demo.url().to_owned();
    let admin = auth.token(&auth.claims(&url, "ann", "admin"));
    let guest = auth.token(&auth.claims(&url, "gus", "read"));
    let expired = auth.token(&AuthServer::with(
        auth.claims(&url, "ann", "admin"),
        json!({"exp": 1_000_000}),
    ));
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/oauth_client.py");
    let mut command = Command::new(python);
    command
        .arg(script)
        .args([url.as_str(), auth.issuer(), &admin, &guest, &expired])
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let run = support::run_with_timeout(command, Duration::from_secs(120));
    assert!(
        run.success() && run.stdout.contains("ok: all checks passed"),
        "{}\n--- the demo's log ---\n{}",
        run.report(),
        demo.stderr()
    );
    println!("{}", run.stdout.trim_end());
    assert_not_logged(&demo, &[admin, guest, expired]);
}

#[test]
fn a_key_published_after_start_up_is_accepted() {
    let auth = AuthServer::start();
    let demo = demo(&auth, &[]);
    wait_for_keys(&auth, &demo);
    let first = auth.jwks_fetches();
    auth.rotate("k2");
    let token = auth.token(&auth.claims(demo.url(), "ann", "admin"));
    let init = post_with_token(&demo, &token, &[], INITIALIZE);
    assert_eq!(init.status, 200, "{init:?}\n{}", demo.stderr());
    assert_eq!(
        auth.jwks_fetches(),
        first + 1,
        "one fetch for the new key id"
    );
    // The cached keys serve the next requests.
    let again = post_with_token(&demo, &token, &[], INITIALIZE);
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(auth.jwks_fetches(), first + 1);
}

#[test]
fn a_missing_required_scope_gets_403() {
    let auth = AuthServer::start();
    let demo = demo(&auth, &["--oauth-scope", "mcp:tools"]);
    let lacking = auth.token(&auth.claims(demo.url(), "ann", "admin"));
    let refused = post_with_token(&demo, &lacking, &[], INITIALIZE);
    assert_eq!(refused.status, 403, "{refused:?}");
    let insufficient = challenge(&refused);
    assert!(
        insufficient.contains("error=\"insufficient_scope\"")
            && insufficient.contains("scope=\"mcp:tools\"")
            && insufficient.contains(&format!("resource_metadata=\"{}\"", metadata_url(&demo))),
        "{insufficient}"
    );
    assert!(refused.body.contains("mcp:tools"), "{refused:?}");
    // Without a token: 401 naming the scope to ask for.
    let missing = post(&demo, &[], INITIALIZE);
    assert_unauthorized(&demo, "no token", &missing, false);
    assert!(
        challenge(&missing).contains("scope=\"mcp:tools\""),
        "{missing:?}"
    );
    let granted = auth.token(&auth.claims(demo.url(), "ann", "mcp:tools admin"));
    let ok = post_with_token(&demo, &granted, &[], INITIALIZE);
    assert_eq!(ok.status, 200, "{ok:?}");
}

#[test]
fn the_metadata_document_follows_rfc_9728() {
    let auth = AuthServer::start();
    let demo = demo(&auth, &["--oauth-scope", "mcp:tools"]);
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let response = raw_http(demo.addr(), "GET", path, &[], b"", REQUEST);
        assert_eq!(response.status, 200, "{path}: {response:?}");
        assert!(
            response
                .header("content-type")
                .is_some_and(|value| value.starts_with("application/json")),
            "{path}: {response:?}"
        );
        assert_eq!(
            response.header("access-control-allow-origin"),
            Some("*"),
            "{path}"
        );
        let document: Value = serde_json::from_str(&response.body)
            .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {response:?}"));
        // RFC 9728 §2: `resource` is required, the resource identifier (an https or, on
        // loopback, http URL without a fragment); here the URL of the MCP endpoint, the
        // audience tokens must name.
        assert_eq!(document["resource"], json!(demo.url()), "{path}");
        // `authorization_servers`: issuer identifiers (RFC 8414) a client can use.
        assert_eq!(
            document["authorization_servers"],
            json!([auth.issuer()]),
            "{path}"
        );
        // `scopes_supported`: the scopes a client may request, here the demo's role scope
        // and the required one.
        let scopes = document["scopes_supported"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: scopes_supported is an array: {document}"));
        for scope in ["admin", "mcp:tools"] {
            assert!(scopes.contains(&json!(scope)), "{path}: {document}");
        }
        // `bearer_methods_supported`: only the header (no query, no form body).
        assert_eq!(
            document["bearer_methods_supported"],
            json!(["header"]),
            "{path}"
        );
        // Every member is one RFC 9728 §2 defines, with its type.
        let object = document
            .as_object()
            .unwrap_or_else(|| panic!("{path}: an object"));
        for (member, value) in object {
            match member.as_str() {
                "resource" | "resource_name" | "resource_documentation" | "jwks_uri" => {
                    assert!(value.is_string(), "{path}: {member}")
                }
                "authorization_servers"
                | "scopes_supported"
                | "bearer_methods_supported"
                | "resource_signing_alg_values_supported" => assert!(
                    value
                        .as_array()
                        .is_some_and(|items| items.iter().all(Value::is_string)),
                    "{path}: {member}"
                ),
                other => panic!("{path}: a member RFC 9728 does not define: {other}"),
            }
        }
    }
    // The 401's pointer is the path-suffixed URL that serves the document.
    let missing = post(&demo, &[], INITIALIZE);
    assert_unauthorized(&demo, "no token", &missing, false);
    // A browser's preflight for the document.
    let preflight = raw_http(
        demo.addr(),
        "OPTIONS",
        "/.well-known/oauth-protected-resource/mcp",
        &[
            ("Origin", "http://localhost:6274"),
            ("Access-Control-Request-Method", "GET"),
        ],
        b"",
        REQUEST,
    );
    assert!(
        preflight.status == 204 && preflight.header("access-control-allow-origin") == Some("*"),
        "{preflight:?}"
    );
}

#[test]
fn an_unreachable_issuer_does_not_stop_the_server() {
    // Nothing listens on port 9 of loopback: discovery fails at start-up.
    let demo = demo_of("http://127.0.0.1:9", &[]);
    let health = raw_http(demo.addr(), "GET", "/healthz", &[], b"", REQUEST);
    assert_eq!(health.status, 200, "{health:?}");
    // A token that cannot be checked: 503 with Retry-After, so the client retries instead
    // of signing in again.
    let auth = AuthServer::start();
    let token = auth.token(&auth.claims(demo.url(), "ann", "admin"));
    let unavailable = post_with_token(&demo, &token, &[], INITIALIZE);
    assert_eq!(unavailable.status, 503, "{unavailable:?}");
    assert!(
        unavailable.header("retry-after").is_some(),
        "{unavailable:?}"
    );
    // Without a token the answer is still the 401 that starts the OAuth flow.
    let missing = post(&demo, &[], INITIALIZE);
    assert_unauthorized(&demo, "no token", &missing, false);
    assert!(
        demo.stderr()
            .contains("cannot load the OAuth issuer's keys"),
        "{}",
        demo.stderr()
    );
}

#[test]
fn a_bad_issuer_url_refuses_to_start() {
    for issuer in ["not a url", "ftp://id.example.com"] {
        let mut command = Command::new(support::package_binary("fusion-demo"));
        command.args(["--http", "0", "--oauth-issuer", issuer]);
        let run = support::run_with_timeout(command, START);
        assert_eq!(
            run.status.and_then(|status| status.code()),
            Some(78),
            "{issuer}: {}",
            run.report()
        );
        assert!(
            run.stderr.contains("OAuth issuer"),
            "{issuer}: {}",
            run.report()
        );
    }
}
