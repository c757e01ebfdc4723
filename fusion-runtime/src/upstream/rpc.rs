//! The JSON-RPC messages of a gateway's side: the requests it sends an upstream, and what
//! it makes of each message the upstream sends back.

use serde::Deserialize;
use serde_json::{Value, json};

use super::link_error::LinkError;

/// The revision asked for in `initialize`; the upstream answers with the one it serves.
pub(super) const PROTOCOL_VERSION: &str = "2025-11-25";

/// `initialize`'s parameters: no capabilities, so that an upstream has no reason to ask
/// this server for sampling, elicitation or roots.
pub(super) fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "fusion-gateway", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// A request, as one line of JSON.
pub(super) fn request(id: u64, method: &str, params: &Value) -> Vec<u8> {
    /// Borrowed, so that the arguments are not copied once more on their way out.
    #[derive(serde::Serialize)]
    struct Request<'a> {
        jsonrpc: &'static str,
        id: u64,
        method: &'a str,
        params: &'a Value,
    }
    let request = Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    };
    // Strings, numbers and a `Value` always serialize.
    serde_json::to_vec(&request).unwrap_or_default()
}

/// The request that asks whether the other side is there, both ways.
pub(super) const PING: &str = "ping";

/// What an upstream sends when the tools it lists changed.
pub(super) const TOOLS_CHANGED: &str = "notifications/tools/list_changed";

/// A notification, as one line of JSON.
pub(super) fn notification(method: &str, params: &Value) -> Vec<u8> {
    to_bytes(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// The answer to a request the upstream sent this gateway: `ping` is answered, anything
/// else (sampling, elicitation, roots: none was declared) refused.
pub(super) fn answer_to(id: &Value, method: &str) -> Vec<u8> {
    if method == PING {
        return to_bytes(&json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    }
    to_bytes(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": -32601,
            "message": format!("this gateway does not answer `{}`: it declared no client capabilities", crate::limits::name(method)),
        },
    }))
}

fn to_bytes(message: &Value) -> Vec<u8> {
    // A `Value` of strings and numbers always serializes.
    serde_json::to_vec(message).unwrap_or_default()
}

/// One message from the upstream.
pub(super) enum Incoming {
    /// The answer to the request numbered `id`.
    Answer {
        id: u64,
        outcome: Result<Value, LinkError>,
    },
    /// A request to this gateway.
    Request { id: Value, method: String },
    /// Progress on the request whose `_meta.progressToken` was `token`.
    Progress { token: String, progress: Progress },
    /// Another notification.
    Notification { method: String },
    /// Not a JSON-RPC message, or an answer to an id this gateway never sent.
    Unreadable(String),
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<ErrorBody>,
    /// Kept as text: only a progress notification's are read (a flood of other
    /// notifications costs no tree each).
    #[serde(default)]
    params: Option<Box<serde_json::value::RawValue>>,
}

/// What a gateway reads of a notification's params: a progress notification's.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams {
    #[serde(default)]
    progress_token: Option<Value>,
    #[serde(default)]
    progress: Option<f64>,
    #[serde(default)]
    total: Option<f64>,
    #[serde(default)]
    message: Option<String>,
}

/// Where the upstream's progress on one request goes: the token the request carries in
/// `_meta.progressToken`, and a bounded queue to the call (full: a notification is
/// dropped, as the caller would lose one on a slow link anyway).
pub(crate) struct ProgressRoute {
    pub(crate) token: String,
    pub(crate) sender: tokio::sync::mpsc::Sender<Progress>,
}

/// One progress notification of the upstream's, to pass on to the caller.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Progress {
    pub(crate) done: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    code: i64,
    #[serde(default)]
    message: String,
}

/// Reads one message.
pub(super) fn read(bytes: &[u8]) -> Incoming {
    let message: Message = match serde_json::from_slice(bytes) {
        Ok(message) => message,
        Err(error) => return Incoming::Unreadable(format!("not a JSON-RPC message: {error}")),
    };
    match (message.method, message.id) {
        (Some(method), Some(id)) => Incoming::Request { id, method },
        (Some(method), None) => {
            let progress = (method == "notifications/progress")
                .then_some(message.params)
                .flatten()
                .and_then(|params| serde_json::from_str::<ProgressParams>(params.get()).ok());
            match progress {
                Some(ProgressParams {
                    progress_token: Some(Value::String(token)),
                    progress: Some(done),
                    total,
                    message,
                }) => Incoming::Progress {
                    token,
                    progress: Progress {
                        done,
                        total,
                        message,
                    },
                },
                _ => Incoming::Notification { method },
            }
        }
        (None, Some(Value::Number(id))) => {
            let Some(id) = id.as_u64() else {
                return Incoming::Unreadable(format!("an answer to id {id}, never sent"));
            };
            let outcome = match (message.result, message.error) {
                (_, Some(error)) => Err(LinkError::Rpc {
                    code: error.code,
                    message: error.message,
                }),
                (Some(result), None) => Ok(result),
                (None, None) => Err(LinkError::Garbage(
                    "an answer with neither a result nor an error".to_owned(),
                )),
            };
            Incoming::Answer { id, outcome }
        }
        (None, id) => Incoming::Unreadable(format!(
            "a message without a method, and no id of this gateway's ({id:?})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_message_is_told_apart() {
        assert!(matches!(
            read(br#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#),
            Incoming::Answer {
                id: 7,
                outcome: Ok(_)
            }
        ));
        assert!(matches!(
            read(br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32602,"message":"bad"}}"#),
            Incoming::Answer {
                id: 8,
                outcome: Err(LinkError::Rpc { code: -32602, .. })
            }
        ));
        assert!(matches!(
            read(br#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage"}"#),
            Incoming::Request { method, .. } if method == "sampling/createMessage"
        ));
        assert!(matches!(
            read(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#),
            Incoming::Notification { method } if method == "notifications/tools/list_changed"
        ));
        assert!(matches!(read(b"garbage"), Incoming::Unreadable(_)));
        assert!(matches!(
            read(br#"{"jsonrpc":"2.0","id":-1,"result":{}}"#),
            Incoming::Unreadable(_)
        ));
    }

    #[test]
    fn a_request_for_sampling_is_refused_and_a_ping_answered() {
        let refused: Value =
            serde_json::from_slice(&answer_to(&json!("s1"), "sampling/createMessage"))
                .expect("JSON");
        assert_eq!(refused["error"]["code"], -32601);
        assert_eq!(refused["id"], "s1");
        let pong: Value = serde_json::from_slice(&answer_to(&json!(3), "ping")).expect("JSON");
        assert_eq!(pong["result"], json!({}));
    }
}
