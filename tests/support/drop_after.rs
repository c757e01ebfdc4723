//! A future dropped after its k-th `Pending` poll, as a client's cancellation or a
//! `select!` drops one: the sweeps of `pipeline/cancel_safety.rs` and `otel_spans.rs`.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

/// Polls the inner future at most `pendings` times: when its `pendings`-th poll returns
/// `Pending`, it is dropped on the spot (as a client's cancellation or a `select!` would)
/// and this resolves to `None`. Zero drops it unpolled.
pub(crate) struct DropAfter<F> {
    inner: Option<Pin<Box<F>>>,
    pendings_left: usize,
}

impl<F: Future> Future for DropAfter<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if this.pendings_left == 0 {
            this.inner = None;
            return Poll::Ready(None);
        }
        let Some(inner) = this.inner.as_mut() else {
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

/// Runs `future`, dropping it after its `k`-th `Pending`; its output if it finished first.
pub(crate) async fn drop_after<F: Future>(future: F, k: usize) -> Option<F::Output> {
    DropAfter {
        inner: Some(Box::pin(future)),
        pendings_left: k,
    }
    .await
}
