//! The call pipeline: every `tools/call`, from a transport or the [`Tester`](crate::testing::Tester),
//! goes through [`Server::call`], one step a file, in this order:
//!
//! 1. resolve: the tool and action, by the registry (`setup/registry.rs`), and the arguments;
//! 2. replay (`replay.rs`): an idempotency key seen before returns the first call's result;
//! 3. admit (`admit.rs`): the context, the argument limits, the middleware chain;
//! 4. attempts (`attempts.rs`): the circuit breaker, retries with backoff, the timeout, reconnect;
//! 5. invoke (`invoke.rs`): decode and validate the arguments, run the handler behind a
//!    panic boundary, classify the outcome;
//! 6. render (`render.rs`): exactly one `CallToolResult`, presentation on success only;
//! 7. the call log (`call_log.rs`): one event a call, a dropped call included.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    task::Poll,
    time::Instant,
};

use rmcp::model::CallToolResult;
use serde_json::{Map, Value};

use crate::{
    call::Call,
    failure::outcome,
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    idempotency::{Claim, ClaimGuard},
    identity::RequestInfo,
    log::Redactor,
};

use crate::setup::server::Server;

mod admit;
mod attempts;
mod call_log;
mod invoke;
pub(crate) mod render;
mod replay;

use attempts::Ran;
use call_log::CallLog;
pub(crate) use render::CallReport;

static CALL_COUNTER: AtomicU64 = AtomicU64::new(0);

pub(crate) fn request_id_text(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(number) => number.to_string(),
        rmcp::model::NumberOrString::String(text) => text.to_string(),
    }
}

/// Who is calling, from what rmcp hands the handler: the HTTP request's parts when served
/// over Streamable HTTP; otherwise (stdio) the process's owner.
pub(crate) fn request_info(extensions: &rmcp::model::Extensions) -> RequestInfo {
    match extensions.get::<http::request::Parts>() {
        Some(parts) => RequestInfo::from_http(parts),
        None => RequestInfo::stdio(),
    }
}

/// The refusal of a keyed call whose idempotency store cannot be reached: it must not run
/// (it may have run on another replica), and a retry later will be deduplicated again. The
/// store's reason goes to the log only: it may name infrastructure.
fn deduplication_unavailable(target: &Target<'_>, reason: &str) -> Failure {
    tracing::warn!(target: "fusion::idempotency", tool = target.tool, reason, "the idempotency store is unavailable; the keyed call did not run");
    crate::middleware::refuse(
        crate::failure::classify::Classification {
            class: crate::failure::classify::ErrorClass::Transient,
            code: None,
            hint: Some("the call did not run; call again in a moment with the same key"),
            retry_after: Some(std::time::Duration::from_secs(1)),
        },
        format!(
            "{} did not run: deduplication of its idempotency key is unavailable right now",
            target
        ),
    )
}

