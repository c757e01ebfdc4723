//! A dropped call releases everything (DESIGN decision 10, issue 14), proved at every await
//! point instead of hoped for.
//!
//! For each policy that holds state across an `.await` (the circuit breaker's half-open
//! probe, a concurrency limit's queue slot and permit, a rate limiter, an idempotency claim
//! held by a runner or waited on, a reconnect, a retry's backoff, a timeout), one call is
//! run on a fresh server and dropped right after its k-th poll returned `Pending`, for
//! k = 0, 1, 2, … until the call finishes by itself within k polls. After each drop, the
//! next calls must be served normally (the circuit probes again and closes, a call that has
//! to queue is admitted, the same idempotency key runs or replays instead of hanging) and
//! `server.metrics()` must show no call in flight. Follow-up calls run under a timeout, so a
//! wedge fails the test instead of hanging it.
//!
//! The clock is tokio's, paused: every timer (tool steps, backoff, cooldown, timeout) fires
//! when the runtime is idle, so the poll at which a call is dropped is deterministic. Each
//! sweep asserts that it reached completion and a minimum number of drop points, so it
//! cannot pass by dropping nothing.
//!
//! Only the public API is used (`Tester`, `Server::builder`, middleware, metrics): the
//! tests do not depend on how the runtime releases its state. The tester has no way to
//! cancel a call as a client does; `tests/stdio/cancel_storm.rs` sends `notifications/cancelled`
//! over stdio instead.

use std::{sync::atomic::Ordering, time::Duration};

use fusion_runtime::{Server, middleware, testing::Tester};
use fusion_tests::cancel_safety::{self, StormCtx};
use serde_json::{Value, json};

use crate::support::drop_after::drop_after;

/// The most polls a sweep tries before it declares that the call never finishes.
const MAX_POLLS: usize = 100;

/// The bound on a follow-up call (virtual time: a wedged call fails fast).
const FOLLOW_UP: Duration = Duration::from_secs(5);

/// Longer than the breaker's cooldown (50 ms).
const PAST_COOLDOWN: Duration = Duration::from_millis(60);

/// The record of one sweep over the await points of a call.
struct Sweep {
    policy: &'static str,
    drops: usize,
    completed_at: Option<usize>,
    problems: Vec<String>,
}

impl Sweep {
    fn new(policy: &'static str) -> Self {
        Self {
            policy,
            drops: 0,
            completed_at: None,
            problems: Vec::new(),
        }
    }

    /// Records a problem found after the drop (or the completion) at `k`.
    fn check(&mut self, k: usize, outcome: Result<(), String>) {
        if let Err(problem) = outcome {
            self.problems.push(format!("k = {k}: {problem}"));
        }
    }

    /// Counts the run at `k`; whether the sweep is over (the call finished by itself, or
    /// [`MAX_POLLS`] was reached).
    fn done(&mut self, k: usize, completed: bool) -> bool {
        if completed {
            self.completed_at = Some(k);
            return true;
        }
        self.drops += 1;
        k + 1 >= MAX_POLLS
    }

    fn finish(self, min_drops: usize) {
        println!(
            "{}: {} drop points, completed by itself at k = {:?}",
            self.policy, self.drops, self.completed_at
        );
        assert!(
            self.problems.is_empty(),
            "{}: {} problem(s) after dropping the call:\n  {}",
            self.policy,
            self.problems.len(),
            self.problems.join("\n  ")
        );
        assert!(
            self.completed_at.is_some(),
            "{}: the call never finished by itself within {MAX_POLLS} polls",
            self.policy
        );
        assert!(
            self.drops >= min_drops,
            "{}: only {} drop points (expected at least {min_drops}): the sweep proves little",
            self.policy,
            self.drops
        );
    }
}

/// A fresh server over a fresh state, and the state.
struct Fixture {
    tester: Tester<StormCtx>,
    ctx: StormCtx,
}

impl Fixture {
    fn new() -> Self {
        Self::with(|builder| builder)
    }

    /// A fixture whose builder `adjust` changes (more middleware) before it is built.
    fn with(
        adjust: impl FnOnce(
            fusion_runtime::ServerBuilder<StormCtx>,
        ) -> fusion_runtime::ServerBuilder<StormCtx>,
    ) -> Self {
        let ctx = StormCtx::default();
        let server =
            cancel_safety::record(adjust(cancel_safety::builder(ctx.clone())).build(), &ctx);
        Self {
            tester: Tester::new(server),
            ctx,
        }
    }

