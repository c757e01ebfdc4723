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
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Instant,
};

use serde_json::{Map, Value};

use crate::{
    call::Call,
    failure::{Failure, FailureKind, Target, outcome, panic as recover},
    log::Redactor,
    setup::server::Server,
};

mod admit;
mod attempts;
mod cache;
mod call_log;
pub(crate) mod heartbeat;
mod invoke;
mod output_limit;
pub(crate) mod render;
mod replay;
mod run;
mod serialize;
mod slot;
mod tool_search;
mod until_cancelled;

use crate::cache::CacheUse;
use admit::admit;
use cache::Answer;
use call_log::CallLog;
pub(crate) use render::CallReport;
use render::render;
use replay::{
    Replay, deduplication_unavailable, earlier_run_stopped, idempotency_conflict, idempotency_key,
};
use slot::Slot;
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
    let mut log = CallLog {
        tool,
        action: None,
        request_id: call.request_id(),
        caller: call.request().subject(),
        args,
        correlation_id: &correlation_id,
        redactor: Redactor::default(),
        started,
        ok_level: server.inner.ok_level,
        armed: true,
        watch: call.watch(),
        cache: None,
    };
    let (rendered, outcome_name) = render(
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
    // A tool the caller is not shown is, to that caller, a tool that does not exist.
    let resolved = match server.shown(call.request()) {
        None => inner.registry.resolve(tool, action, &mut args),
        Some(shown) => inner
            .registry
            .resolve_shown(tool, action, &mut args, &shown),
    };
    // A tool a mounted upstream added since the server started: looked for only when the
    // registry knows no such tool, so that a call to any other costs what it did.
    let added = match &resolved {
        Err(FailureKind::UnknownTool { .. }) if action.is_none() => {
            let visibility = &inner.visibility;
            inner
                .registry
                .added
                .find(tool, |spec| visibility.shows(spec, call.request()))
        }
        _ => None,
    };
    let resolved = match &added {
        Some(_) => Ok((0, None)),
        None => resolved,
    };
    let (registered, action) = match (&resolved, &added) {
        (_, Some(added)) => (Some((&**added, Slot::Added(Arc::clone(added)))), None),
        (Ok((index, resolved)), None) => (
            inner
                .registry
                .tools
                .get(*index)
                .map(|registered| (registered, Slot::Registry(*index))),
            resolved.map(str::to_owned),
        ),
        (Err(_), None) => (None, action.map(str::to_owned)),
    };
    let (registered, slot) = match registered {
        Some((registered, slot)) => (Some(registered), slot),
        None => (None, Slot::Registry(0)),
    };
    let target = Target {
        tool,
        action: action.as_deref(),
    };
    let redactor = match registered {
        Some(registered) => Redactor::new(&registered.definition.secret_keys, &args),
        None => Redactor::default(),
    };
    // Arguments reach the call's span only if the tool opts in, as the log shows them.
    #[cfg(feature = "otel")]
    if registered.is_some_and(|registered| registered.definition.spec.trace_arguments)
        && crate::log::otel::active()
    {
        crate::log::otel::record_arguments(&args, &redactor);
    }
    // Counted in flight from here; the guard gives the count back however the call
    // ends, its future dropped included.
    let in_flight = registered.map(|registered| registered.metrics.start());
    // A call whose future is dropped before it ends (the client went away, the session
    // closed) is still logged, once, as cancelled.
    let mut log = CallLog {
        tool,
        action: target.action,
        request_id: call.request_id(),
        caller: call.request().subject(),
        args,
        correlation_id: &correlation_id,
        redactor,
        started,
        ok_level: inner.ok_level,
        armed: true,
        watch: call.watch(),
        cache: None,
    };
    // An idempotency key seen before returns the first call's result; the same key with
    // other arguments is a conflict, not a replay.
    let idempotency_key =
        registered.and_then(|registered| idempotency_key(registered, &target, &log.args, call));
    let fingerprint = idempotency_key
        .as_ref()
        .map(|_| crate::canonical_json::fingerprint(&log.args))
        .unwrap_or_default();
    let replay = match &idempotency_key {
        // Await: waits while another run of the key is in progress. Holds `in_flight` only.
        Some(key) => {
            let store = &*inner.idempotency;
            let window = inner.idempotency_window;
            let repeatable =
                registered.is_some_and(|registered| registered.definition.spec.is_safe_to_repeat());
            replay::claim(store, window, key, &fingerprint, repeatable, call).await
        }
        None => Replay::Run(None),
    };
    // A cancelled request drops the handler's future (its destructors run); the
    // transport sends no answer for a cancelled id, as the protocol says. A request
    // cancelled before it started never starts.
    let (answer, claim) = match (resolved, registered, replay) {
        (_, _, Replay::Replayed(report)) => {
            #[cfg(feature = "otel")]
            if crate::log::otel::active() {
                crate::log::otel::events::replayed();
            }
            let latency = log.finish(outcome::REPLAYED, 0, None, "");
            if let Some(in_flight) = in_flight {
                in_flight.finish(outcome::REPLAYED, latency, 0, None);
            }
            return *report;
        }
        (Err(kind @ FailureKind::UnknownTool { .. }), _, _) => {
            (Answer::no_attempt(inner.mounts.unknown(tool, kind)), None)
        }
        (Err(kind), _, _) => (Answer::no_attempt(Failure::new(kind)), None),
        (_, _, Replay::Cancelled) => (
            Answer::no_attempt(Failure::new(FailureKind::Cancelled)),
            None,
        ),
        (_, Some(registered), Replay::Conflict) => {
            let key_argument = registered.definition.spec.idempotency_key;
            let failure = idempotency_conflict(&target, key_argument.unwrap_or("idempotency key"));
            (Answer::no_attempt(failure), None)
        }
        (_, Some(registered), Replay::Stopped) => (
            Answer::no_attempt(earlier_run_stopped(registered, &target)),
            None,
        ),
        (_, _, Replay::Unavailable(reason)) => (
            Answer::no_attempt(deduplication_unavailable(&target, &reason)),
            None,
        ),
        // Await: the call itself. Holds `in_flight` and `claim`; a drop here gives both
        // back (the claim is released, so a waiter or a retry of the key runs).
        (Ok(_), Some(registered), Replay::Run(claim)) => {
            let context = || match context {
                Some(context) => Ok(context),
                None => server.make_context(call.request()),
            };
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
        // A resolved call always has its tool.
        (Ok(_), None, _) => (
            Answer::no_attempt(Failure::internal_message("the resolved tool is missing")),
            None,
        ),
    };
    // No `.await` from here on: the call ends in this poll.
    let (mut rendered, mut outcome_name, attempts, cache_use) = match answer {
        Answer::Ran(ran, cache_use) => {
            let attempts = ran.attempts;
            let outcome = ran.into_outcome();
            let wrap_structured =
                registered.is_some_and(|registered| registered.definition.wrap_structured);
            let max_output = registered.map(|registered| registered.max_output);
            let (rendered, outcome_name) = render(
                &target,
                wrap_structured,
                max_output,
                outcome,
                &correlation_id,
                &log.redactor,
            );
            (rendered, outcome_name, attempts, cache_use)
        }
        Answer::Cached(cached) => {
            let outcome_name = match cached.how {
                CacheUse::Stale => outcome::STALE,
                _ => outcome::CACHED,
            };
            let rendered = render::Rendered {
                report: cached.report,
                failure: cached.warning,
            };
            (rendered, outcome_name, 0, Some(cached.how))
        }
    };
    if inner.draft_tool_failure {
        crate::failure::tool_failure::add_draft_key(
            &mut rendered.report.result,
            correlation_id.as_str(),
        );
    }
    // How the call failed, as the exported spans and metrics label it.
    #[cfg(feature = "otel")]
    let error_type = rendered.failure.as_ref().map(crate::log::otel::error_type);
    #[cfg(not(feature = "otel"))]
    let error_type: Option<String> = None;
    #[cfg(feature = "otel")]
    if let (Some(failure), Some(error_type)) = (&rendered.failure, &error_type)
        && crate::log::otel::active()
    {
        crate::log::otel::record_failure(failure, error_type);
        if let FailureKind::InvalidArguments(issues) = failure.kind() {
            crate::log::otel::events::validation_failed(issues);
        }
    }
    if outcome_name == outcome::OK && attempts > 1 {
        outcome_name = outcome::RETRIED_OK;
    }
    if let Some(claim) = claim {
        // Successes are kept for the window, and so are unknown outcomes (the same key
        // gets the same answer, never a second run). A call cancelled mid-way ends its
        // claim as a dropped one does: stopped if its handler started and the tool is not
        // safe to repeat, else free. Any other failure frees the key for a new try.
        match rendered.failure.as_ref() {
            None => claim.complete(rendered.report.to_json(&fingerprint)),
            Some(failure) if failure.is_unknown_outcome() => {
                claim.complete(rendered.report.to_json(&fingerprint));
            }
            Some(failure) if matches!(failure.kind(), FailureKind::Cancelled) => drop(claim),
            Some(_) => claim.release(),
        }
    }
    // A stale answer's warning is logged with what failed; any other with its text.
    let stale_note = match (cache_use, &rendered.failure) {
        (Some(CacheUse::Stale), Some(warning)) => Some(warning.details()),
        _ => None,
    };
    let message = stale_note
        .as_deref()
        .unwrap_or_else(|| rendered.report.data.as_str().unwrap_or(""));
    log.cache = cache_use.map(CacheUse::as_str);
    let latency = log.finish(outcome_name, attempts, rendered.failure.as_ref(), message);
    if let (Some(registered), Some(how)) = (registered, cache_use) {
        registered.metrics.cache_used(how);
    }
    match in_flight {
        Some(in_flight) => {
            in_flight.finish(outcome_name, latency, attempts, error_type.as_deref());
        }
        // A tool that is not registered: measured under one label, whatever its name.
        #[cfg(feature = "otel")]
        None => crate::log::otel::record_operation(
            crate::log::otel::Operation::CallTool(crate::log::otel::OTHER),
            latency.as_secs_f64(),
            error_type.as_deref(),
        ),
        #[cfg(not(feature = "otel"))]
        None => {}
    }
    if let Some(failure) = rendered
        .failure
        .as_ref()
        .filter(|failure| failure.is_fatal())
    {
        crate::log::fatal_event(tool, correlation_id.as_str(), failure, &log.redactor);
        rendered.report.fatal = true;
        // The answer goes out first; whoever serves the server ends the process.
        inner.fatal.send_replace(true);
    }
    rendered.report
}
