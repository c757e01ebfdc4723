//! OpenTelemetry (issue 38, feature `otel`): the quickstart over stdio exports its spans to
//! an OTLP receiver of the test's own, which decodes them with the official protobuf
//! definitions. A call that carries W3C trace context in `params._meta` gets a server span
//! in that trace, under that parent, with the MCP semantic conventions' attributes; a
//! retried call has a child span for each attempt; a refused call carries `error.type`.

use std::time::Duration;

use serde_json::json;

use crate::support::{self, otlp::OtlpReceiver, stdio_peer::StdioPeer};

/// The client's trace and span, as a client would put them in `params._meta`.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN_ID: &str = "00f067aa0ba902b7";
/// A trace the client did not sample.
const UNSAMPLED_TRACE_ID: &str = "5bf92f3577b34da6a3ce929d0e0e4737";

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
    // Every request is a server span, not only calls: a list under the client's span too.
    let listed = server.request(
        json!(10),
        "tools/list",
        json!({"_meta": {"traceparent": traceparent}}),
    );
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    // A client span its own sampler dropped (flags 00): the default sampler follows the
    // parent, and the call makes no span.
    let unsampled = server.request(
        json!(9),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "unsampled"},
            "_meta": {"traceparent": format!("00-{UNSAMPLED_TRACE_ID}-{CLIENT_SPAN_ID}-00")}}),
    );
    assert_eq!(unsampled["result"]["isError"], json!(false), "{unsampled}");
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
    let call = receiver.span_named("tools/call echo", ARRIVAL, &server.stderr());
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
    // `echo` has no retry policy: it runs once, in the call's span (no `attempt` child).
    assert!(
        !receiver
            .spans()
            .iter()
            .any(|span| span.span.name == "attempt" && span.parent_span_id() == call.span_id()),
        "a tool that cannot retry has no attempt span"
    );
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
    assert!(
        !receiver
            .spans()
            .iter()
            .any(|span| span.trace_id() == UNSAMPLED_TRACE_ID),
        "a call whose parent was not sampled is not traced"
    );
    // Invalid input leaves the status unset (STATUS_CODE_UNSET = 0): the server did its job.
    let status_code = divide.span.status.as_ref().map_or(0, |status| status.code);
    assert_eq!(status_code, 0, "{:?}", divide.span.status);
    // The methods without a target are named by the method alone.
    let list = receiver.span_named("tools/list", ARRIVAL, &server.stderr());
    assert_eq!(
        list.trace_id(),
        TRACE_ID,
        "the list is in the client's trace"
    );
    assert_eq!(list.parent_span_id(), CLIENT_SPAN_ID);
    assert_eq!(list.span.kind, 2, "kind SERVER");
    assert_eq!(
        list.attribute("mcp.method.name").as_deref(),
        Some("tools/list")
    );
    assert_eq!(list.attribute("jsonrpc.request.id").as_deref(), Some("10"));
    let initialize = receiver.span_named("initialize", ARRIVAL, &server.stderr());
    assert_eq!(
        initialize.parent_span_id(),
        "",
        "no trace context: a root span"
    );
    assert_eq!(
        initialize.attribute("mcp.method.name").as_deref(),
        Some("initialize")
    );
}