    fn server(&self) -> &Server<StormCtx> {
        self.tester.server()
    }

    /// Calls `tool` under [`FOLLOW_UP`]: a call that does not answer is a wedge.
    async fn within(
        &self,
        tool: &str,
        args: Value,
    ) -> Result<fusion_runtime::testing::TestResult, String> {
        tokio::time::timeout(FOLLOW_UP, self.tester.call(tool, args.clone()))
            .await
            .map_err(|_| format!("`{tool}` {args} got no answer within {FOLLOW_UP:?}: wedged"))
    }

    /// Calls `tool` under [`FOLLOW_UP`] and wants a success; its text.
    async fn ok(&self, tool: &str, args: Value) -> Result<String, String> {
        let result = self.within(tool, args.clone()).await?;
        if result.is_error {
            Err(format!("`{tool}` {args} failed: {}", result.text()))
        } else {
            Ok(result.text())
        }
    }

    /// Starts a call on its own task (a client's other request).
    fn spawn(
        &self,
        tool: &'static str,
        args: Value,
    ) -> tokio::task::JoinHandle<fusion_runtime::testing::TestResult> {
        let tester = self.tester.clone();
        tokio::spawn(async move { tester.call(tool, args).await })
    }

    /// Every tool's `in_flight` is 0.
    fn nothing_in_flight(&self) -> Result<(), String> {
        let busy: Vec<String> = self
            .server()
            .metrics()
            .tools
            .iter()
            .filter(|tool| tool.in_flight != 0)
            .map(|tool| format!("`{}` = {}", tool.tool, tool.in_flight))
            .collect();
        if busy.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "metrics count calls in flight: {}",
                busy.join(", ")
            ))
        }
    }

    fn circuit_open(&self, tool: &str) -> bool {
        self.server()
            .metrics()
            .tools
            .iter()
            .any(|snapshot| snapshot.tool == tool && snapshot.circuit_open)
    }

    /// One call runs `limited` and a second one has to wait in its queue: both are served.
    async fn admits_a_queued_call(&self) -> Result<(), String> {
        let started = self.ctx.state.limited_started.load(Ordering::SeqCst);
        let runner = self.spawn("limited", json!({"ms": 30}));
        wait_until("a `limited` call to start", || {
            self.ctx.state.limited_started.load(Ordering::SeqCst) > started
        })
        .await?;
        let queued = self.ok("limited", json!({"ms": 1})).await;
        let runner = join(runner).await?;
        if runner.is_error {
            return Err(format!(
                "the running `limited` call failed: {}",
                runner.text()
            ));
        }
        queued
            .map(drop)
            .map_err(|problem| format!("a call that had to queue was not served: {problem}"))
    }
}

/// Lets other tasks run until `condition` holds (at most 1,000 yields; no time passes).
async fn wait_until(what: &str, condition: impl Fn() -> bool) -> Result<(), String> {
    for _ in 0..1_000 {
        if condition() {
            return Ok(());
        }
        tokio::task::yield_now().await;
    }
    Err(format!("waited for {what} in vain"))
}

/// The result of a spawned call, under [`FOLLOW_UP`].
async fn join(
    handle: tokio::task::JoinHandle<fusion_runtime::testing::TestResult>,
) -> Result<fusion_runtime::testing::TestResult, String> {
    match tokio::time::timeout(FOLLOW_UP, handle).await {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(format!("a spawned call failed: {error}")),
        Err(_) => Err(format!(
            "a spawned call got no answer within {FOLLOW_UP:?}: wedged"
        )),
    }
}

