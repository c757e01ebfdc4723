//! A `tools/call` of the 2026-07-28 revision (no session, its lifecycle in its own
//! `_meta`), checked the way rmcp's `StreamableHttpService` checks it, so that the calls
//! that pass every check can be served past rmcp (`direct.rs`, issue 32) and every other
//! one is left to rmcp, which answers it as it always did.
//!
//! What rmcp checks of such a request, in its order, and how it is held here:
//! - `MCP-Protocol-Version`: present once, a revision the server serves (else `-32022`),
//!   and the same as the `_meta`'s `io.modelcontextprotocol/protocolVersion` (else
//!   `-32020`), or 400;
//! - `_meta` has every key 2026-07-28 requires (else `-32602`, 400);
//! - SEP-2243: `Mcp-Method` once and equal to the body's method, `Mcp-Name` once and equal
//!   to the tool's name (Base64-wrapped values are rmcp's to decode), and the
//!   `Mcp-Param-*` headers of a tool whose schema promotes arguments to headers
//!   (`x-mcp-header`): those tools stay on rmcp;
//! - the handler's own checks: the revision is served, and a task is returned only to a
//!   client that declared the tasks extension.
//!
//! Only a request that passes all of them goes direct; the answer is shaped as rmcp's
//! dispatch shapes it for this revision ([`current_answer`]).

use std::collections::HashSet;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use rmcp::{
    model::{
        CallToolResponse, ErrorCode, ErrorData, JsonObject, JsonRpcMessage, ProtocolVersion,
        RequestId, RequestMetaObject, ServerJsonRpcMessage,
    },
    transport::common::http_header::{
        BASE64_HEADER_PREFIX, HEADER_MCP_METHOD, HEADER_MCP_NAME, HEADER_MCP_PROTOCOL_VERSION,
    },
};
use serde_json::Value;

use crate::transport::call_answer::current_result;

/// What decides whether a 2026-07-28 call may go direct: the revisions served and the
/// tools whose headers only rmcp checks.
pub(super) struct CurrentRevision {
    /// The revisions from 2026-07-28 on that the server serves.
    versions: Vec<ProtocolVersion>,
    /// Tools whose input schema promotes an argument to an `Mcp-Param-*` header.
    param_header_tools: HashSet<String>,
}

impl CurrentRevision {
    /// From the revisions the server serves and its tools.
    pub(super) fn new(supported: &[ProtocolVersion], tools: &[rmcp::model::Tool]) -> Self {
        Self {
            versions: supported
                .iter()
                .filter(|version| **version >= ProtocolVersion::V_2026_07_28)
                .cloned()
                .collect(),
            param_header_tools: tools
                .iter()
                .filter(|tool| promotes_to_headers(&tool.input_schema))
                .map(|tool| tool.name.to_string())
                .collect(),
        }
    }

    /// The revision a request's `MCP-Protocol-Version` names, when it names one from
    /// 2026-07-28 on that the server serves, and names it once.
    pub(super) fn version(&self, headers: &HeaderMap) -> Option<&ProtocolVersion> {
        let named = single(headers, HEADER_MCP_PROTOCOL_VERSION)?;
        self.versions
            .iter()
            .find(|version| version.as_str().as_bytes() == named.as_bytes())
    }

    /// Whether a call of `name` under `version`, with these headers and `_meta`, passes
    /// every check rmcp makes, and sends the client nothing before its answer (no log
    /// level: its log messages ride rmcp's SSE stream).
    pub(super) fn admits(
        &self,
        headers: &HeaderMap,
        version: &ProtocolVersion,
        name: &str,
        meta: &RequestMetaObject,
    ) -> bool {
        meta.protocol_version().as_ref() == Some(version)
            && meta.missing_required_keys(version).is_empty()
            && meta.log_level().is_none()
            && single(headers, HEADER_MCP_METHOD)
                .is_some_and(|method| method.as_bytes() == b"tools/call")
            && single(headers, HEADER_MCP_NAME)
                .and_then(|named| named.to_str().ok())
                .is_some_and(|named| !named.starts_with(BASE64_HEADER_PREFIX) && named == name)
            && !self.param_header_tools.contains(name)
    }
}

/// The value of a header sent exactly once (rmcp refuses a repeated one).
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a HeaderValue> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    values.next().is_none().then_some(value)
}

/// Whether a schema carries an `x-mcp-header` annotation anywhere (rmcp looks for it
/// along `properties`; anywhere is the safe side: such a tool stays on rmcp).
fn promotes_to_headers(schema: &JsonObject) -> bool {
    fn within(value: &Value) -> bool {
        match value {
            Value::Object(object) => promotes_to_headers(object),
            Value::Array(items) => items.iter().any(within),
            _ => false,
        }
    }
    schema
        .iter()
        .any(|(key, value)| key == "x-mcp-header" || within(value))
}

