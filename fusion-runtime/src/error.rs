//! Failures of a tool call and the text the model reads about them.
//!
//! Every failure becomes a `CallToolResult` with `isError: true`; the wording is rendered
//! here, in one place. Internal failures (a handler's error, a panic) are masked: the model
//! gets a generic message with a correlation id, the log gets the details.

use std::fmt;

use crate::validate::ArgIssue;

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureKind {
    /// The arguments did not match the tool's input schema.
    InvalidArguments(Vec<ArgIssue>),
    /// No tool of that name is registered.
    UnknownTool {
        /// The name the client asked for.
        requested: String,
        /// The names that exist.
        available: Vec<String>,
    },
    /// The tool has no such action.
    UnknownAction {
        /// The tool.
        tool: String,
        /// The action the client asked for.
        requested: String,
        /// The actions that exist (empty for a tool without actions).
        available: Vec<String>,
    },
    /// The handler returned an error that is not the model's to fix.
    Internal,
    /// The handler panicked.
    Panic,
}

/// A failed call: what kind, and for internal failures the details kept for the log.
#[derive(Clone, Debug)]
pub struct Failure {
    pub(crate) kind: FailureKind,
    /// The error's own message and its source chain, outermost first. Never shown to the
    /// model for internal failures.
    pub(crate) chain: Vec<String>,
}

impl Failure {
    pub(crate) fn new(kind: FailureKind) -> Self {
        Self {
            kind,
            chain: Vec::new(),
        }
    }

    /// An internal failure from a handler's error, with its source chain for the log.
    pub fn from_error(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut chain = vec![error.to_string()];
        let mut source = error.source();
        while let Some(inner) = source {
            chain.push(inner.to_string());
            source = inner.source();
        }
        Self {
            kind: FailureKind::Internal,
            chain,
        }
    }

    /// An internal failure described by a message for the log.
    pub fn internal_message(message: impl Into<String>) -> Self {
        Self {
            kind: FailureKind::Internal,
            chain: vec![message.into()],
        }
    }

    pub(crate) fn panic(message: String) -> Self {
        Self {
            kind: FailureKind::Panic,
            chain: vec![message],
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> &FailureKind {
        &self.kind
    }

    /// Whether the details must be hidden from the model (and logged instead).
    pub fn is_masked(&self) -> bool {
        matches!(self.kind, FailureKind::Internal | FailureKind::Panic)
    }

    /// A stable, lowercase name of the outcome, used in logs.
    pub fn outcome_name(&self) -> &'static str {
        match self.kind {
            FailureKind::InvalidArguments(_) => "invalid_arguments",
            FailureKind::UnknownTool { .. } => "unknown_tool",
            FailureKind::UnknownAction { .. } => "unknown_action",
            FailureKind::Internal => "internal",
            FailureKind::Panic => "panic",
        }
    }

    /// The details: the error and its sources joined with ": ".
    pub fn details(&self) -> String {
        self.chain.join(": ")
    }

    /// The text shown to the model. `correlation_id` names the log event of a masked failure.
    pub(crate) fn message(&self, tool: &str, correlation_id: &str) -> String {
        match &self.kind {
            FailureKind::InvalidArguments(issues) => crate::validate::render_issues(tool, issues),
            FailureKind::UnknownTool {
                requested,
                available,
            } => unknown_choice(
                &format!("Unknown tool `{requested}`."),
                "Available tools",
                requested,
                available,
            ),
            FailureKind::UnknownAction {
                tool,
                requested,
                available,
            } if available.is_empty() => format!(
                "Tool `{tool}` has no actions, so action `{requested}` does not exist. Call `{tool}` without an action."
            ),
            FailureKind::UnknownAction {
                tool,
                requested,
                available,
            } => unknown_choice(
                &format!("Unknown action `{requested}` for tool `{tool}`."),
                "Valid actions",
                requested,
                available,
            ),
            FailureKind::Internal => format!(
                "Tool `{tool}` failed with an internal error (reference {correlation_id}). \
                 The details are in the server log; the same call is likely to fail again."
            ),
            FailureKind::Panic => format!(
                "Tool `{tool}` failed with an internal error (reference {correlation_id}): the handler crashed. \
                 The server is still running; the same call is likely to fail again."
            ),
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
    if let Some(close) = crate::validate::closest(requested, available.iter().map(String::as_str)) {
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
