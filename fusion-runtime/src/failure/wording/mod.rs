//! Every sentence a client or the model reads about a failure, in one place:
//! - a tool call's failure ([`Failure::message`], below): routing errors with a
//!   did-you-mean, timeouts, an open circuit, masked internal errors with their reference,
//!   a handler's own error with its code, hint and retry advice;
//! - invalid arguments (`args.rs`): what each check expected and how to fix it, and the
//!   block that lists them;
//! - resources, prompts and completions (`catalog.rs`).
//!
//! The code that finds a problem decides what it is; the words are built here, from plain
//! values, so that changing a sentence never means reading a validator or a pipeline.
//! Written where they are raised instead: the refusals of the built-in middleware
//! (`middleware.rs`, a message like any user middleware's `refuse`), and the JSON-RPC
//! errors of requests that are not a well-formed call (`protocol/params.rs`, `transport/`).

pub(crate) mod args;
pub(crate) mod catalog;

use crate::failure::{
    Failure, FailureKind, Target,
    classify::{Classification, ErrorClass, Human},
};

impl Failure {
    /// The text shown to the model. `correlation_id` names the log event of a masked failure.
    pub(crate) fn message(&self, target: &Target<'_>, correlation_id: &str) -> String {
        let tool = target;
        match &self.kind {
            FailureKind::InvalidArguments(issues) => args::render_issues(target, issues),
            FailureKind::UnknownTool {
                action_of: Some(action_of),
                requested,
                ..
            } => format!(
                "Unknown tool `{}`. It is the action `{action}` of tool `{group}`: call `{group}` with `\"action\": \"{action}\"` among the arguments.",
                crate::limits::name(requested),
                group = action_of.0,
                action = action_of.1,
            ),
            FailureKind::UnknownTool {
                requested,
                available,
                ..
            } => unknown_choice(
                &format!("Unknown tool `{}`.", crate::limits::name(requested)),
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
                crate::limits::name(requested)
            ),
            FailureKind::UnknownAction {
                tool,
                requested,
                available,
            } => unknown_choice(
                &format!(
                    "Unknown action `{}` for tool `{tool}`.",
                    crate::limits::name(requested)
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
            FailureKind::UpstreamUnreachable {
                prefix,
                retry_after,
            } => format!(
                "Tool {tool} belongs to the upstream server `{prefix}`, which has not answered since this server started; its tools are added when it does. Retry after {}.",
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
                let what = match *cause {
                    "timeout" => "did not finish in time",
                    "replica_stopped" => {
                        "stopped part-way: the server replica running it stopped before it answered"
                    }
                    "lock_lost" => {
                        "was stopped part-way when it lost the lock that keeps other calls on its key out"
                    }
                    _ => "lost its connection",
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
            FailureKind::EarlierRunStopped { check_with } => {
                let mut text = format!(
                    "Tool {tool} did not run: an earlier call with the same idempotency key stopped part-way \
                     (the server replica running it stopped before it answered), so that operation may or may \
                     not have completed. Do not call it again blindly: check whether it took effect"
                );
                if let Some(check) = check_with {
                    text.push_str(&format!(", for example with {check}"));
                }
                text.push_str(
                    ". If it did not, call again with a new idempotency key; this key keeps this answer.",
                );
                text
            }
            FailureKind::Cancelled => format!("The call to {tool} was cancelled by the client."),
            FailureKind::OutputTooLarge { size, limit } => format!(
                "Tool {tool} produced a result of {size} bytes, more than its limit of {limit} bytes, so it was not sent. \
                 Ask for less: a narrower filter, fewer items, or one page at a time."
            ),
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
            // A message that does not end a sentence gets a period before the hint: "no
            // note has id 1. Hint: …", not "no note has id 1 Hint: …".
            if !text.ends_with(['.', '!', '?', ':']) {
                text.push('.');
            }
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
