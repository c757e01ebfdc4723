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
