//! The handler under its policy: the circuit breaker, retries with backoff for transient
//! failures, the timeout of each run, and the reconnect hook.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{
    call::Call,
    failure::{Failure, FailureKind},
    future::BoxFuture,
    log::Redactor,
    policy::{Admission, Circuit, Policy, RetryPolicy, Transition},
    tool::output::Outcome,
};

use crate::setup::registered::RegisteredTool;

use super::invoke::invoke;

/// Runs the handler under the tool's policy: the circuit breaker first, then up to
/// `attempts` runs, each under the timeout, retrying only transient failures after a
/// backoff and a reconnect of the tool's resource. Returns the outcome and how many
/// times the handler ran, counted here and nowhere else. `first` is the first run's
/// future when its arguments were decoded before (`serialize.rs`).
pub(super) async fn attempts<'a, C: Send + Sync + 'static>(
    registered: &'a RegisteredTool<C>,
    context: &'a C,
    call: &'a Call,
    args: &Value,
    redactor: &Redactor,
    mut first: Option<BoxFuture<'a, Outcome>>,
) -> Ran {
    let definition = &registered.definition;
    let tool = definition.spec.name;
    // Repeating a destructive call that is not idempotent may repeat its effect (a
    // second order, a second payment): never retried, whatever the server default.
    let unsafe_to_repeat = definition.spec.is_unsafe_to_repeat();
    let retry = if unsafe_to_repeat {
        RetryPolicy::NONE
    } else {
        registered.policy.retry.unwrap_or(RetryPolicy::NONE)
    };
    // The probe of a half-open circuit holds its slot until its verdict is reported; if
    // this future is dropped first, the guard gives the slot back for the next call.
    let _probe = match registered.circuit.as_ref().map(Circuit::admit) {
        Some(Admission::Reject(retry_after)) => {
            #[cfg(feature = "otel")]
            if crate::log::otel::active() {
                crate::log::otel::events::circuit_refused(retry_after);
            }
            let kind = FailureKind::CircuitOpen { retry_after };
            return Ran::no_attempt(Failure::new(kind));
        }
        Some(Admission::Probe(guard)) => Some(guard),
        Some(Admission::Run) | None => None,
    };
    let mut attempt = 1;
    loop {
        // Await: one run of the handler (decode, handler, timeout). Holds `_probe`; a
        // drop here drops the handler's future, and its destructors run.
        let run = invoke(
            definition,
            context,
            call,
            args,
            run_deadline(registered.policy, call),
            first.take(),
        );
        // With `otel`, for a tool that may run more than once: the attempt's span, under
        // the call's, around the handler (so a user's own spans are its children). A tool
        // that runs once runs in the call's span: one span less a call.
        #[cfg(feature = "otel")]
        let outcome = if retry.attempts > 1 && crate::log::otel::active() {
            let span = crate::log::otel::attempt_span(attempt);
            tracing::Instrument::instrument(run, span).await
        } else {
            run.await
        };
        #[cfg(not(feature = "otel"))]
        let outcome = run.await;
        let transient = matches!(&outcome, Outcome::Failure(failure) if failure.is_transient());
        if let Some(circuit) = &registered.circuit {
            let transition = match &outcome {
                Outcome::Success(_) => circuit.success(),
                Outcome::Failure(_) if transient => circuit.failure(),
                Outcome::Failure(failure) if failure.is_warning() => circuit.success(),
                Outcome::Failure(_) => {
                    circuit.neutral();
                    None
                }
            };
            if let Some(transition) = transition {
                crate::log::circuit_event(tool, transition);
                #[cfg(feature = "otel")]
                {
                    let (label, action) = registered.metrics.label();
                    let opened = transition == Transition::Opened;
                    crate::log::otel::record_circuit(label, action, opened);
                    if opened && crate::log::otel::active() {
                        crate::log::otel::events::circuit_opened();
                    }
                }
                if transition == Transition::Opened {
                    return Ran {
                        outcome,
                        attempts: attempt,
                    };
                }
            }
        }
        let not_sent = matches!(&outcome, Outcome::Failure(failure) if failure.not_sent);
        if unsafe_to_repeat && transient && !not_sent {
            // A timeout or a dropped connection says nothing about whether the effect
            // happened: say so, instead of inviting a retry.
            let check_with = registered.check_with.clone();
            let kind = FailureKind::UnknownOutcome {
                cause: match &outcome {
                    Outcome::Failure(failure) => failure.outcome_name(),
                    Outcome::Success(_) => crate::failure::outcome::OK,
                },
                check_with,
            };
            let mut failure = Failure::new(kind);
            if let Outcome::Failure(original) = outcome {
                failure.chain = original.chain;
            }
            return Ran {
                outcome: Outcome::Failure(failure),
                attempts: attempt,
            };
        }
        if !transient || attempt >= retry.attempts {
            return Ran {
                outcome,
                attempts: attempt,
            };
        }
        let mut delay = retry.delay(attempt + 1);
        if let Outcome::Failure(failure) = &outcome {
            // An upstream that says when to come back is believed, up to the cap.
            if let FailureKind::Handler(classification) = &failure.kind
                && let Some(after) = classification.retry_after
            {
                delay = delay.max(after.min(retry.max_backoff));
            }
            crate::log::retry_event(tool, attempt, retry.attempts, delay, failure, redactor);
            #[cfg(feature = "otel")]
            if crate::log::otel::active() {
                let outcome = failure.outcome_name();
                crate::log::otel::events::backoff(attempt, retry.attempts, delay, outcome);
            }
        }
        if let Some(reconnect) = &definition.reconnect {
            let started = Instant::now();
            // Await: the single-flight reconnect. A drop here releases the resource's
            // gate with its generation unchanged, so the next caller reconnects.
            let (ran, result) = reconnect(context).await;
            if ran {
                crate::log::reconnect_event(tool, started.elapsed(), result.as_ref().err());
            }
        }
        // Await: the backoff. Holds nothing but `_probe`.
        tokio::time::sleep(delay).await;
        attempt += 1;
    }
}

