//! OpenTelemetry over Streamable HTTP (issue 38, feature `otel`): a call whose HTTP request
//! carries a `traceparent` header is a server span in that trace, under that parent,
//! exported to an OTLP receiver of the test's own when the server ends (SIGTERM).

use std::{process::Command, time::Duration};

use crate::support::{self, HttpServer, otlp::OtlpReceiver};

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN_ID: &str = "b7ad6b7169203331";

#[test]
fn a_call_with_a_traceparent_header_is_a_server_span_in_that_trace() {
    let receiver = OtlpReceiver::start();
    let mut command = Command::new(support::example_binary("quickstart"));
    command
        .args(["--http", "0", "--stateless"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "quickstart-over-http");
    let mut server = HttpServer::start(command, Duration::from_secs(30));
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN_ID}-01");
    let answered = support::post_mcp(
        server.addr(),
        &[("traceparent", traceparent.as_str())],
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
        Duration::from_secs(10),
    );
    assert_eq!(answered.status, 200, "{answered:?}");
    server.signal("TERM");
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some_and(|status| status.success()),
        "the server did not end cleanly on SIGTERM: {status:?}\n{}",
        server.stderr()
    );
    let span = receiver.span_named("tools/call add", Duration::from_secs(10), &server.stderr());
    assert_eq!(span.trace_id(), TRACE_ID);
    assert_eq!(span.parent_span_id(), CLIENT_SPAN_ID);
    assert_eq!(span.span.kind, 2, "kind SERVER");
    assert_eq!(span.attribute("gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(span.attribute("jsonrpc.request.id").as_deref(), Some("3"));
}

/// `prompts/get` and `resources/read` are server spans too (`prompts/get <prompt>` with
/// `gen_ai.prompt.name`; `resources/read` with `mcp.resource.uri`), under the client's
/// `traceparent`; their durations reach the conventions' histogram, an unknown prompt
/// under `_OTHER` and its JSON-RPC error code as `error.type`. So are the methods without
/// a target (`initialize`, `ping`, the lists, a subscription), named by the method.
#[test]
fn prompts_and_resources_are_server_spans_and_measured() {
    let receiver = OtlpReceiver::start();
    let mut command = Command::new(support::example_binary("conformance"));
    command
        .args(["--port", "0", "--stateless"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "conformance-over-http");
    let mut server = HttpServer::start(command, Duration::from_secs(30));
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN_ID}-01");
    let headers = [("traceparent", traceparent.as_str())];
    for body in [
        r#"{"jsonrpc":"2.0","id":11,"method":"prompts/get","params":{"name":"test_simple_prompt"}}"#,
        r#"{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"test://static-text"}}"#,
        r#"{"jsonrpc":"2.0","id":13,"method":"prompts/get","params":{"name":"no-such-prompt-xyz"}}"#,
        r#"{"jsonrpc":"2.0","id":14,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":15,"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":16,"method":"prompts/list"}"#,
        r#"{"jsonrpc":"2.0","id":17,"method":"resources/templates/list"}"#,
        r#"{"jsonrpc":"2.0","id":18,"method":"resources/subscribe","params":{"uri":"test://no-such-resource"}}"#,
    ] {
        let answered = support::post_mcp(server.addr(), &headers, body, Duration::from_secs(10));
        assert_eq!(answered.status, 200, "{answered:?}");
    }
    server.signal("TERM");
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some_and(|status| status.success()),
        "the server did not end cleanly on SIGTERM: {status:?}\n{}",
        server.stderr()
    );
    let stderr = server.stderr();
    let wait = |name: &str| receiver.span_named(name, Duration::from_secs(10), &stderr);
    let prompt = wait("prompts/get test_simple_prompt");
    assert_eq!(prompt.trace_id(), TRACE_ID);
    assert_eq!(prompt.parent_span_id(), CLIENT_SPAN_ID);
    assert_eq!(prompt.span.kind, 2, "kind SERVER");
    assert_eq!(
        prompt.attribute("mcp.method.name").as_deref(),
        Some("prompts/get")
    );
    assert_eq!(
        prompt.attribute("gen_ai.prompt.name").as_deref(),
        Some("test_simple_prompt")
    );
    assert_eq!(
        prompt.attribute("jsonrpc.request.id").as_deref(),
        Some("11")
    );
    let read = wait("resources/read");
    assert_eq!(read.parent_span_id(), CLIENT_SPAN_ID);
    assert_eq!(
        read.attribute("mcp.resource.uri").as_deref(),
        Some("test://static-text")
    );
    let unknown = wait("prompts/get no-such-prompt-xyz");
    assert!(
        unknown
            .attribute("error.type")
            .is_some_and(|code| code.starts_with('-')),
        "a JSON-RPC error's code: {:?}",
        unknown.span.attributes
    );
    for (method, id) in [
        ("tools/list", "14"),
        ("ping", "15"),
        ("prompts/list", "16"),
        ("resources/templates/list", "17"),
        ("resources/subscribe", "18"),
    ] {
        let span = wait(method);
        assert_eq!(span.parent_span_id(), CLIENT_SPAN_ID, "{method}");
        assert_eq!(span.span.kind, 2, "{method}: kind SERVER");
        assert_eq!(span.attribute("mcp.method.name").as_deref(), Some(method));
        assert_eq!(span.attribute("jsonrpc.request.id").as_deref(), Some(id));
    }
    let unknown_uri = wait("resources/subscribe");
    assert!(
        unknown_uri.attribute("error.type").is_some(),
        "a subscription to no resource fails: {:?}",
        unknown_uri.span.attributes
    );
    let duration = |wanted: &dyn Fn(&support::otlp::ReceivedPoint) -> bool| {
        receiver.wait_for_point(Duration::from_secs(10), |point| {
            point.metric == "mcp.server.operation.duration" && wanted(point)
        })
    };
    let known =
        duration(&|point| point.attribute("gen_ai.prompt.name") == Some("test_simple_prompt"))
            .unwrap_or_else(|| panic!("no duration of the prompt: {:?}", receiver.points()));
    assert_eq!(known.attribute("mcp.method.name"), Some("prompts/get"));
    assert_eq!(known.count, 1);
    let other = duration(&|point| point.attribute("gen_ai.prompt.name") == Some("_OTHER"))
        .expect("the unknown prompt, under _OTHER");
    assert!(other.attribute("error.type").is_some(), "{other:?}");
    let resource = duration(&|point| point.attribute("mcp.method.name") == Some("resources/read"))
        .expect("the read's duration");
    assert!(
        resource.attribute("mcp.resource.uri").is_none(),
        "a URI is no metric label: {resource:?}"
    );
    let list = duration(&|point| point.attribute("mcp.method.name") == Some("tools/list"))
        .expect("the list's duration");
    assert_eq!(list.count, 1);
}

