//! The call pipeline: every `tools/call`, from a transport or the [`Tester`](crate::testing::Tester),
//! goes through [`run`], one step a file, in this order; each step a function that
//! is handed what it needs (the tool's one record, `setup/registered.rs`), so that the
//! imports run one way: transport → protocol → pipeline → policy:
//!
//! 1. resolve: the tool and action, by the registry (`setup/registry.rs`), and the arguments;
//! 2. replay (`replay.rs`): an idempotency key seen before returns the first call's result;
//! 3. admit (`admit.rs`): the context, the argument limits, the middleware chain;
//!    with `serialize`, the lock of the call's key around the rest (`serialize.rs`);
//! 4. attempts (`attempts.rs`): the circuit breaker, retries with backoff, the timeout, reconnect;
//! 5. invoke (`invoke.rs`): decode and validate the arguments, run the handler behind a
//!    panic boundary, classify the outcome;
//! 6. render (`render.rs`): exactly one `CallToolResult`, presentation on success only;
//! 7. the call log (`call_log.rs`): one event a call, a dropped call included.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::Instant,
};

use serde_json::{Map, Value};

use crate::{
    call::Call,
    failure::{Failure, FailureKind, Target, outcome, panic as recover},
    metrics,
    setup::{registered::RegisteredTool, server::Server},
};

mod admit;
mod attempts;
mod cache;
mod call_log;
mod finish;
pub(crate) mod heartbeat;
mod invoke;
mod output_limit;
pub(crate) mod render;
mod replay;
mod resolve;
mod run;
mod serialize;
mod slot;
mod tool_search;
mod until_cancelled;

use admit::admit;
use cache::Answer;
use call_log::CallLog;
use finish::Ending;
pub(crate) use render::CallReport;
use replay::{Replay, deduplication_unavailable, earlier_run_stopped, idempotency_conflict};
use resolve::Resolved;
pub(crate) use tool_search::unwrap_call_tool;
use tool_search::{Route, route};
use until_cancelled::until_cancelled;

static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Runs one call through the whole pipeline and returns exactly one result.
///
/// `args` may be absent (`Null`) or an object; anything else is an invalid-arguments
/// result. `context` replaces the factory's context (the tester uses it). With the `otel`
/// feature and an exporter installed, the call runs inside its server span.
pub(crate) async fn run<C: Send + Sync + 'static>(
    server: &Server<C>,
    tool: &str,
    action: Option<&str>,
    args: Value,
    context: Option<C>,
    call: &Call,
) -> CallReport {
    // With tool search: `search_tools` answered, `call_tool` as the tool it names.
    let (tool, args) = match route(server, tool, args, call) {
        Route::Tool(tool, args) => (tool, args),
        Route::Answered {
            tool,
            args,
            outcome,
        } => return answer_listed(server, tool, args, *outcome, call),
    };
    let tool = tool.as_ref();
    #[cfg(feature = "otel")]
    if crate::log::otel::active() {
        use crate::log::otel;
        let origin = otel::Origin {
            request_id: call.request_id(),
            request: call.request(),
            meta_trace: call.trace_context(),
        };
        let span = otel::server_span(otel::Operation::CallTool(tool), &origin);
        let traced = run_call(server, tool, action, args, context, call);
        return tracing::Instrument::instrument(traced, span).await;
    }
    run_call(server, tool, action, args, context, call).await
}

/// The answer of one of tool search's own tools (`search_tools`, or a `call_tool` refused
/// before it names a tool): rendered and logged as a call of `tool`, with no handler, policy
/// or middleware of its own.
fn answer_listed<C: Send + Sync + 'static>(
    server: &Server<C>,
    tool: &'static str,
    args: Value,
    outcome: crate::tool::output::Outcome,
    call: &Call,
) -> CallReport {
    let started = Instant::now();
    let correlation_id = recover::CorrelationId::new(CALL_COUNTER.fetch_add(1, Ordering::Relaxed));
    let target = Target { tool, action: None };
    let (mut log, _) = CallLog::open(server, None, &target, args, &correlation_id, started, call);
    let (rendered, outcome_name) = render::render(
        &target,
        false,
        None,
        outcome,
        &correlation_id,
        &log.redactor,
    );
    let message = rendered.report.data.as_str().unwrap_or("");
    log.finish(outcome_name, 1, rendered.failure.as_ref(), message);
    rendered.report
}