/// What running a call gave: its outcome, and how many times the handler ran.
///
/// The one count of attempts. The steps hand a `Ran` up: `attempts` counts, the
/// steps before it and a cancellation end with [`Ran::no_attempt`]. The call log and the
/// metrics read `attempts` here, and [`Ran::into_outcome`], as the outcome leaves for
/// rendering, is the one place in the pipeline that writes it into the failure
/// (`Failure::attempts`, and the message's "after 3 attempts"), so the log, the metrics
/// and the message cannot disagree.
pub(super) struct Ran {
    pub(super) outcome: Outcome,
    pub(super) attempts: u32,
}

impl Ran {
    /// A call that ended with no attempt counted: refused before the handler ran, or
    /// cancelled (a dropped run is not counted: the log reports a cancelled call with 0
    /// attempts).
    pub(super) fn no_attempt(failure: Failure) -> Self {
        Self {
            outcome: Outcome::Failure(failure),
            attempts: 0,
        }
    }

    /// The outcome to render, a failure carrying the count.
    pub(super) fn into_outcome(self) -> Outcome {
        match self.outcome {
            Outcome::Failure(mut failure) => {
                failure.attempts = self.attempts;
                Outcome::Failure(failure)
            }
            success => success,
        }
    }
}

/// The deadline of one run: the tool's or the server's `timeout`; for a call served over a
/// transport, else the generous default, so that no call is in flight for good. In the
/// tester the test decides how long it waits (and its runtime may have no timers).
fn run_deadline(policy: Policy, call: &Call) -> Option<Duration> {
    policy
        .timeout
        .or_else(|| call.is_served().then_some(crate::policy::DEFAULT_TIMEOUT))
}
