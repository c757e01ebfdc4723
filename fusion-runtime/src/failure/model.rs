//! The failure model: why a call failed ([`FailureKind`]), the [`Failure`] that carries it,
//! the tool (and action) a message names (`Target`), and the names calls are logged under
//! (`outcome`).

use std::{fmt, time::Duration};

use super::classify::{Classification, ErrorClass, classify_dyn};
use super::issue::ArgIssue;

/// The tool (and action) a call addressed, as messages name it: "`db_user` (action
/// `find_many`)".
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) tool: &'a str,
    pub(crate) action: Option<&'a str>,
}

impl std::fmt::Display for Target<'_> {
    /// Names as the client sent them, cut when over the name limit (an unknown tool's name
    /// is the client's, of any size).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tool = crate::limits::name(self.tool);
        match self.action {
            Some(action) => write!(f, "`{tool}` (action `{}`)", crate::limits::name(action)),
            None => write!(f, "`{tool}`"),
        }
    }
}

/// The outcome names a call is logged and counted under besides a failure's own
/// ([`Failure::outcome_name`]): one place, so the log, the metrics and the pipeline agree.
pub(crate) mod outcome {
    /// The handler succeeded on its first run.
    pub(crate) const OK: &str = "ok";
    /// The handler succeeded after a retry.
    pub(crate) const RETRIED_OK: &str = "retried_ok";
    /// An idempotency key seen before: the first call's result, returned again.
    pub(crate) const REPLAYED: &str = "replayed";
    /// The call was cancelled, or its future dropped before it ended.
    pub(crate) const CANCELLED: &str = "cancelled";
    /// A cached tool's answer, from the cache: the handler did not run.
    pub(crate) const CACHED: &str = "cached";
    /// A cached tool's run failed, and the call was answered with an older answer.
    pub(crate) const STALE: &str = "stale";
}

/// The cause (and `_meta` code) of an unknown outcome whose server replica stopped
/// part-way: a task's runner, or the run that holds an idempotency key.
pub(crate) const REPLICA_STOPPED: &str = "replica_stopped";

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The arguments did not match the tool's input schema.
    InvalidArguments(Vec<ArgIssue>),
    /// No tool of that name is registered.
    UnknownTool {
        /// The name the client asked for; cut (a prefix and its size) when it is longer
        /// than [`MAX_NAME_BYTES`](crate::limits::MAX_NAME_BYTES) and than every tool's name.
        requested: String,
        /// The names that exist.
        available: Vec<String>,
        /// The grouped tool and action the name looks like (`add_note`: tool `notes`,
        /// action `add`), when one does.
        action_of: Option<Box<(String, String)>>,
    },
    /// A grouped tool was called without an action.
    MissingAction {
        /// The tool.
        tool: String,
        /// The actions that exist.
        available: Vec<String>,
    },
    /// The tool has no such action.
    UnknownAction {
        /// The tool.
        tool: String,
        /// The action the client asked for; cut as [`FailureKind::UnknownTool`]'s is.
        requested: String,
        /// The actions that exist (empty for a tool without actions).
        available: Vec<String>,
    },
    /// The handler returned an error; its classification says what to do with it.
    Handler(Classification),
    /// The handler did not finish in time and was stopped.
    Timeout {
        /// The limit it exceeded.
        limit: Duration,
    },
    /// The tool's circuit breaker is open after repeated transient failures.
    CircuitOpen {
        /// When a call will be tried again.
        retry_after: Duration,
    },
    /// The tool is named under the prefix of a mounted upstream server
    /// ([`ServerBuilder::upstream`](crate::ServerBuilder::upstream)) that has not answered
    /// since this server started: its tools are not known yet, and are added when it does.
    UpstreamUnreachable {
        /// The upstream's prefix.
        prefix: String,
        /// When it is tried again.
        retry_after: Duration,
    },
    /// The handler panicked.
    Panic,
    /// The client cancelled the request; the handler was dropped.
    Cancelled,
    /// The handler's structured result was larger than the tool's output limit, so it was
    /// not sent (a text result is cut instead).
    OutputTooLarge {
        /// The result's size in bytes, as it would have been sent.
        size: usize,
        /// The tool's limit in bytes.
        limit: usize,
    },
    /// A destructive, non-idempotent tool timed out or lost its connection mid-call: it
    /// may or may not have done its work.
    UnknownOutcome {
        /// What happened (`timeout`, `transient_exhausted`, ...).
        cause: &'static str,
        /// A read-only tool (or `group` action) to check with, if there is one.
        check_with: Option<String>,
    },
    /// An earlier call with the same idempotency key stopped part-way (its server replica
    /// died or was paused past its lease, or the call was dropped after its handler
    /// started) before it stored a result, and the tool is not safe to repeat: this call
    /// did not run, and the earlier one may or may not have done its work. An unknown
    /// outcome (`replica_stopped`), kept for the key's window.
    EarlierRunStopped {
        /// A read-only tool (or `group` action) to check with, if there is one.
        check_with: Option<String>,
    },
}

