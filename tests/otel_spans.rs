//! OpenTelemetry and cancellation (issue 38): a call dropped after its k-th `Pending` poll,
//! for every k (as `tests/pipeline/cancel_safety.rs` drops them), leaves no span open, and
//! every span it opened is ended and exported.
//!
//! A binary of its own: the OpenTelemetry layer is built from the environment
//! (`OTEL_EXPORTER_OTLP_ENDPOINT`), set here before any test thread could read it, and the
//! exporter it installs is the process's.

mod support;

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use fusion_runtime::{log::OTEL_TARGET, testing::Tester};
use fusion_tests::cancel_safety::{self, StormCtx};
use serde_json::json;
use support::otlp::OtlpReceiver;
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

/// Polls `future` until its `k`-th `Pending`, then drops it (zero: dropped unpolled).
struct DropAfter<F> {
    inner: Option<Pin<Box<F>>>,
    pendings_left: usize,
}

impl<F: Future> Future for DropAfter<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(inner) = this.inner.as_mut().filter(|_| this.pendings_left > 0) else {
            this.inner = None;
            return Poll::Ready(None);
        };
        match inner.as_mut().poll(cx) {
            Poll::Ready(output) => {
                this.inner = None;
                Poll::Ready(Some(output))
            }
            Poll::Pending => {
                this.pendings_left -= 1;
                if this.pendings_left == 0 {
                    this.inner = None;
                    Poll::Ready(None)
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

#[test]
fn a_call_dropped_at_any_poll_leaves_no_span_open() {
    let receiver = OtlpReceiver::start();
    // SAFETY: the environment is written before this binary's one test makes any thread
    // that reads it (the receiver's thread serves HTTP and reads none).
    unsafe {
        std::env::set_var("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
        std::env::set_var("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
    }
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
            let call = DropAfter {
                inner: Some(Box::pin(tester.call(tool, arguments.clone()))),
                pendings_left: k,
            };
            let finished = runtime.block_on(call);
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
        assert!(completed, "`{tool}` never finished within {MAX_POLLS} polls");
    }
    assert!(made >= 4, "the sweeps dropped calls at {made} points only");
    // Every call's span was ended, so every one of them is exported.
    fusion_runtime::log::flush();
    let exported = || {
        receiver
            .spans()
            .iter()
            .filter(|span| span.span.name.starts_with("tools/call "))
            .count()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while exported() < made && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(exported(), made, "every call's span ended and was exported");
}
