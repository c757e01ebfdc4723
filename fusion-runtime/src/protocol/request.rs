//! What fusion reads off a request as rmcp hands it over: its id as text, and who is
//! calling.

use crate::identity::RequestInfo;

/// A request id as the call log and the tool's [`Call`](crate::Call) show it.
pub(crate) fn request_id_text(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(number) => number.to_string(),
        rmcp::model::NumberOrString::String(text) => text.to_string(),
    }
}

/// Who is calling, from what rmcp hands the handler: the HTTP request's parts when served
/// over Streamable HTTP; otherwise (stdio) the process's owner.
pub(crate) fn request_info(extensions: &rmcp::model::Extensions) -> RequestInfo {
    match extensions.get::<http::request::Parts>() {
        Some(parts) => RequestInfo::from_http(parts),
        None => RequestInfo::stdio(),
    }
}