fn expect_ok(result: &fusion_runtime::testing::TestResult, what: &str) -> Result<(), String> {
    if result.is_error {
        Err(format!("{what} failed: {}", result.text()))
    } else {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_dropped_half_open_probe_lets_the_circuit_probe_again() {
    let mut sweep = Sweep::new("circuit: the half-open probe");
    for k in 0.. {
        let f = Fixture::new();
        // Open the circuit; once the cooldown has passed, the next call is the probe.
        let opened = f.tester.call("breaker", json!({"fail": true})).await;
        assert!(
            opened.is_error && f.circuit_open("breaker"),
            "{}",
            opened.text()
        );
        tokio::time::sleep(PAST_COOLDOWN).await;
        let probe = drop_after(f.tester.call("breaker", json!({"fail": false})), k).await;
        if let Some(probe) = &probe {
            sweep.check(k, expect_ok(probe, "the probe that finished"));
        }
        // However the probe ended, a call after the cooldown probes again and closes the
        // circuit; the next one runs normally.
        tokio::time::sleep(PAST_COOLDOWN).await;
        sweep.check(
            k,
            f.ok("breaker", json!({"fail": false}))
                .await
                .map(drop)
                .map_err(|problem| format!("no probe after the cooldown: {problem}")),
        );
        sweep.check(
            k,
            f.ok("breaker", json!({"fail": false}))
                .await
                .map(drop)
                .map_err(|problem| format!("the circuit did not close: {problem}")),
        );
        if f.circuit_open("breaker") {
            sweep.check(k, Err("metrics still say the circuit is open".into()));
        }
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, probe.is_some()) {
            break;
        }
    }
    // Three steps of work in the probe: k = 0 (unpolled) and one drop in each step.
    sweep.finish(4);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_in_the_queue_gives_its_slot_back() {
    let mut sweep = Sweep::new("concurrency limit: a queued call");
    for k in 0.. {
        let f = Fixture::new();
        // One call holds the only permit for 50 ms; the call under test must queue.
        let runner = f.spawn("limited", json!({"ms": 50}));
        let started = wait_until("the first `limited` call to start", || {
            f.ctx.state.limited_started.load(Ordering::SeqCst) == 1
        })
        .await;
        sweep.check(k, started);
        let queued = drop_after(f.tester.call("limited", json!({"ms": 10})), k).await;
        if let Some(queued) = &queued {
            sweep.check(k, expect_ok(queued, "the queued call that finished"));
        }
        sweep.check(
            k,
            join(runner)
                .await
                .and_then(|result| expect_ok(&result, "the running call")),
        );
        sweep.check(k, f.admits_a_queued_call().await);
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, queued.is_some()) {
            break;
        }
    }
    // Unpolled, dropped in the queue, dropped while running.
    sweep.finish(3);
}

#[tokio::test(start_paused = true)]
async fn a_running_call_dropped_gives_its_permit_back() {
    let mut sweep = Sweep::new("concurrency limit: the running call");
    for k in 0.. {
        let f = Fixture::new();
        let running = drop_after(f.tester.call("limited", json!({"ms": 10})), k).await;
        if let Some(running) = &running {
            sweep.check(k, expect_ok(running, "the call that finished"));
        }
        sweep.check(k, f.admits_a_queued_call().await);
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, running.is_some()) {
            break;
        }
    }
    sweep.finish(2);
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_call_dropped_leaves_the_limiter_working() {
    let mut sweep = Sweep::new("rate limit");
    for k in 0.. {
        // One call every 100 ms, no burst.
        let f = Fixture::with(|builder| {
            builder.tool_middleware("work", middleware::rate_limit(10.0, 1))
        });
        let call = drop_after(f.tester.call("work", json!({"ms": 10})), k).await;
        if let Some(call) = &call {
            sweep.check(k, expect_ok(call, "the call that finished"));
        }
        // After a refill, one call is admitted and the next refused; after another
        // refill, admitted again: the limiter neither wedged nor opened up.
        let refill = Duration::from_millis(150);
        tokio::time::sleep(refill).await;
        sweep.check(
            k,
            f.ok("work", json!({"ms": 0}))
                .await
                .map(drop)
                .map_err(|problem| format!("not admitted after a refill: {problem}")),
        );
        match f.within("work", json!({"ms": 0})).await {
            Ok(result) if result.is_error => {}
            Ok(_) => sweep.check(k, Err("a call beyond the rate was admitted".into())),
            Err(problem) => sweep.check(k, Err(problem)),
        }
        tokio::time::sleep(refill).await;
        sweep.check(
            k,
            f.ok("work", json!({"ms": 0}))
                .await
                .map(drop)
                .map_err(|problem| format!("not admitted after a second refill: {problem}")),
        );
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, call.is_some()) {
            break;
        }
    }
    sweep.finish(2);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_keyed_runner_frees_its_key_only_before_its_handler_started() {
    let mut sweep = Sweep::new("idempotency: the runner");
    let order = |key: &str| json!({"request_id": key, "item": "lamp"});
    for k in 0.. {
        let f = Fixture::new();
        let first = drop_after(f.tester.call("place_order", order("r-1")), k).await;
        if let Some(first) = &first {
            sweep.check(k, expect_ok(first, "the first call, which finished"));
        }
        // The handler counts the order as its first step: a drop after it may have left
        // the order placed.
        let started = f.ctx.state.orders.load(Ordering::SeqCst) > 0;
        // The key is never left claimed: the same key replays a finished run, runs when
        // the dropped handler never started, and is an unknown outcome (never a second
        // order) when it started; later calls with the key get the same answer.
        let second = f.within("place_order", order("r-1")).await;
        let third = f.within("place_order", order("r-1")).await;
        match (second, third) {
            (Ok(second), Ok(third)) => {
                let stopped = |result: &fusion_runtime::testing::TestResult| {
                    result.is_error
                        && result.failure().is_some_and(|entry| {
                            entry.class == "unknown_outcome"
                                && entry.code.as_deref() == Some("replica_stopped")
                        })
                };
                let expected = match (&first, started) {
                    (Some(first), _) => Ok(first.text()),
                    (None, true) if stopped(&second) => Err(()),
                    (None, true) => {
                        sweep.check(
                            k,
                            Err(format!(
                                "a run dropped part-way was not an unknown outcome: {:?}",
                                second.text()
                            )),
                        );
                        Err(())
                    }
                    (None, false) => Ok(second.text()),
                };
                match expected {
                    Ok(text)
                        if !second.is_error && second.text() == text && third.text() == text => {}
                    Err(()) if stopped(&third) => {}
                    _ => sweep.check(
                        k,
                        Err(format!(
                            "the key's answers differ: {:?}, then {:?}",
                            second.text(),
                            third.text()
                        )),
                    ),
                }
            }
            (Err(problem), _) | (_, Err(problem)) => {
                sweep.check(k, Err(format!("the same key after the drop: {problem}")));
            }
        }
        let orders = f.ctx.state.orders.load(Ordering::SeqCst);
        if orders > 1 {
            sweep.check(k, Err(format!("{orders} orders placed for one key")));
        }
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, first.is_some()) {
            break;
        }
    }
    // Unpolled, then one drop in each of the three steps of the order.
    sweep.finish(4);
}

