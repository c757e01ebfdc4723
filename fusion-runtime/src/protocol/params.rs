//! Requests for a known method whose params do not fit.
//!
//! rmcp reads a request whose params do not fit its method's type as a `CustomRequest`
//! (the catch-all of its untagged message enum) and answers it `-32601` (method not found),
//! which tells the client the wrong thing. Both transports hand such requests to
//! [`reject_custom`], which re-reads the params as the method's own type and answers
//! `-32602` (invalid params) with serde's words for what does not fit, as JSON-RPC 2.0 §5.1
//! says. Unknown methods keep `-32601`.

use rmcp::model::{self as mcp, ConstString, CustomRequest, ErrorCode, ErrorData};
use serde::Deserialize;
use serde_json::{Map, Value};

/// The longest client-sent text (a method name, serde's message quoting a value) an error
/// answer repeats, in characters.
const ECHO_CHARS: usize = 200;

/// The error answer to a request rmcp read as a custom request.
pub(crate) fn reject_custom(request: &CustomRequest) -> ErrorData {
    let method = cut(&request.method);
    match params_problem(&request.method, request.params.as_ref()) {
        Some(problem) => ErrorData::new(
            ErrorCode::INVALID_PARAMS,
            format!(
                "Invalid params for `{method}`: {}. See the MCP specification for this method's params.",
                cut(&problem)
            ),
            None,
        ),
        None => ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: `{method}` is not a method this server serves."),
            None,
        ),
    }
}

/// Whether the 2026-07-28 revision removed `method` (the session's methods).
pub(crate) fn is_removed(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "logging/setLevel"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "notifications/initialized"
    )
}

/// What does not fit in the params of `method`, when it is a method rmcp knows.
// The legacy methods (logging, resource subscriptions) are still served, so their params
// are still checked.
#[allow(deprecated)]
fn params_problem(method: &str, params: Option<&Value>) -> Option<String> {
    let mut message = Map::new();
    message.insert("method".to_owned(), Value::String(method.to_owned()));
    if let Some(params) = params {
        message.insert("params".to_owned(), params.clone());
    }
    let message = Value::Object(message);
    macro_rules! known {
        ($($request:ty => $name:ty),* $(,)?) => {
            $(
                if method == <$name as ConstString>::VALUE {
                    return Some(match <$request>::deserialize(&message) {
                        Err(error) => error.to_string(),
                        // rmcp's enum tried this type before its catch-all: it cannot fit.
                        Ok(_) => "the params do not fit this method".to_owned(),
                    });
                }
            )*
        };
    }
    known!(
        mcp::InitializeRequest => mcp::InitializeResultMethod,
        mcp::DiscoverRequest => mcp::DiscoverRequestMethod,
        mcp::CompleteRequest => mcp::CompleteRequestMethod,
        mcp::SetLevelRequest => mcp::SetLevelRequestMethod,
        mcp::GetPromptRequest => mcp::GetPromptRequestMethod,
        mcp::ListPromptsRequest => mcp::ListPromptsRequestMethod,
        mcp::ListResourcesRequest => mcp::ListResourcesRequestMethod,
        mcp::ListResourceTemplatesRequest => mcp::ListResourceTemplatesRequestMethod,
        mcp::ReadResourceRequest => mcp::ReadResourceRequestMethod,
        mcp::SubscriptionsListenRequest => mcp::SubscriptionsListenRequestMethod,
        mcp::SubscribeRequest => mcp::SubscribeRequestMethod,
        mcp::UnsubscribeRequest => mcp::UnsubscribeRequestMethod,
        mcp::CallToolRequest => mcp::CallToolRequestMethod,
        mcp::ListToolsRequest => mcp::ListToolsRequestMethod,
        mcp::GetTaskRequest => mcp::GetTaskMethod,
        mcp::UpdateTaskRequest => mcp::UpdateTaskMethod,
        mcp::CancelTaskRequest => mcp::CancelTaskMethod,
        mcp::ListSkillsRequest => mcp::ListSkillsRequestMethod,
        mcp::GetSkillRequest => mcp::GetSkillRequestMethod,
        mcp::ReadResourceDirectoryRequest => mcp::ReadResourceDirectoryRequestMethod,
    );
    None
}

/// `text` cut to [`ECHO_CHARS`] characters, with an ellipsis when cut.
fn cut(text: &str) -> String {
    match text.char_indices().nth(ECHO_CHARS) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(method: &str, params: Option<Value>) -> ErrorData {
        reject_custom(&CustomRequest::new(method, params))
    }

    #[test]
    fn a_known_method_with_bad_params_is_invalid_params_naming_the_problem() {
        let bad_level = answer("logging/setLevel", Some(json!({"level": "nonsense"})));
        assert_eq!(bad_level.code, ErrorCode::INVALID_PARAMS);
        assert!(
            bad_level.message.contains("nonsense"),
            "{}",
            bad_level.message
        );
        let missing = answer("logging/setLevel", None);
        assert_eq!(missing.code, ErrorCode::INVALID_PARAMS);
        assert!(missing.message.contains("params"), "{}", missing.message);
        let uri = answer("resources/read", Some(json!({"uri": 5})));
        assert_eq!(uri.code, ErrorCode::INVALID_PARAMS);
        assert!(uri.message.contains("invalid type"), "{}", uri.message);
        let init = answer("initialize", Some(json!({"protocolVersion": "2025-06-18"})));
        assert_eq!(init.code, ErrorCode::INVALID_PARAMS);
        assert!(init.message.contains("missing field"), "{}", init.message);
    }

    #[test]
    fn an_unknown_method_is_method_not_found_with_a_cut_name() {
        let unknown = answer(&"x".repeat(100_000), None);
        assert_eq!(unknown.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(unknown.message.len() < 400, "{}", unknown.message.len());
    }
}