/// A call through the gateway (`examples/gateway.rs`) is one trace: the gateway's server
/// span under the client's `traceparent`, its CLIENT span for the upstream's call under that,
/// and the upstream's own server span (another process, exporting to the same receiver)
/// under the CLIENT span, continued from the `_meta` of the request the gateway sent.
#[test]
fn a_call_through_the_gateway_is_one_trace_across_both_servers() {
    let receiver = OtlpReceiver::start();
    let mut command = Command::new(support::example_binary("quickstart"));
    command
        .args(["--http", "0", "--stateless"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "upstream-under-test");
    let mut upstream = HttpServer::start(command, Duration::from_secs(30));
    let mut command = Command::new(support::example_binary("gateway"));
    command
        .args(["--http", "0", "--stateless", "--app-url", upstream.url()])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SERVICE_NAME", "gateway-under-test");
    let mut gateway = HttpServer::start(command, Duration::from_secs(30));
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN_ID}-01");
    let answered = support::post_mcp(
        gateway.addr(),
        &[("traceparent", traceparent.as_str())],
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"app_add","arguments":{"a":2,"b":3}}}"#,
        Duration::from_secs(10),
    );
    assert_eq!(answered.status, 200, "{answered:?}");
    assert_eq!(
        answered.message()["result"]["structuredContent"]["result"],
        5,
        "{answered:?}"
    );
    for server in [&mut gateway, &mut upstream] {
        server.signal("TERM");
        let status = server.wait_exit(Duration::from_secs(20));
        assert!(
            status.is_some_and(|status| status.success()),
            "a server did not end cleanly on SIGTERM: {status:?}\n{}",
            server.stderr()
        );
    }
    let stderr = format!("{}\n{}", gateway.stderr(), upstream.stderr());
    let served = receiver.span_named("tools/call app_add", Duration::from_secs(10), &stderr);
    assert_eq!(served.trace_id(), TRACE_ID);
    assert_eq!(served.parent_span_id(), CLIENT_SPAN_ID);
    let wait = |kind: i32| {
        receiver
            .wait_for(Duration::from_secs(10), |span| {
                span.span.name == "tools/call add" && span.span.kind == kind
            })
            .unwrap_or_else(|| panic!("no `tools/call add` span of kind {kind}\n{stderr}"))
    };
    let client = wait(3);
    let upstream_served = wait(2);
    assert_eq!(
        client.trace_id(),
        TRACE_ID,
        "the CLIENT span is in the caller's trace"
    );
    assert_eq!(
        upstream_served.trace_id(),
        TRACE_ID,
        "so is the upstream's own span"
    );
    assert_eq!(
        upstream_served.parent_span_id(),
        client.span_id(),
        "the upstream's span continues the gateway's CLIENT span"
    );
    assert_eq!(client.attribute("server.address").as_deref(), Some("app"));
}