/// The semantic conventions' bucket boundaries of `mcp.server.operation.duration`.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Over grpc: a retried call's span has one `attempt` child per run and a backoff event;
/// an idempotent replay, a circuit that opens and then refuses, and a validation failure
/// are events of their calls' spans (codes, never values); the metrics arrive with the
/// conventions' histogram and fusion's counters; each call's JSON log line carries the
/// trace and span ids of its span.
#[test]
fn over_grpc_policies_are_span_events_and_metrics_follow_the_conventions() {
    let receiver = OtlpReceiver::start_grpc();
    let endpoint = receiver.endpoint();
    let mut server = StdioPeer::spawn(
        &support::example_binary("cancel_safety"),
        &[],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_SERVICE_NAME", "cancel-safety-under-test"),
            // The metrics leave when the process ends, whatever the interval; a short one
            // shows the periodic export works too.
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
            ("FUSION_LOG_FORMAT", "json"),
        ],
    );
    server.initialize();
    // Fails transiently on its first run, succeeds on the retry.
    let blip = server.call(json!(1), "blip", json!({"key": "traced"}));
    assert_eq!(blip["result"]["isError"], json!(false), "{blip}");
    // The same idempotency key twice: the second is a replay.
    let order = json!({"request_id": "order-1", "item": "widget"});
    for id in [2, 3] {
        let placed = server.call(json!(id), "place_order", order.clone());
        assert_eq!(placed["result"]["isError"], json!(false), "{placed}");
    }
    // The circuit opens on the first failure, then refuses the next call at once.
    let failed = server.call(json!(4), "breaker", json!({"fail": true}));
    assert_eq!(failed["result"]["isError"], json!(true), "{failed}");
    let refused = server.call(json!(5), "breaker", json!({"fail": false}));
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    // Invalid input: a string where a number is expected, and a field missing.
    let invalid = server.call(json!(6), "work", json!({"ms": "secret-value"}));
    assert_eq!(invalid["result"]["isError"], json!(true), "{invalid}");
    drop(server.take_stdin());
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some_and(|status| status.success()),
        "the server did not end cleanly at the end of its input: {status:?}\n{}",
        server.stderr()
    );
    let stderr = server.stderr();
    let span_named = |name: &str| receiver.span_named(name, ARRIVAL, &stderr);
    let blip_span = span_named("tools/call blip");
    let attempts: Vec<String> = receiver
        .spans()
        .iter()
        .filter(|span| span.span.name == "attempt" && span.parent_span_id() == blip_span.span_id())
        .filter_map(|span| span.attribute("attempt"))
        .collect();
    let mut sorted = attempts.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["1", "2"],
        "one attempt span per run of the handler"
    );
    assert!(
        blip_span
            .event_names()
            .contains(&"fusion.retry.backoff".to_owned()),
        "the backoff is an event: {:?}",
        blip_span.event_names()
    );
    let replayed = receiver
        .spans()
        .into_iter()
        .filter(|span| span.span.name == "tools/call place_order")
        .filter(|span| {
            span.event_names()
                .contains(&"fusion.idempotency.replayed".to_owned())
        })
        .count();
    assert_eq!(replayed, 1, "the second order is a replay, and says so");
    let breakers: Vec<Vec<String>> = receiver
        .spans()
        .iter()
        .filter(|span| span.span.name == "tools/call breaker")
        .map(|span| span.event_names())
        .collect();
    assert!(
        breakers
            .iter()
            .any(|events| events.contains(&"fusion.circuit.opened".to_owned()))
            && breakers
                .iter()
                .any(|events| events.contains(&"fusion.circuit.refused".to_owned())),
        "the circuit opening and refusing are events: {breakers:?}"
    );
    let work = span_named("tools/call work");
    let validation = work
        .span
        .events
        .iter()
        .find(|event| event.name == "fusion.validation.failed")
        .unwrap_or_else(|| {
            panic!(
                "the validation failure is an event: {:?}",
                work.event_names()
            )
        });
    let shown = format!("{:?}", validation.attributes);
    assert!(shown.contains("type"), "the issue's code: {shown}");
    assert!(!shown.contains("secret-value"), "never the value: {shown}");
    assert_eq!(
        work.attribute("error.type").as_deref(),
        Some("invalid_arguments")
    );
    // Metrics: the conventions' histogram, labelled by method and tool, with its buckets.
    let duration = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "mcp.server.operation.duration"
                && point.attribute("gen_ai.tool.name") == Some("blip")
        })
        .unwrap_or_else(|| panic!("no duration of blip: {:?}", receiver.points()));
    assert_eq!(duration.unit, "s");
    assert_eq!(duration.attribute("mcp.method.name"), Some("tools/call"));
    assert_eq!(duration.count, 1);
    assert_eq!(duration.bounds, DURATION_BUCKETS);
    assert_eq!(duration.attribute("error.type"), None, "a success");
    let refused_duration = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "mcp.server.operation.duration"
                && point.attribute("gen_ai.tool.name") == Some("work")
        })
        .expect("the refused call's duration");
    assert_eq!(
        refused_duration.attribute("error.type"),
        Some("invalid_arguments")
    );
    let retries = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "fusion.tool.retries"
                && point.attribute("gen_ai.tool.name") == Some("blip")
        })
        .expect("blip's retries");
    assert_eq!(retries.value, 1.0);
    // Counted in atomics and observed at export: blip ran twice and ended retried_ok.
    let attempts = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "fusion.tool.attempts"
                && point.attribute("gen_ai.tool.name") == Some("blip")
        })
        .expect("blip's attempts");
    assert_eq!(attempts.value, 2.0);
    let retried = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "fusion.tool.calls"
                && point.attribute("gen_ai.tool.name") == Some("blip")
                && point.attribute("fusion.outcome") == Some("retried_ok")
        })
        .expect("blip's call counted as retried_ok");
    assert_eq!(retried.value, 1.0);
    let replays = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "fusion.tool.calls"
                && point.attribute("gen_ai.tool.name") == Some("place_order")
                && point.attribute("fusion.outcome") == Some("replayed")
        })
        .expect("the replay counted");
    assert_eq!(replays.value, 1.0);
    let circuit = receiver
        .wait_for_point(ARRIVAL, |point| {
            point.metric == "fusion.tool.circuit.open"
                && point.attribute("gen_ai.tool.name") == Some("breaker")
        })
        .expect("the breaker's circuit state");
    assert_eq!(circuit.value, 1.0, "open");
    // The call log's line for blip carries the trace and span ids of blip's span.
    let stderr = server.stderr();
    let line = stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["target"] == "fusion::call" && line["fields"]["tool"] == "blip")
        .unwrap_or_else(|| panic!("no call line for blip:\n{stderr}"));
    assert_eq!(
        line["fields"]["trace_id"],
        json!(blip_span.trace_id()),
        "{line}"
    );
    assert_eq!(
        line["fields"]["span_id"],
        json!(blip_span.span_id()),
        "{line}"
    );
}
