//! A call's run, unless the call is cancelled first.
//!
//! A struct rather than an `async fn`: an `async fn` keeps the future it is handed as an
//! argument and again once pinned, so the run (the largest part of a call's future, about
//! 6.5 KB) was stored twice, and every call's future moved twice its size. This holds it
//! once.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use pin_project_lite::pin_project;
use tokio_util::sync::WaitForCancellationFuture;

use crate::{
    call::Call,
    failure::{Failure, FailureKind},
};

use super::cache::Answer;

pin_project! {
    /// `run`, unless `call` is cancelled first (then a `cancelled` answer, and `run` is
    /// dropped with this future). The cancellation is looked at before each poll of `run`
    /// (as a `biased` select would), but waited for only once `run` waits, so a call that
    /// ends in its first poll never registers with the token (a lock and a list entry
    /// each way).
    pub(super) struct UntilCancelled<'a, F> {
        call: &'a Call,
        #[pin]
        run: F,
        #[pin]
        cancelled: WaitForCancellationFuture<'a>,
    }
}

/// `run`, unless `call` is cancelled first ([`UntilCancelled`]).
pub(super) fn until_cancelled<F: Future<Output = Answer>>(
    call: &Call,
    run: F,
) -> UntilCancelled<'_, F> {
    UntilCancelled {
        call,
        run,
        cancelled: call.cancellation().cancelled(),
    }
}

impl<F: Future<Output = Answer>> Future for UntilCancelled<'_, F> {
    type Output = Answer;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Answer> {
        let this = self.project();
        if this.call.is_cancelled() {
            return Poll::Ready(cancelled_run());
        }
        if let Poll::Ready(ran) = this.run.poll(cx) {
            return Poll::Ready(ran);
        }
        match this.cancelled.poll(cx) {
            Poll::Ready(()) => Poll::Ready(cancelled_run()),
            Poll::Pending => Poll::Pending,
        }
    }
}

fn cancelled_run() -> Answer {
    Answer::no_attempt(Failure::new(FailureKind::Cancelled))
}
