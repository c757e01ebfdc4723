//! The answer to a `tools/call` a transport serves past rmcp's service loop (stdio's
//! `direct.rs`, HTTP's `direct.rs`), shaped as rmcp's dispatch (`handle_request` of its
//! `ServerHandler`) shapes it for the caller's revision, so that a client cannot tell the
//! two apart. Here, not in either transport, so that both import it without importing
//! each other; what HTTP adds (the status of an error) stays in `http/current.rs`.

use rmcp::{
    RoleServer,
    model::{
        CallToolResponse, ClientCapabilities, ErrorCode, ErrorData, JsonRpcMessage, RequestId,
        ServerResult,
    },
    service::TxJsonRpcMessage,
};

/// The answer to a `tools/call` of a revision before 2026-07-28, shaped as rmcp's dispatch
/// shapes it for such a peer: without `resultType`, and without tool output that is not an
/// object.
pub(crate) fn legacy_answer(
    answer: Result<CallToolResponse, ErrorData>,
    id: RequestId,
) -> TxJsonRpcMessage<RoleServer> {
    match answer {
        Ok(response) => {
            let mut result = ServerResult::from(response);
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            JsonRpcMessage::response(result, id)
        }
        Err(error) => JsonRpcMessage::error(error, Some(id)),
    }
}

/// A call's answer as rmcp's dispatch lets it out whatever the revision: a task only to a
/// client that declared the tasks extension (SEP-2663: a client that did not cannot read a
/// task handle), else the call is refused with the capability it lacks.
pub(crate) fn task_only_if_declared(
    answer: Result<CallToolResponse, ErrorData>,
    declared_tasks: bool,
) -> Result<CallToolResponse, ErrorData> {
    match answer {
        Ok(CallToolResponse::Task(_)) if !declared_tasks => {
            Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            ))
        }
        answer => answer,
    }
}

/// The result of a `tools/call` of the 2026-07-28 revision or a later one, as rmcp's
/// dispatch shapes it for that revision: `resultType` kept (an `input_required` result
/// is allowed), the cache hints of a complete result filled in, a task refused to a client
/// that did not declare the tasks extension (`declared_tasks`), and `-32002` (resource not
/// found) read as `-32602`.
pub(crate) fn current_result(
    answer: Result<CallToolResponse, ErrorData>,
    declared_tasks: bool,
) -> Result<ServerResult, ErrorData> {
    match task_only_if_declared(answer, declared_tasks) {
        Ok(response) => {
            let mut result = ServerResult::from(response);
            result.fill_missing_cache_hints();
            Ok(result)
        }
        Err(mut error) => {
            if error.code == ErrorCode::RESOURCE_NOT_FOUND {
                error.code = ErrorCode::INVALID_PARAMS;
            }
            Err(error)
        }
    }
}

/// [`current_result`] as the JSON-RPC answer to `id`.
pub(crate) fn current_answer(
    answer: Result<CallToolResponse, ErrorData>,
    declared_tasks: bool,
    id: RequestId,
) -> TxJsonRpcMessage<RoleServer> {
    match current_result(answer, declared_tasks) {
        Ok(result) => JsonRpcMessage::response(result, id),
        Err(error) => JsonRpcMessage::error(error, Some(id)),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::*;

    fn text(message: &TxJsonRpcMessage<RoleServer>) -> serde_json::Value {
        serde_json::to_value(message).expect("serializes")
    }

    #[test]
    fn a_current_answer_keeps_its_result_type_and_gets_cache_hints_only_where_rmcp_puts_them() {
        let done = CallToolResult::success(vec![ContentBlock::text("hi")]);
        let current = text(&current_answer(
            Ok(CallToolResponse::from(done.clone())),
            false,
            RequestId::Number(1),
        ));
        assert_eq!(current["result"]["resultType"], json!("complete"));
        let legacy = text(&legacy_answer(
            Ok(CallToolResponse::from(done)),
            RequestId::Number(1),
        ));
        assert_eq!(legacy["result"].get("resultType"), None);
    }

    #[test]
    fn a_current_error_reads_resource_not_found_as_invalid_params() {
        let answer = text(&current_answer(
            Err(ErrorData::resource_not_found("gone", None)),
            false,
            RequestId::Number(2),
        ));
        assert_eq!(answer["error"]["code"], json!(-32602));
        let legacy = text(&legacy_answer(
            Err(ErrorData::resource_not_found("gone", None)),
            RequestId::Number(2),
        ));
        assert_eq!(legacy["error"]["code"], json!(-32002));
    }
}
