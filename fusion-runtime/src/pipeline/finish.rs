//! The end of a call, in the poll its answer came in (no `.await`): the answer rendered as
//! exactly one result, the idempotency claim completed or released, the call logged and
//! measured (the call log, the metrics, OpenTelemetry), and a fatal failure raised for
//! whoever serves the server.

use crate::{
    cache::CacheUse,
    failure::{FailureKind, Target, outcome, panic::CorrelationId},
    idempotency::ClaimGuard,
    metrics::InFlight,
    setup::{registered::RegisteredTool, server::Server},
};

use super::{
    cache::Answer,
    call_log::CallLog,
    render::{self, CallReport, Rendered, render},
};

/// What the end of a call reads of it.
pub(super) struct Ending<'a, C> {
    server: &'a Server<C>,
    registered: Option<&'a RegisteredTool<C>>,
    target: &'a Target<'a>,
    correlation_id: &'a CorrelationId,
    /// The arguments' fingerprint, when the call holds an idempotency key.
    fingerprint: &'a str,
}

/// How the call ended: its rendered answer, the outcome it is logged and measured as, how
/// many runs it took, and how the cache answered.
struct Ended {
    rendered: Rendered,
    outcome: &'static str,
    attempts: u32,
    cache_use: Option<CacheUse>,
}

impl<'a, C> Ending<'a, C> {
    /// The end of the call of `target` (its tool's record `registered`, when it has one).
    pub(super) fn new(
        server: &'a Server<C>,
        registered: Option<&'a RegisteredTool<C>>,
        target: &'a Target<'a>,
        correlation_id: &'a CorrelationId,
        fingerprint: &'a str,
    ) -> Self {
        Self {
            server,
            registered,
            target,
            correlation_id,
            fingerprint,
        }
    }

    /// Ends the call with `answer`: exactly one result.
    pub(super) fn finish(
        self,
        answer: Answer,
        claim: Option<ClaimGuard<'_>>,
        mut log: CallLog<'_>,
        in_flight: Option<InFlight<'_>>,
    ) -> CallReport {
        let mut ended = self.render(answer, &log);
        if self.server.inner.draft_tool_failure {
            crate::failure::tool_failure::add_draft_key(
                &mut ended.rendered.report.result,
                self.correlation_id.as_str(),
            );
        }
        if ended.outcome == outcome::OK && ended.attempts > 1 {
            ended.outcome = outcome::RETRIED_OK;
        }
        if let Some(claim) = claim {
            self.settle(claim, &ended.rendered);
        }
        self.observe(&ended, &mut log, in_flight);
        let mut report = ended.rendered.report;
        if let Some(failure) = ended
            .rendered
            .failure
            .as_ref()
            .filter(|failure| failure.is_fatal())
        {
            crate::log::fatal_event(
                self.target.tool,
                self.correlation_id.as_str(),
                failure,
                &log.redactor,
            );
            report.fatal = true;
            // The answer goes out first; whoever serves the server ends the process.
            self.server.inner.fatal.send_replace(true);
        }
        report
    }

    /// The answer as exactly one result: a run's outcome rendered, or the cache's answer.
    fn render(&self, answer: Answer, log: &CallLog<'_>) -> Ended {
        match answer {
            Answer::Ran(ran, cache_use) => {
                let attempts = ran.attempts;
                let wrap_structured = self
                    .registered
                    .is_some_and(|registered| registered.definition.wrap_structured);
                let max_output = self.registered.map(|registered| registered.max_output);
                let (rendered, outcome) = render(
                    self.target,
                    wrap_structured,
                    max_output,
                    ran.into_outcome(),
                    self.correlation_id,
                    &log.redactor,
                );
                Ended {
                    rendered,
                    outcome,
                    attempts,
                    cache_use,
                }
            }
            Answer::Cached(cached) => Ended {
                outcome: match cached.how {
                    CacheUse::Stale => outcome::STALE,
                    _ => outcome::CACHED,
                },
                rendered: render::Rendered {
                    report: cached.report,
                    failure: cached.warning,
                },
                attempts: 0,
                cache_use: Some(cached.how),
            },
        }
    }

    /// Ends the idempotency claim. Successes are kept for the window, and so are unknown
    /// outcomes (the same key gets the same answer, never a second run). A call cancelled
    /// mid-way ends its claim as a dropped one does: stopped if its handler started and the
    /// tool is not safe to repeat, else free. Any other failure frees the key for a new try.
    fn settle(&self, claim: ClaimGuard<'_>, rendered: &Rendered) {
        match rendered.failure.as_ref() {
            None => claim.complete(rendered.report.to_json(self.fingerprint)),
            Some(failure) if failure.is_unknown_outcome() => {
                claim.complete(rendered.report.to_json(self.fingerprint));
            }
            Some(failure) if matches!(failure.kind(), FailureKind::Cancelled) => drop(claim),
            Some(_) => claim.release(),
        }
    }

    /// The call's one event in the call log, its metrics, and its span's failure.
    fn observe(&self, ended: &Ended, log: &mut CallLog<'_>, in_flight: Option<InFlight<'_>>) {
        let failure = ended.rendered.failure.as_ref();
        // How the call failed, as the exported spans and metrics label it.
        #[cfg(feature = "otel")]
        let error_type = failure.map(crate::log::otel::error_type);
        #[cfg(not(feature = "otel"))]
        let error_type: Option<String> = None;
        #[cfg(feature = "otel")]
        if let (Some(failure), Some(error_type)) = (failure, &error_type)
            && crate::log::otel::active()
        {
            crate::log::otel::record_failure(failure, error_type);
            if let FailureKind::InvalidArguments(issues) = failure.kind() {
                crate::log::otel::events::validation_failed(issues);
            }
        }
        // A stale answer's warning is logged with what failed; any other with its text.
        let stale_note = match (ended.cache_use, failure) {
            (Some(CacheUse::Stale), Some(warning)) => Some(warning.details()),
            _ => None,
        };
        let message = stale_note
            .as_deref()
            .unwrap_or_else(|| ended.rendered.report.data.as_str().unwrap_or(""));
        log.cache = ended.cache_use.map(CacheUse::as_str);
        let latency = log.finish(ended.outcome, ended.attempts, failure, message);
        if let (Some(registered), Some(how)) = (self.registered, ended.cache_use) {
            registered.metrics.cache_used(how);
        }
        match in_flight {
            Some(in_flight) => {
                in_flight.finish(
                    ended.outcome,
                    latency,
                    ended.attempts,
                    error_type.as_deref(),
                );
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
    }
}
