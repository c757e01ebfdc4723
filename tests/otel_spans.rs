//! OpenTelemetry in process (issue 38): a call dropped after its k-th `Pending` poll, for
//! every k (as `tests/pipeline/cancel_safety.rs` drops them), leaves no span open, and every
//! span it opened is ended and exported; a tool's arguments reach its span only when it opts
//! in (`trace_arguments`), its secrets redacted.
//!
//! A binary of its own: the OpenTelemetry layer is built from the environment
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`), set here once before anything reads it, and the
//! exporter it installs is the process's.

mod support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use fusion_runtime::{log::OTEL_TARGET, prelude::*, testing::Tester};
use fusion_tests::cancel_safety::{self, StormCtx};
use serde_json::json;
use support::{drop_after::drop_after, otlp::OtlpReceiver};
use tracing_subscriber::{Layer, layer::SubscriberExt as _, registry::LookupSpan};

/// The most polls a sweep tries before it declares that the call never finishes.
const MAX_POLLS: usize = 100;

/// Counts fusion's spans that are open (made and not yet closed).
struct OpenSpans(Arc<AtomicI64>);

impl<S> Layer<S> for OpenSpans
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attributes.metadata().target() == OTEL_TARGET {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn on_close(&self, id: tracing::span::Id, context: tracing_subscriber::layer::Context<'_, S>) {
        if context
            .span(&id)
            .is_some_and(|span| span.metadata().target() == OTEL_TARGET)
        {
            self.0.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The process's receiver, its endpoint set in the environment on first use.
fn receiver() -> &'static OtlpReceiver {
    static RECEIVER: std::sync::OnceLock<OtlpReceiver> = std::sync::OnceLock::new();
    RECEIVER.get_or_init(|| {
        let receiver = OtlpReceiver::start();
        // SAFETY: written once, inside this initialization, which every test goes through
        // before it builds the layer (the only reader of these variables here); the
        // receiver's thread serves HTTP and reads none.
        unsafe {
            std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
            std::env::set_var("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
        }
        receiver
    })
}

/// Signs in; its password is a secret.
#[mcp_tool(trace_arguments)]
async fn sign_in(user: String, #[arg(secret)] password: String) -> String {
    format!("{user} signed in with {} characters", password.len())
}

/// Looks a user up; its arguments stay out of its span.
#[mcp_tool]
async fn look_up(user: String) -> String {
    format!("{user} found")
}

#[test]
fn arguments_reach_the_span_only_when_the_tool_opts_in_and_secrets_never() {
    let receiver = receiver();
    let subscriber = tracing_subscriber::registry().with(fusion_runtime::log::otel_layer());
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let tester = Tester::new(
        Server::builder("arguments", "0")
            .tool(sign_in)
            .tool(look_up)
            .build(),
    );
    runtime.block_on(async {
        let signed = tester
            .call(
                "sign_in",
                json!({"user": "ada-opted-in", "password": "hunter2-secret"}),
            )
            .await;
        assert!(!signed.is_error, "{signed:?}");
        let found = tester
            .call("look_up", json!({"user": "grace-not-opted-in"}))
            .await;
        assert!(!found.is_error, "{found:?}");
    });
    fusion_runtime::log::flush();
    let signed_span = receiver
        .wait_for(Duration::from_secs(10), |span| {
            span.span.name == "tools/call sign_in"
        })
        .expect("sign_in's span");
    let arguments = signed_span
        .attribute("gen_ai.tool.call.arguments")
        .expect("the arguments of a tool that opts in");
    assert!(arguments.contains("ada-opted-in"), "{arguments}");
    assert!(
        !arguments.contains("hunter2"),
        "a secret never: {arguments}"
    );
    assert!(arguments.contains("[redacted]"), "{arguments}");
    let looked_span = receiver
        .wait_for(Duration::from_secs(10), |span| {
            span.span.name == "tools/call look_up"
        })
        .expect("look_up's span");
    assert_eq!(looked_span.attribute("gen_ai.tool.call.arguments"), None);
    let shown = format!("{:?}", looked_span.span);
    assert!(!shown.contains("grace-not-opted-in"), "{shown}");
}

#[test]
fn a_call_dropped_at_any_poll_leaves_no_span_open() {
    let receiver = receiver();
    let open = Arc::new(AtomicI64::new(0));
    let subscriber = tracing_subscriber::registry()
        .with(fusion_runtime::log::otel_layer())
        .with(OpenSpans(Arc::clone(&open)));
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("a runtime");
    // A retried call (its attempts, its backoff) and an idempotent one (its claim).
    let calls = [
        ("blip", json!({"key": "traced"})),
        (
            "place_order",
            json!({"request_id": "order-1", "item": "widget"}),
        ),
    ];
    let mut made = 0;
    for (tool, arguments) in calls {
        let mut completed = false;
        for k in 0..MAX_POLLS {
            let ctx = StormCtx::default();
            let server = cancel_safety::record(cancel_safety::builder(ctx.clone()).build(), &ctx);
            let tester = Tester::new(server);
            let finished = runtime.block_on(drop_after(tester.call(tool, arguments.clone()), k));
            // A call dropped unpolled never made its span.
            made += usize::from(k > 0);
            assert_eq!(
                open.load(Ordering::SeqCst),
                0,
                "`{tool}` dropped after {k} pending polls left a span open"
            );
            if finished.is_some() {
                completed = true;
                break;
            }
        }
        assert!(
            completed,
            "`{tool}` never finished within {MAX_POLLS} polls"
        );
    }
    assert!(made >= 4, "the sweeps dropped calls at {made} points only");
    // Every call's span was ended, so every one of them is exported.
    fusion_runtime::log::flush();
    let exported = || {
        receiver
            .spans()
            .iter()
            .filter(|span| {
                ["tools/call blip", "tools/call place_order"].contains(&span.span.name.as_str())
            })
            .count()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while exported() < made && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(exported(), made, "every call's span ended and was exported");
}