async fn run_call<C: Send + Sync + 'static>(
    server: &Server<C>,
    tool: &str,
    action: Option<&str>,
    args: Value,
    context: Option<C>,
    call: &Call,
) -> CallReport {
    let inner = &*server.inner;
    let started = Instant::now();
    let call_number = CALL_COUNTER.fetch_add(1, Ordering::Relaxed);
    let correlation_id = recover::CorrelationId::new(call_number);
    let mut args = match args {
        Value::Null => Value::Object(Map::new()),
        other => other,
    };
    let (resolved, refused) = Resolved::of(server, tool, action, &mut args, call);
    let registered = resolved.registered(server);
    let slot = resolved.slot();
    let target = Target {
        tool,
        action: resolved.action.as_deref(),
    };
    // A call whose future is dropped before it ends (the client went away, the session
    // closed) is still logged, once, as cancelled.
    let (mut log, in_flight) = CallLog::open(
        server,
        registered,
        &target,
        args,
        &correlation_id,
        started,
        call,
    );
    // An idempotency key seen before returns the first call's result; the same key with
    // other arguments is a conflict, not a replay.
    let (key, fingerprint) = replay::keyed(registered, &target, &log.args, call);
    let replay = match refused {
        // Nothing the caller can call: no key to claim, nothing to run.
        Some(refused) => Err(inner.mounts.unknown(tool, refused)),
        // Await: waits while another run of the key is in progress. Holds `in_flight` only.
        None => Ok(replay::claim_key(server, registered, key.as_deref(), &fingerprint, call).await),
    };
    // A cancelled request drops the handler's future (its destructors run); the
    // transport sends no answer for a cancelled id, as the protocol says. A request
    // cancelled before it started never starts.
    let (answer, claim) = match (registered, replay) {
        (_, Err(refusal)) => (Answer::no_attempt(refusal), None),
        (_, Ok(Replay::Replayed(report))) => return replayed(*report, &mut log, in_flight),
        // Await: the call itself. Holds `in_flight` and `claim`; a drop here gives both
        // back (the claim is released, so a waiter or a retry of the key runs).
        (Some(registered), Ok(Replay::Run(claim))) => {
            // Built in the `.await` itself: a future first bound to a local is kept in
            // this one twice (the local and the awaited copy).
            let answer = until_cancelled(
                call,
                admit(
                    server,
                    registered,
                    &slot,
                    context,
                    &target,
                    &log.args,
                    call,
                    &log.redactor,
                ),
            )
            .await;
            (answer, claim)
        }
        (registered, Ok(replay)) => (
            Answer::no_attempt(not_run(registered, &target, replay)),
            None,
        ),
    };
    // No `.await` from here on: the call ends in this poll.
    let ending = Ending::new(server, registered, &target, &correlation_id, &fingerprint);
    ending.finish(answer, claim, log, in_flight)
}

/// A call answered with the result its idempotency key's first call got: logged and
/// measured as replayed.
fn replayed(
    report: CallReport,
    log: &mut CallLog<'_>,
    in_flight: Option<metrics::InFlight<'_>>,
) -> CallReport {
    #[cfg(feature = "otel")]
    if crate::log::otel::active() {
        crate::log::otel::events::replayed();
    }
    let latency = log.finish(outcome::REPLAYED, 0, None, "");
    if let Some(in_flight) = in_flight {
        in_flight.finish(outcome::REPLAYED, latency, 0, None);
    }
    report
}

/// Why a call that resolved does not run, by what its idempotency key's claim said.
fn not_run<C>(
    registered: Option<&RegisteredTool<C>>,
    target: &Target<'_>,
    replay: Replay<'_>,
) -> Failure {
    match (registered, replay) {
        (_, Replay::Cancelled) => Failure::new(FailureKind::Cancelled),
        (Some(registered), Replay::Conflict) => {
            let key_argument = registered.definition.spec.idempotency_key;
            idempotency_conflict(target, key_argument.unwrap_or("idempotency key"))
        }
        (Some(registered), Replay::Stopped) => earlier_run_stopped(registered, target),
        (_, Replay::Unavailable(reason)) => deduplication_unavailable(target, &reason),
        // A resolved call always has its tool, and a claim only comes with one.
        _ => Failure::internal_message("the resolved tool is missing"),
    }
}
