//! The failure model: why a call failed ([`FailureKind`]), the [`Failure`] that carries it,
//! the [`Target`] a message names, and the text the model reads about each; the class of a
//! user's error (`classify.rs`) and the panic boundary (`panic.rs`) sit below.
//!
//! Every failure becomes a `CallToolResult` with `isError: true` (a warning excepted); the
//! wording is rendered here, in one place. Internal and fatal failures (a handler's
//! unclassified error, a panic) are masked: the model gets a generic message with a
//! correlation id, the log gets the details.

pub(crate) mod classify;
pub(crate) mod panic;

use std::{fmt, fmt::Write as _, time::Duration};

use crate::{
    failure::classify::{Classification, ErrorClass, Human, classify_dyn},
    validate::{ArgIssue, IssueCode},
};

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
        let tool = crate::echo::name(self.tool);
        match self.action {
            Some(action) => write!(f, "`{tool}` (action `{}`)", crate::echo::name(action)),
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
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The arguments did not match the tool's input schema.
    InvalidArguments(Vec<ArgIssue>),
    /// No tool of that name is registered.
    UnknownTool {
        /// The name the client asked for; cut (a prefix and its size) when it is longer
        /// than [`MAX_NAME_BYTES`](crate::MAX_NAME_BYTES) and than every tool's name.
        requested: String,
        /// The names that exist.
        available: Vec<String>,
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
    /// The handler panicked.
    Panic,
    /// The client cancelled the request; the handler was dropped.
    Cancelled,
    /// A destructive, non-idempotent tool timed out or lost its connection mid-call: it
    /// may or may not have done its work.
    UnknownOutcome {
        /// What happened (`timeout`, `transient_exhausted`, ...).
        cause: &'static str,
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
    /// How many times the handler ran (more than one after retries).
    pub(crate) attempts: u32,
}

impl Failure {
    pub(crate) fn new(kind: FailureKind) -> Self {
        Self {
            kind,
            chain: Vec::new(),
            attempts: 1,
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
            FailureKind::Panic => "panic",
            FailureKind::Cancelled => outcome::CANCELLED,
            FailureKind::UnknownOutcome { .. } => "unknown",
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
    fn own_message(&self) -> &str {
        self.chain.first().map_or("", String::as_str)
    }

    /// The text shown to the model. `correlation_id` names the log event of a masked failure.
    pub(crate) fn message(&self, target: &Target<'_>, correlation_id: &str) -> String {
        let tool = target;
        match &self.kind {
            FailureKind::InvalidArguments(issues) => render_issues(target, issues),
            FailureKind::UnknownTool {
                requested,
                available,
            } => unknown_choice(
                &format!("Unknown tool `{}`.", crate::echo::name(requested)),
                "Available tools",
                requested,
                available,
            ),
            FailureKind::MissingAction { tool, available } => format!(
                "Tool `{tool}` needs an `action`: one of {}. Call it again with `\"action\": \"<name>\"` among the arguments.",
                available
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            FailureKind::UnknownAction {
                tool,
                requested,
                available,
            } if available.is_empty() => format!(
                "Tool `{tool}` has no actions, so action `{}` does not exist. Call `{tool}` without an action.",
                crate::echo::name(requested)
            ),
            FailureKind::UnknownAction {
                tool,
                requested,
                available,
            } => unknown_choice(
                &format!(
                    "Unknown action `{}` for tool `{tool}`.",
                    crate::echo::name(requested)
                ),
                "Valid actions",
                requested,
                available,
            ),
            FailureKind::Timeout { limit } => format!(
                "Tool {tool} did not finish within {} and was stopped{}. The upstream may be slow; retry later or narrow the request.",
                Human(*limit),
                self.attempts_text()
            ),
            FailureKind::CircuitOpen { retry_after } => format!(
                "Tool {tool} is temporarily unavailable: its upstream failed repeatedly, so calls are paused. Retry after {}.",
                Human(*retry_after)
            ),
            FailureKind::Panic => format!(
                "Tool {tool} failed with an internal error (reference {correlation_id}): the handler crashed. \
                 The server is still running; the same call is likely to fail again."
            ),
            FailureKind::Handler(classification) => {
                self.handler_message(tool, classification, correlation_id)
            }
            FailureKind::UnknownOutcome { cause, check_with } => {
                let what = if *cause == "timeout" {
                    "did not finish in time"
                } else {
                    "lost its connection"
                };
                let mut text = format!(
                    "Tool {tool} {what}, and the operation may or may not have completed. Do not call it again blindly: check before calling again"
                );
                match check_with {
                    Some(check) => text.push_str(&format!(", for example with {check}.")),
                    None => text.push('.'),
                }
                text
            }
            FailureKind::Cancelled => format!("The call to {tool} was cancelled by the client."),
        }
    }

    fn handler_message(
        &self,
        tool: &Target<'_>,
        classification: &Classification,
        correlation_id: &str,
    ) -> String {
        let mut text = match classification.class {
            ErrorClass::Internal => {
                return format!(
                    "Tool {tool} failed with an internal error (reference {correlation_id}). \
                     The details are in the server log; the same call is likely to fail again."
                );
            }
            ErrorClass::Fatal => {
                return format!(
                    "Tool {tool} hit a fatal error (reference {correlation_id}): the server hit a fatal error and is shutting down."
                );
            }
            ErrorClass::Transient if classification.code.is_none() => format!(
                "Tool {tool} failed: the upstream service is temporarily unavailable ({}){}.",
                self.own_message(),
                self.attempts_text()
            ),
            _ => match classification.code {
                Some(code) => format!("{}: {}", code.label(), self.own_message()),
                None => self.own_message().to_owned(),
            },
        };
        if classification.class == ErrorClass::Transient {
            match classification.retry_after {
                Some(delay) => text.push_str(&format!(" Retry after {}.", Human(delay))),
                None => text.push_str(" Retry in a few seconds."),
            }
        }
        if let Some(hint) = classification.hint {
            text.push_str(&format!(" Hint: {hint}"));
        }
        text
    }

    fn attempts_text(&self) -> String {
        match self.attempts {
            0 | 1 => String::new(),
            n => format!(" after {n} attempts"),
        }
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

/// "Unknown X. Did you mean `y`? Valid Xs: `a`, `b`." — the routing-error wording.
fn unknown_choice(
    headline: &str,
    list_name: &str,
    requested: &str,
    available: &[String],
) -> String {
    let mut text = headline.to_owned();
    if let Some(close) = crate::suggest::closest(requested, available.iter().map(String::as_str)) {
        text.push_str(&format!(" Did you mean `{close}`?"));
    }
    if available.is_empty() {
        text.push_str(" This server has none.");
    } else {
        let names: Vec<String> = available.iter().map(|name| format!("`{name}`")).collect();
        text.push_str(&format!(" {list_name}: {}.", names.join(", ")));
    }
    text
}

/// The text block the model reads for invalid arguments: a headline naming the tool, one
/// line per problem, and what to do next.
pub(crate) fn render_issues(tool: &Target<'_>, issues: &[ArgIssue]) -> String {
    let mut text = format!("Invalid arguments for tool {tool}:\n");
    for issue in issues {
        let place = if issue.path.is_empty() {
            "arguments".to_owned()
        } else {
            format!("`{}`", issue.path)
        };
        let expected = &issue.expected;
        let rule = match issue.code {
            IssueCode::Missing => format!("required, expected {expected}"),
            IssueCode::UnknownField => format!("not a parameter here, expected {expected}"),
            IssueCode::Null => format!("expected {expected}, not null"),
            IssueCode::Custom => expected.clone(),
            _ => format!("expected {expected}"),
        };
        let received = issue.received.as_deref().unwrap_or("(missing)");
        let fix = issue.hint.clone().unwrap_or_else(|| default_fix(issue));
        let _ = writeln!(
            text,
            "- {place} ({code}): {rule}; received {received}. Fix: {fix}.",
            code = issue.code
        );
    }
    let _ = write!(
        text,
        "Fix the field{} above and call {tool} again.",
        if issues.len() == 1 { "" } else { "s" }
    );
    text
}

/// The fix to suggest when the check that found a problem had nothing more specific.
fn default_fix(issue: &ArgIssue) -> String {
    let expected = &issue.expected;
    match issue.code {
        IssueCode::Missing => format!(
            "add `{}`",
            issue.path.rsplit('.').next().unwrap_or(&issue.path)
        ),
        IssueCode::UnknownField => "remove it".to_owned(),
        IssueCode::Null => format!("send {expected}, or leave the field out if it is optional"),
        IssueCode::Custom | IssueCode::Decode => "correct the value".to_owned(),
        IssueCode::MinLength | IssueCode::MaxLength => format!("make it {expected}"),
        IssueCode::Pattern => "send text that matches the pattern".to_owned(),
        _ => format!("send {expected}"),
    }
}