/// A failed call: what kind, the error's own words and source chain, and how many times
/// the handler ran.
#[derive(Clone, Debug)]
pub struct Failure {
    pub(crate) kind: FailureKind,
    /// The error's own message and its source chain, outermost first. Never shown to the
    /// model for masked failures.
    pub(crate) chain: Vec<String>,
    /// How many times the handler ran (more than one after retries). The pipeline counts
    /// them in `pipeline::policy::Ran` and writes the count here once, before rendering.
    pub(crate) attempts: u32,
    /// The work was certainly not done: the request never left for the service that
    /// would do it (a connection refused, a process that is not running). A tool unsafe to
    /// repeat then fails as transient, not as an unknown outcome.
    pub(crate) not_sent: bool,
}

impl Failure {
    pub(crate) fn new(kind: FailureKind) -> Self {
        Self {
            kind,
            chain: Vec::new(),
            attempts: 1,
            not_sent: false,
        }
    }

    /// A failure from a handler's error of a known classification, with its source chain
    /// for the log.
    pub fn classified(
        classification: Classification,
        error: &(dyn std::error::Error + 'static),
    ) -> Self {
        let mut chain = vec![error.to_string()];
        let mut source = error.source();
        while let Some(inner) = source {
            chain.push(inner.to_string());
            source = inner.source();
        }
        Self {
            kind: FailureKind::Handler(classification),
            chain,
            attempts: 1,
            not_sent: false,
        }
    }

    /// A failure from an error whose type is not known statically: the class is found by
    /// searching its source chain (see [`classify_dyn`]).
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        Self::classified(classify_dyn(error), error)
    }

    /// An internal failure described by a message for the log.
    pub fn internal_message(message: impl Into<String>) -> Self {
        Self {
            kind: FailureKind::Handler(Classification::INTERNAL),
            chain: vec![message.into()],
            attempts: 1,
            not_sent: false,
        }
    }

    pub(crate) fn panic(message: String) -> Self {
        let mut chain = vec![message];
        if let Some(location) = crate::failure::panic::take_panic_location() {
            chain.push(format!("panicked at {location}"));
        }
        Self {
            kind: FailureKind::Panic,
            chain,
            attempts: 1,
            not_sent: false,
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> &FailureKind {
        &self.kind
    }

    /// The class of a handler's error, if this failure is one.
    pub fn class(&self) -> Option<ErrorClass> {
        match &self.kind {
            FailureKind::Handler(classification) => Some(classification.class),
            _ => None,
        }
    }

    /// Whether running the handler again may succeed: a transient error or a timeout.
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, FailureKind::Timeout { .. })
            || self.class() == Some(ErrorClass::Transient)
    }

    /// Whether the call may or may not have done its work (a timeout or a lost
    /// connection of a tool unsafe to repeat, an earlier run of its key that stopped
    /// part-way): the caller must check before calling again.
    pub fn is_unknown_outcome(&self) -> bool {
        matches!(
            self.kind,
            FailureKind::UnknownOutcome { .. } | FailureKind::EarlierRunStopped { .. }
        )
    }

    /// Whether the process must end.
    pub fn is_fatal(&self) -> bool {
        self.class() == Some(ErrorClass::Fatal)
    }

    /// Whether this is advice rather than a failure (`isError: false`).
    pub fn is_warning(&self) -> bool {
        self.class() == Some(ErrorClass::Warning)
    }

    /// Whether the details must be hidden from the model (and logged instead).
    pub fn is_masked(&self) -> bool {
        matches!(self.kind, FailureKind::Panic)
            || matches!(self.class(), Some(ErrorClass::Internal | ErrorClass::Fatal))
    }

    /// How many times the handler ran.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// A stable, lowercase name of the outcome, used in logs.
    pub fn outcome_name(&self) -> &'static str {
        match &self.kind {
            FailureKind::InvalidArguments(_) => "invalid_arguments",
            FailureKind::UnknownTool { .. } => "unknown_tool",
            FailureKind::UnknownAction { .. } | FailureKind::MissingAction { .. } => {
                "unknown_action"
            }
            FailureKind::Timeout { .. } => "timeout",
            FailureKind::CircuitOpen { .. } => "circuit_open",
            FailureKind::UpstreamUnreachable { .. } => "upstream_unreachable",
            FailureKind::Panic => "panic",
            FailureKind::Cancelled => outcome::CANCELLED,
            FailureKind::UnknownOutcome { .. } | FailureKind::EarlierRunStopped { .. } => "unknown",
            FailureKind::OutputTooLarge { .. } => "output_too_large",
            FailureKind::Handler(classification) => {
                match (classification.code, classification.class) {
                    (Some(code), _) => code.as_str(),
                    (None, ErrorClass::Transient) => "transient_exhausted",
                    (None, class) => class.as_str(),
                }
            }
        }
    }

    /// The details: the error and its sources joined with ": ".
    pub fn details(&self) -> String {
        self.chain.join(": ")
    }

    /// The error's own message (the head of the chain).
    pub(super) fn own_message(&self) -> &str {
        self.chain.first().map_or("", String::as_str)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.outcome_name())?;
        if !self.chain.is_empty() {
            write!(f, ": {}", self.details())?;
        }
        Ok(())
    }
}
