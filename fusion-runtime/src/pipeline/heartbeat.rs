//! The heartbeat: while a call whose client asked for progress runs, and its handler has
//! sent none for a while, fusion sends a progress notification itself, saying the tool is
//! still working. Hosts time a call out at about 60 s even while it works; a client that
//! resets its timeout on progress (the TypeScript SDK's `resetTimeoutOnProgress`) then
//! keeps waiting for as long as the tool takes, within the tool's own `timeout`.
//!
//! The spec asks each progress value to be greater than the last, so a heartbeat repeats
//! the last value raised by the least step an `f64` has: the same to a reader, and still
//! increasing. It covers the whole run: every attempt, each backoff, a wait for a
//! `serialize` lock. It stops with the call (answered, failed, timed out, cancelled: the
//! call's future, and the heartbeat with it, is dropped), so no heartbeat follows the
//! answer. A call without a progress token costs one check.

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use pin_project_lite::pin_project;
use tokio::time::Instant;

use crate::{call::Call, call::progress::next_beat, setup::builder::ServerBuilder};

/// The message of a heartbeat's progress notification.
pub(crate) const STILL_WORKING: &str = "still working";

/// Runs `work` (a call's whole run), with a heartbeat every `every` that the handler's own
/// progress leaves silent, when the call's client asked for progress.
pub(super) fn with_heartbeat<'a, F: Future + 'a>(
    call: &'a Call,
    every: Option<Duration>,
    work: F,
) -> impl Future<Output = F::Output> + 'a {
    // Boxed: only a call whose client asked for progress has a heartbeat (its future is
    // about 1.8 KB, the progress notification's hand-off), and every other call's future
    // would carry the room for it.
    let beats = every
        .filter(|every| !every.is_zero() && call.wants_progress())
        .map(|every| Box::pin(beats(call, every, Instant::now())));
    WhileWorking { work, beats }
}

pin_project! {
    /// `work`, with `beats` polled after it each time it waits. A struct rather than an
    /// `async fn` racing the two: an `async fn` keeps the work it is handed as an argument
    /// and again once pinned (three times with an early `work.await`), and every call's
    /// future moved that much more. This holds it once.
    struct WhileWorking<F, B> {
        #[pin]
        work: F,
        beats: Option<Pin<Box<B>>>,
    }
}

impl<F: Future, B: Future<Output = Infallible>> Future for WhileWorking<F, B> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        // The work first (as a `biased` select): a beat due at the same time as the answer
        // is not sent. Dropping this future drops the work (its destructors run) and ends
        // the heartbeat.
        if let Poll::Ready(output) = this.work.poll(cx) {
            return Poll::Ready(output);
        }
        if let Some(beats) = this.beats.as_mut() {
            // Never ready: `beats` loops until dropped with the work.
            let Poll::Pending = beats.as_mut().poll(cx);
        }
        Poll::Pending
    }
}

/// The heartbeats of a call started at `started`: a progress notification each time
/// `every` passes without one. Polled only while the work waits, so a slow client's
/// hand-off never stalls the handler; a hand-off cut short (the work ended) was queued or
/// never sent.
async fn beats(call: &Call, every: Duration, started: Instant) -> Infallible {
    loop {
        let due = next_beat(call.last_progress()).0.unwrap_or(started) + every;
        // Await: the next beat's time.
        tokio::time::sleep_until(due).await;
        let (at, done, total) = next_beat(call.last_progress());
        if at.unwrap_or(started) + every > Instant::now() {
            // The handler sent progress meanwhile: wait from there.
            continue;
        }
        // Await: the notification's hand-off.
        call.progress(done, total, Some(STILL_WORKING.to_owned()))
            .await;
    }
}

impl<C> ServerBuilder<C> {
    /// How long a call whose client asked for progress may run without any before fusion
    /// sends one itself, saying the tool is still working
    /// ([`DEFAULT_HEARTBEAT`](crate::policy::DEFAULT_HEARTBEAT), 10 s, by default; a
    /// tool's `#[mcp_tool(heartbeat = "..")]` wins; `Duration::ZERO` sends none). A client
    /// that resets its timeout on progress then waits for a long call instead of giving up
    /// at its own 60 s. (In the [`Tester`](crate::testing::Tester), as for `timeout`, only
    /// an interval that is set applies.)
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Rebuild the search index.
    /// #[mcp_tool(timeout = "10m")]
    /// async fn reindex() -> &'static str {
    ///     tokio::time::sleep(Duration::from_secs(25)).await;
    ///     "reindexed"
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap().block_on(async {
    /// let server = Server::builder("search", "1").heartbeat(Duration::from_secs(10)).tool(reindex).build();
    /// let result = Tester::new(server).call("reindex", serde_json::json!({})).await;
    /// // Two heartbeats, at 10 s and at 20 s: the handler sent no progress of its own.
    /// let beats: Vec<_> = result.notifications().iter().filter(|sent| sent["method"] == "notifications/progress").collect();
    /// assert_eq!(beats.len(), 2);
    /// assert_eq!(beats[0]["params"]["message"], "still working");
    /// # });
    /// ```
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.policy.heartbeat = Some(every);
        self
    }
}