/// `run`, unless the call is cancelled first: the cancellation is looked at before each
/// poll of `run` (as a `biased` select would), but waited for only once `run` waits, so a
/// call that ends in its first poll never registers with the token (a lock and a list
/// entry each way).
async fn until_cancelled(call: &Call, run: impl Future<Output = Ran>) -> Ran {
    let mut run = std::pin::pin!(run);
    let mut cancelled = std::pin::pin!(call.cancelled());
    let cancelled_run = || Ran::no_attempt(Failure::new(FailureKind::Cancelled));
    std::future::poll_fn(|cx| {
        if call.is_cancelled() {
            return Poll::Ready(cancelled_run());
        }
        if let Poll::Ready(ran) = run.as_mut().poll(cx) {
            return Poll::Ready(ran);
        }
        match cancelled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(cancelled_run()),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

impl<C: Send + Sync + 'static> Server<C> {
    /// Runs one call through the whole pipeline and returns exactly one result.
    ///
    /// `args` may be absent (`Null`) or an object; anything else is an invalid-arguments
    /// result. `context` replaces the factory's context (the tester uses it).
    pub(crate) async fn call(
        &self,
        tool: &str,
        action: Option<&str>,
        args: Value,
        context: Option<C>,
        call: &Call,
    ) -> CallReport {
        let started = Instant::now();
        let call_number = CALL_COUNTER.fetch_add(1, Ordering::Relaxed);
        let correlation_id = recover::CorrelationId::new(call_number);
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other,
        };
        let resolved = self.inner.registry.resolve(tool, action, &mut args);
        let (handler, action) = match &resolved {
            Ok((index, resolved)) => (Some(*index), resolved.map(str::to_owned)),
            Err(_) => (None, action.map(str::to_owned)),
        };
        let target = Target {
            tool,
            action: action.as_deref(),
        };
        let redactor = match handler {
            Some(index) => Redactor::new(&self.inner.registry.handlers[index].secret_keys, &args),
            None => Redactor::default(),
        };
        // Counted in flight from here; the guard gives the count back however the call
        // ends, its future dropped included.
        let in_flight = handler.map(|index| self.inner.metrics[index].start());
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
            ok_level: self.inner.ok_level,
            armed: true,
        };
        // An idempotency key seen before returns the first call's result.
        let idempotency_key =
            handler.and_then(|index| self.idempotency_key(index, &target, &log.args));
        // What the stored result is checked against: the same key with other arguments is
        // a conflict, not a replay.
        let fingerprint = idempotency_key
            .as_ref()
            .map(|_| crate::canonical_json::fingerprint(&log.args));
        let mut claim = None;
        let mut cancelled_early = false;
        let mut unavailable = None;
        let mut conflict = false;
        if let Some(key) = &idempotency_key {
            let store = &*self.inner.idempotency;
            // Await: waits while another run of the key is in progress. Holds `in_flight`
            // only; a drop here leaves no claim (the store's waiter goes with the future).
            let claimed = tokio::select! {
                biased;
                () = call.cancelled() => None,
                claimed = store.claim(key, self.inner.idempotency_window) => Some(claimed),
            };
            match claimed {
                Some(Claim::Replay(stored)) => match CallReport::from_json(stored) {
                    Some((_, Some(first))) if Some(&first) != fingerprint.as_ref() => {
                        conflict = true;
                    }
                    Some((report, _)) => {
                        let latency = log.finish(outcome::REPLAYED, 0, None, "");
                        if let Some(in_flight) = in_flight {
                            in_flight.finish(outcome::REPLAYED, latency, 0);
                        }
                        return report;
                    }
                    // A stored result this build cannot read: run again, and store anew.
                    None => claim = Some(ClaimGuard::new(store, key)),
                },
                Some(Claim::Run) => claim = Some(ClaimGuard::new(store, key)),
                Some(Claim::Unavailable(reason)) => unavailable = Some(reason),
                None => cancelled_early = true,
            }
        }
        // A cancelled request drops the handler's future (its destructors run); the
        // transport sends no answer for a cancelled id, as the protocol says. A request
        // cancelled before it started never starts.
        let ran = match resolved {
            Err(kind) => Ran::no_attempt(Failure::new(kind)),
            Ok(_) if cancelled_early => Ran::no_attempt(Failure::new(FailureKind::Cancelled)),
            Ok((index, _)) if conflict => Ran::no_attempt(replay::idempotency_conflict(
                &target,
                self.idempotency_argument(index)
                    .unwrap_or("idempotency key"),
            )),
            Ok(_) if unavailable.is_some() => {
                let reason = unavailable.as_deref().unwrap_or_default();
                Ran::no_attempt(deduplication_unavailable(&target, reason))
            }
            // Await: the call itself. Holds `in_flight` and `claim`; a drop here gives both
            // back (the claim is released, so a waiter or a retry of the key runs).
            Ok((index, _)) => {
                let run = self.run(index, &target, &log.args, context, call, &log.redactor);
                until_cancelled(call, run).await
            }
        };
        let attempts = ran.attempts;
        let outcome = ran.into_outcome();
        // No `.await` from here on: the call ends in this poll.
        let (mut rendered, mut outcome_name) =
            self.render(&target, handler, outcome, &correlation_id, &log.redactor);
        if outcome_name == outcome::OK && attempts > 1 {
            outcome_name = outcome::RETRIED_OK;
        }
        if let Some(claim) = claim {
            // Successes are kept for the window; a failure frees the key for a new try.
            if rendered.failure.is_none() {
                claim.complete(
                    rendered
                        .report
                        .to_json(fingerprint.as_deref().unwrap_or_default()),
                );
            } else {
                claim.release();
            }
        }
        let latency = log.finish(
            outcome_name,
            attempts,
            rendered.failure.as_ref(),
            rendered.report.data.as_str().unwrap_or(""),
        );
        if let Some(in_flight) = in_flight {
            in_flight.finish(outcome_name, latency, attempts);
        }
        if let Some(failure) = rendered
            .failure
            .as_ref()
            .filter(|failure| failure.is_fatal())
        {
            crate::log::fatal_event(tool, correlation_id.as_str(), failure, &log.redactor);
            rendered.report.fatal = true;
            // The answer goes out first; whoever serves the server ends the process.
            self.inner.fatal.send_replace(true);
        }
        rendered.report
    }

    /// Serves one `tools/call` from a transport: the request's id, progress token and
    /// cancellation become the tool's [`Call`].
    pub(crate) async fn serve_call(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> CallToolResult {
        let progress_token = context.meta.get_progress_token();
        let numbers = crate::validate::NumberLiterals::from_meta(&context.meta);
        let call = Call::connected(
            request_id_text(&context.id),
            progress_token,
            context.peer,
            context.ct,
            self.log_level(),
            numbers,
            request_info(&context.extensions),
        );
        let args = request.arguments.map_or(Value::Null, Value::Object);
        self.call(&request.name, None, args, None, &call)
            .await
            .result
    }
}
