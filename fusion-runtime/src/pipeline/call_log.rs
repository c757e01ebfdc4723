//! The call log: one event a call, written when the call ends or, for a dropped call,
//! by the guard's `Drop`.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{
    call::Call,
    failure::panic as recover,
    failure::{Failure, FailureKind, Target},
    log::Redactor,
    metrics::InFlight,
    setup::{registered::RegisteredTool, server::Server},
};

/// The one log event of a call. If the call's future is dropped before it ends (the client
/// went away, a session closed), `Drop` logs it as cancelled: without that, such a call
/// would leave no trace in the log.
pub(super) struct CallLog<'a> {
    pub(super) tool: &'a str,
    pub(super) action: Option<&'a str>,
    pub(super) request_id: Option<&'a str>,
    pub(super) caller: Option<&'a str>,
    /// The call's arguments, owned by the log guard for the length of the call.
    pub(super) args: Value,
    pub(super) correlation_id: &'a recover::CorrelationId,
    pub(super) redactor: Redactor,
    pub(super) started: Instant,
    pub(super) ok_level: tracing::Level,
    /// Cleared once the event is logged.
    pub(super) armed: bool,
    /// For a cached tool, how the cache answered (`hit`, `miss`, ...), set before `finish`.
    pub(super) cache: Option<&'static str>,
    /// The tester's, when it made the call: it keeps a copy of the event.
    pub(super) watch: Option<&'a crate::inject::watch::Watch>,
}

impl<'a> CallLog<'a> {
    /// Opens the log of a call of `target` (its tool's one record `registered`, when it
    /// has one) with `args`, counted in flight from here: the in-flight guard gives the
    /// count back however the call ends, its future dropped included. Its arguments reach
    /// the call's span only if the tool opts in, as the log shows them.
    pub(super) fn open<C>(
        server: &'a Server<C>,
        registered: Option<&'a RegisteredTool<C>>,
        target: &Target<'a>,
        args: Value,
        correlation_id: &'a recover::CorrelationId,
        started: Instant,
        call: &'a Call,
    ) -> (Self, Option<InFlight<'a>>) {
        let redactor = match registered {
            Some(registered) => Redactor::new(&registered.definition.secret_keys, &args),
            None => Redactor::default(),
        };
        #[cfg(feature = "otel")]
        if registered.is_some_and(|registered| registered.definition.spec.trace_arguments)
            && crate::log::otel::active()
        {
            crate::log::otel::record_arguments(&args, &redactor);
        }
        let in_flight = registered.map(|registered| registered.metrics.start());
        let log = Self {
            tool: target.tool,
            action: target.action,
            request_id: call.request_id(),
            caller: call.request().subject(),
            args,
            correlation_id,
            redactor,
            started,
            ok_level: server.inner.ok_level,
            armed: true,
            watch: call.watch(),
            cache: None,
        };
        (log, in_flight)
    }

    /// Logs the call's event and returns its latency.
    pub(super) fn finish(
        &mut self,
        outcome: &'static str,
        attempts: u32,
        failure: Option<&Failure>,
        message: &str,
    ) -> Duration {
        self.armed = false;
        // One clock read for both the latency and the event's time.
        let ended = Instant::now();
        let latency = ended.saturating_duration_since(self.started);
        let record = crate::log::CallRecord {
            tool: self.tool,
            action: self.action,
            request_id: self.request_id,
            caller: self.caller,
            args: &self.args,
            correlation_id: self.correlation_id,
            latency,
            outcome,
            attempts,
            failure,
            message,
            redactor: &self.redactor,
            ok_level: self.ok_level,
            cache: self.cache,
        };
        // The tester's copy, whether or not a subscriber listens.
        if let Some(watch) = self.watch {
            let at = std::time::SystemTime::now();
            watch.logged(crate::log::call_event_json(&record, at));
        }
        // The queued line has no `cache` field: a cached tool's event goes through `tracing`.
        if failure.is_none() && self.cache.is_none() {
            let success = crate::log::Success {
                tool: self.tool,
                action: self.action,
                request_id: self.request_id,
                caller: self.caller,
                correlation: self.correlation_id.number(),
                latency,
                ended,
                outcome,
                attempts,
                level: self.ok_level,
            };
            if crate::log::defer_success(&success, &self.args, &self.redactor) {
                return latency;
            }
        }
        crate::log::call_event(&record);
        latency
    }
}

impl Drop for CallLog<'_> {
    fn drop(&mut self) {
        if self.armed {
            let failure = Failure::new(FailureKind::Cancelled);
            self.finish(
                crate::failure::outcome::CANCELLED,
                0,
                Some(&failure),
                "the call was dropped before it ended (the client went away or the transport stopped)",
            );
        }
    }
}
