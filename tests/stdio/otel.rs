//! OpenTelemetry (issue 38, feature `otel`): the quickstart over stdio exports its spans to
//! an OTLP receiver of the test's own, which decodes them with the official protobuf
//! definitions. A call that carries W3C trace context in `params._meta` gets a server span
//! in that trace, under that parent, with the MCP semantic conventions' attributes, and a
//! child span for its attempt; a refused call carries `error.type`.

use std::time::Duration;

use serde_json::json;

use crate::support::{self, otlp::OtlpReceiver, stdio_peer::StdioPeer};

/// The client's trace and span, as a client would put them in `params._meta`.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN_ID: &str = "00f067aa0ba902b7";

/// How long the spans may take to reach the receiver once the server has exited (the
/// exporter flushes before the process ends).
const ARRIVAL: Duration = Duration::from_secs(10);

/// The quickstart over stdio, exporting to `receiver`.
fn quickstart_exporting_to(receiver: &OtlpReceiver) -> StdioPeer {
    let endpoint = receiver.endpoint();
    StdioPeer::spawn(
        &support::example_binary("quickstart"),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "quickstart-under-test"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ],
    )
}

#[test]
fn a_call_with_trace_context_is_a_server_span_in_the_clients_trace() {
    let receiver = OtlpReceiver::start();
    let mut server = quickstart_exporting_to(&receiver);
    server.initialize();
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN_ID}-01");
    let answer = server.request(
        json!(7),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "traced"},
            "_meta": {"traceparent": traceparent}}),
    );
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    // Invalid input: refused with `error.type`, the status left unset.
    let refused = server.call(json!(8), "divide", json!({"a": "one", "b": 2}));
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    drop(server.take_stdin());
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some_and(|status| status.success()),
        "the server did not end cleanly at the end of its input: {status:?}\n{}",
        server.stderr()
    );
    let call = receiver
        .wait_for(ARRIVAL, |span| span.span.name == "tools/call echo")
        .unwrap_or_else(|| {
            panic!(
                "no `tools/call echo` span reached the receiver; got {:?}\n--- stderr ---\n{}",
                receiver
                    .spans()
                    .iter()
                    .map(|span| span.span.name.clone())
                    .collect::<Vec<_>>(),
                server.stderr()
            )
        });
    assert_eq!(
        call.trace_id(),
        TRACE_ID,
        "the span is in the client's trace"
    );
    assert_eq!(
        call.parent_span_id(),
        CLIENT_SPAN_ID,
        "under the client's span"
    );
    // SPAN_KIND_SERVER in the OTLP protobuf.
    assert_eq!(call.span.kind, 2, "kind SERVER");
    assert_eq!(
        call.attribute("mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(call.attribute("gen_ai.tool.name").as_deref(), Some("echo"));
    assert_eq!(call.attribute("jsonrpc.request.id").as_deref(), Some("7"));
    assert_eq!(
        call.attribute("error.type"),
        None,
        "a success has no error.type"
    );
    assert!(
        call.resource
            .iter()
            .any(|(key, value)| key == "service.name" && value == "quickstart-under-test"),
        "OTEL_SERVICE_NAME names the service: {:?}",
        call.resource
    );
    let attempt = receiver
        .wait_for(ARRIVAL, |span| {
            span.span.name == "attempt" && span.parent_span_id() == call.span_id()
        })
        .expect("the handler's attempt, a child of the call's span");
    assert_eq!(attempt.trace_id(), TRACE_ID);
    assert_eq!(attempt.attribute("attempt").as_deref(), Some("1"));
    // The refused call: a root span of its own (no trace context), with `error.type` as
    // `_meta["fusion/failure"]` names the failure.
    let divide = receiver
        .wait_for(ARRIVAL, |span| span.span.name == "tools/call divide")
        .expect("the refused call's span");
    assert_eq!(divide.parent_span_id(), "", "no trace context: a root span");
    assert_eq!(
        divide.attribute("error.type").as_deref(),
        Some("invalid_arguments"),
        "{:?}",
        divide.span.attributes
    );
    // Argument values are never recorded: no attribute of the spans, nor of their events,
    // holds what the client sent.
    for span in receiver.spans() {
        let attributes = span
            .span
            .attributes
            .iter()
            .chain(span.span.events.iter().flat_map(|event| &event.attributes));
        for attribute in attributes {
            let shown = format!("{:?}", attribute.value);
            assert!(
                !shown.contains("traced") && !shown.contains("\"one\""),
                "an argument's value reached span `{}`: {} = {shown}",
                span.span.name,
                attribute.key
            );
        }
    }
    // Invalid input leaves the status unset (STATUS_CODE_UNSET = 0): the server did its job.
    let status_code = divide.span.status.as_ref().map_or(0, |status| status.code);
    assert_eq!(status_code, 0, "{:?}", divide.span.status);
}