#[tokio::test(start_paused = true)]
async fn a_dropped_idempotent_waiter_leaves_the_key_to_its_runner() {
    let mut sweep = Sweep::new("idempotency: a waiter");
    let order = || json!({"request_id": "r-1", "item": "desk"});
    for k in 0.. {
        let f = Fixture::new();
        let runner = f.spawn("place_order", order());
        let started = wait_until("the first order to start", || {
            f.ctx.state.orders.load(Ordering::SeqCst) == 1
        })
        .await;
        sweep.check(k, started);
        let waiter = drop_after(f.tester.call("place_order", order()), k).await;
        match join(runner).await {
            Ok(runner) if !runner.is_error => {
                let text = runner.text();
                if let Some(waiter) = &waiter
                    && waiter.text() != text
                {
                    sweep.check(
                        k,
                        Err(format!(
                            "the waiter got {:?}, not the runner's {text:?}",
                            waiter.text()
                        )),
                    );
                }
                match f.ok("place_order", order()).await {
                    Ok(again) if again == text => {}
                    Ok(again) => sweep.check(
                        k,
                        Err(format!(
                            "the key no longer replays: {text:?}, then {again:?}"
                        )),
                    ),
                    Err(problem) => sweep.check(k, Err(problem)),
                }
            }
            Ok(runner) => sweep.check(k, Err(format!("the runner failed: {}", runner.text()))),
            Err(problem) => sweep.check(k, Err(problem)),
        }
        let orders = f.ctx.state.orders.load(Ordering::SeqCst);
        if orders != 1 {
            sweep.check(k, Err(format!("{orders} orders placed for one key")));
        }
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, waiter.is_some()) {
            break;
        }
    }
    // Unpolled, dropped while waiting for the runner.
    sweep.finish(2);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_during_its_reconnect_leaves_reconnects_working() {
    let mut sweep = Sweep::new("reconnect");
    for k in 0.. {
        let f = Fixture::new();
        // A companion call fails 3 ms later and so waits behind the reconnect of the call
        // under test: it must not wait forever when that call is dropped.
        let tester = f.tester.clone();
        let companion = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(3)).await;
            tester
                .call("flaky", json!({"key": "companion", "fail_times": 1}))
                .await
        });
        let call = drop_after(
            f.tester
                .call("flaky", json!({"key": "tested", "fail_times": 1})),
            k,
        )
        .await;
        if let Some(call) = &call {
            sweep.check(k, expect_ok(call, "the call that finished"));
        }
        sweep.check(
            k,
            join(companion)
                .await
                .and_then(|result| expect_ok(&result, "the companion call")),
        );
        // Two more callers that fail together reconnect (at least once) and recover.
        let before = f.ctx.upstream.reconnects.load(Ordering::SeqCst);
        let both = tokio::time::timeout(
            FOLLOW_UP,
            futures_util::future::join(
                f.tester.call("flaky", json!({"key": "a", "fail_times": 1})),
                f.tester.call("flaky", json!({"key": "b", "fail_times": 1})),
            ),
        )
        .await;
        match both {
            Ok((a, b)) => {
                sweep.check(k, expect_ok(&a, "a caller after the drop"));
                sweep.check(k, expect_ok(&b, "a second caller after the drop"));
                if f.ctx.upstream.reconnects.load(Ordering::SeqCst) == before {
                    sweep.check(
                        k,
                        Err("no reconnect ran for the callers after the drop".into()),
                    );
                }
            }
            Err(_) => sweep.check(
                k,
                Err(format!(
                    "callers after the drop got no answer within {FOLLOW_UP:?}: wedged"
                )),
            ),
        }
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, call.is_some()) {
            break;
        }
    }
    // Unpolled, in the first run, twice in the reconnect, in the backoff, in the retry.
    sweep.finish(6);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_in_its_backoff_leaves_retries_working() {
    let mut sweep = Sweep::new("retry with backoff");
    for k in 0.. {
        let f = Fixture::new();
        let call = drop_after(f.tester.call("blip", json!({"key": "tested"})), k).await;
        if let Some(call) = &call {
            sweep.check(k, expect_ok(call, "the call that finished"));
        }
        let retries = |f: &Fixture| {
            f.server()
                .metrics()
                .tools
                .iter()
                .find(|tool| tool.tool == "blip")
                .map_or(0, |tool| tool.retries)
        };
        let before = retries(&f);
        sweep.check(
            k,
            f.ok("blip", json!({"key": "next"}))
                .await
                .map(drop)
                .map_err(|problem| format!("a call after the drop: {problem}")),
        );
        if retries(&f) != before + 1 {
            sweep.check(
                k,
                Err("the call after the drop was not retried once".into()),
            );
        }
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, call.is_some()) {
            break;
        }
    }
    // Unpolled, in the first run, in the backoff, in the retry.
    sweep.finish(4);
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_under_its_timeout_drops_the_handler() {
    let mut sweep = Sweep::new("timeout");
    for k in 0.. {
        let f = Fixture::new();
        let call = drop_after(f.tester.call("stall", json!({})), k).await;
        if let Some(call) = &call
            && !(call.is_error && call.text().contains("50 ms"))
        {
            sweep.check(k, Err(format!("not a timeout: {}", call.text())));
        }
        // The handler ran (and was dropped) unless the call was dropped unpolled.
        let ran = u32::from(k > 0);
        let dropped = f.ctx.state.dropped.load(Ordering::SeqCst);
        if dropped != ran {
            sweep.check(
                k,
                Err(format!("{dropped} handler futures dropped, expected {ran}")),
            );
        }
        match f.within("stall", json!({})).await {
            Ok(next) if next.is_error && next.text().contains("50 ms") => {}
            Ok(next) => sweep.check(
                k,
                Err(format!("the next call: not a timeout: {}", next.text())),
            ),
            Err(problem) => sweep.check(k, Err(problem)),
        }
        sweep.check(k, f.nothing_in_flight());
        if sweep.done(k, call.is_some()) {
            break;
        }
    }
    // Unpolled, dropped while the handler hangs under its deadline.
    sweep.finish(2);
}
