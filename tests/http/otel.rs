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
    let span = receiver
        .wait_for(Duration::from_secs(10), |span| {
            span.span.name == "tools/call add"
        })
        .unwrap_or_else(|| {
            panic!(
                "no `tools/call add` span reached the receiver\n--- stderr ---\n{}",
                server.stderr()
            )
        });
    assert_eq!(span.trace_id(), TRACE_ID);
    assert_eq!(span.parent_span_id(), CLIENT_SPAN_ID);
    assert_eq!(span.span.kind, 2, "kind SERVER");
    assert_eq!(span.attribute("gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(span.attribute("jsonrpc.request.id").as_deref(), Some("3"));
}
