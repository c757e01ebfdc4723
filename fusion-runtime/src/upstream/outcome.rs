//! An upstream's answers as outcomes the pipeline knows: its `CallToolResult` as a success
//! or the tool's own error, and what went wrong on the link as transient, invalid input,
//! internal or not sent, in words that name the upstream.

use serde_json::Value;

use super::link_error::LinkError;
use crate::{
    failure::{Classification, ErrorClass, ErrorCode, Failure, FailureKind},
    tool::{Outcome, ToolOutput},
};

/// A `CallToolResult` from the upstream as an outcome: a success as it came, an error
/// result as a failure in the upstream's words, transient when a fusion upstream says so.
pub(crate) fn from_result(result: Value) -> Outcome {
    let result: rmcp::model::CallToolResult = match serde_json::from_value(result) {
        Ok(result) => result,
        Err(error) => {
            return Outcome::Failure(Failure::internal_message(format!(
                "the upstream's result is not a CallToolResult: {error}"
            )));
        }
    };
    if result.is_error != Some(true) {
        let (data, data_is_text) = match &result.structured_content {
            Some(structured) => (structured.clone(), false),
            None => (Value::Null, true),
        };
        return Outcome::Success(ToolOutput {
            content: result.content,
            structured: result.structured_content,
            data,
            data_is_text,
            presentation: None,
        });
    }
    let text: Vec<&str> = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
        .collect();
    let text = if text.is_empty() {
        "the upstream tool failed and said nothing more".to_owned()
    } else {
        text.join("\n")
    };
    // A fusion upstream says what kind of failure it was.
    let said = result
        .meta
        .as_ref()
        .and_then(|meta| meta.0.get(crate::meta::FAILURE_META_KEY));
    let transient = said
        .and_then(|entry| entry.get("class"))
        .and_then(Value::as_str)
        == Some("transient");
    let classification = if transient {
        Classification {
            retry_after: said
                .and_then(|entry| entry.get("retry_after_ms"))
                .and_then(Value::as_u64)
                .map(std::time::Duration::from_millis),
            ..Classification::of(ErrorClass::Transient)
        }
    } else {
        Classification::of(ErrorClass::InvalidInput)
    };
    let mut failure = Failure::new(FailureKind::Handler(classification));
    failure.chain = vec![text];
    Outcome::Failure(failure)
}

/// What the caller is told of a failure of the link, and how the pipeline treats it.
pub(crate) fn from_link_error(prefix: &str, error: LinkError) -> Failure {
    let (class, code, retry_after, not_sent, words) = match error {
        LinkError::NotSent(why) => (
            ErrorClass::Transient,
            None,
            None,
            true,
            format!("upstream `{prefix}` could not be sent the call: {why}"),
        ),
        LinkError::Lost(why) | LinkError::AlsoLost(why) => (
            ErrorClass::Transient,
            None,
            None,
            false,
            format!("upstream `{prefix}` did not answer: {why}"),
        ),
        LinkError::Status {
            status: 429,
            retry_after,
        } => (
            ErrorClass::Transient,
            Some(ErrorCode::RateLimited),
            retry_after,
            true,
            format!("upstream `{prefix}` is rate limiting this server"),
        ),
        LinkError::Status {
            status,
            retry_after,
        } if status >= 500 => (
            ErrorClass::Transient,
            None,
            retry_after,
            false,
            format!("upstream `{prefix}` answered HTTP {status}"),
        ),
        LinkError::Status { status, .. } => (
            ErrorClass::Internal,
            None,
            None,
            false,
            format!("upstream `{prefix}` answered HTTP {status}"),
        ),
        LinkError::Rpc { code, message } if code == -32602 || code == -32601 => {
            (ErrorClass::InvalidInput, None, None, false, message)
        }
        LinkError::Rpc { code, message } if code == -32603 || (-32099..=-32000).contains(&code) => {
            (
                ErrorClass::Transient,
                None,
                None,
                false,
                format!("upstream `{prefix}` failed: {message}"),
            )
        }
        LinkError::Rpc { code, message } => (
            ErrorClass::Internal,
            None,
            None,
            false,
            format!("upstream `{prefix}` answered JSON-RPC error {code}: {message}"),
        ),
        LinkError::TooLarge { limit } => (
            ErrorClass::InvalidInput,
            None,
            None,
            false,
            format!(
                "the answer of upstream `{prefix}` is larger than {limit} bytes, the most this server reads from it. \
                 Ask for less: a narrower filter, fewer items, or one page at a time"
            ),
        ),
        LinkError::Garbage(why) => (
            ErrorClass::Internal,
            None,
            None,
            false,
            format!("upstream `{prefix}` sent what is not MCP: {why}"),
        ),
    };
    let mut failure = Failure::new(FailureKind::Handler(Classification {
        class,
        code,
        hint: None,
        retry_after,
    }));
    failure.chain = vec![words];
    failure.not_sent = not_sent;
    failure
}