/// The answer to a 2026-07-28 call and its HTTP status, as rmcp's dispatch shapes it for
/// that revision (`transport/call_answer.rs`: `resultType` kept, a task refused to a client
/// that did not declare the tasks extension, `-32002` read as `-32602`), and a 400 or 404
/// for the errors the revision maps to them.
pub(super) fn current_answer(
    answer: Result<CallToolResponse, ErrorData>,
    declared_tasks: bool,
    id: RequestId,
) -> (StatusCode, ServerJsonRpcMessage) {
    match current_result(answer, declared_tasks) {
        Ok(result) => (StatusCode::OK, JsonRpcMessage::response(result, id)),
        Err(error) => (
            status_of(error.code),
            JsonRpcMessage::error(error, Some(id)),
        ),
    }
}

/// The HTTP status rmcp gives a 2026-07-28 error whose request's `_meta` was whole.
fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::ClientCapabilities;
    use serde_json::json;

    use super::*;

    fn tool(name: &'static str, schema: Value) -> rmcp::model::Tool {
        let Value::Object(schema) = schema else {
            panic!("a schema is an object");
        };
        rmcp::model::Tool::new(name, "", std::sync::Arc::new(schema))
    }

    fn revision() -> CurrentRevision {
        CurrentRevision::new(
            ProtocolVersion::KNOWN_VERSIONS,
            &[
                tool("echo", json!({"type": "object"})),
                tool(
                    "routed",
                    json!({"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}),
                ),
            ],
        )
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    fn meta(value: Value) -> RequestMetaObject {
        let Value::Object(object) = value else {
            panic!("meta is an object");
        };
        RequestMetaObject::from(object)
    }

    fn whole_meta() -> RequestMetaObject {
        meta(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))
    }

    const GOOD: [(&str, &str); 3] = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "echo"),
    ];

    #[test]
    fn only_a_served_revision_from_2026_07_28_named_once_is_current() {
        let revision = revision();
        assert_eq!(
            revision.version(&headers(&GOOD)),
            Some(&ProtocolVersion::V_2026_07_28)
        );
        for named in [
            headers(&[]),
            headers(&[("mcp-protocol-version", "2025-11-25")]),
            headers(&[("mcp-protocol-version", "2099-01-01")]),
            headers(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-protocol-version", "2026-07-28"),
            ]),
        ] {
            assert_eq!(revision.version(&named), None, "{named:?}");
        }
    }

    #[test]
    fn a_call_goes_direct_only_when_every_check_of_rmcp_passes() {
        let revision = revision();
        let version = ProtocolVersion::V_2026_07_28;
        assert!(revision.admits(&headers(&GOOD), &version, "echo", &whole_meta()));

        let refused = |headers: HeaderMap, name: &str, meta: RequestMetaObject, why: &str| {
            assert!(!revision.admits(&headers, &version, name, &meta), "{why}");
        };
        refused(headers(&GOOD[..2]), "echo", whole_meta(), "no Mcp-Name");
        refused(
            headers(&[GOOD[0], GOOD[2]]),
            "echo",
            whole_meta(),
            "no Mcp-Method",
        );
        refused(
            headers(&[GOOD[0], ("mcp-method", "tools/list"), GOOD[2]]),
            "echo",
            whole_meta(),
            "another method named",
        );
        refused(
            headers(&[GOOD[0], GOOD[1], ("mcp-name", "other")]),
            "echo",
            whole_meta(),
            "another name",
        );
        refused(
            headers(&[GOOD[0], GOOD[1], ("mcp-name", "=?base64?ZWNobw==?=")]),
            "echo",
            whole_meta(),
            "a Base64 name is rmcp's to decode",
        );
        refused(
            headers(&[GOOD[0], GOOD[1], GOOD[2], ("mcp-name", "echo")]),
            "echo",
            whole_meta(),
            "a repeated Mcp-Name",
        );
        refused(
            headers(&[GOOD[0], GOOD[1], ("mcp-name", "routed")]),
            "routed",
            whole_meta(),
            "a tool with Mcp-Param headers",
        );
        refused(
            headers(&GOOD),
            "echo",
            meta(json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})),
            "_meta without the client's capabilities",
        );
        refused(
            headers(&GOOD),
            "echo",
            meta(json!({
                "io.modelcontextprotocol/protocolVersion": "2025-11-25",
                "io.modelcontextprotocol/clientCapabilities": {},
            })),
            "_meta names another revision than the header",
        );
        refused(
            headers(&GOOD),
            "echo",
            meta(json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "debug",
            })),
            "log messages ride rmcp's stream",
        );
    }

    #[test]
    fn answers_are_shaped_for_the_revision() {
        let id = RequestId::Number(7);
        let (status, message) = current_answer(
            Err(ErrorData::resource_not_found("gone", None)),
            false,
            id.clone(),
        );
        assert_eq!(status, StatusCode::OK);
        let text = serde_json::to_value(&message).expect("serializes");
        assert_eq!(text["error"]["code"], json!(-32602));

        let (status, _) = current_answer(
            Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::default(),
            )),
            false,
            id.clone(),
        );
        assert_eq!(status, StatusCode::BAD_REQUEST);

        let done =
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text("hi")]);
        let (status, message) = current_answer(Ok(CallToolResponse::from(done)), false, id);
        assert_eq!(status, StatusCode::OK);
        let text = serde_json::to_value(&message).expect("serializes");
        assert_eq!(text["result"]["resultType"], json!("complete"));
    }
}
