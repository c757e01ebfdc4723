//! One line of stdio input → the message rmcp handles, or the error answer the transport
//! writes itself.
//!
//! rmcp silently drops what it cannot parse (malformed JSON, stray bytes, input nested past
//! serde_json's recursion limit) and answers a `tools/call` whose params do not fit with a
//! misleading `-32601`. Here every line that could be a request gets exactly one answer:
//! `-32700` when it is not JSON, `-32600` when it is JSON but not a JSON-RPC request,
//! `-32602` when a known method's params do not fit, each with the request's id when one
//! can be read (JSON-RPC 2.0 §5.1: `null` otherwise).
//!
//! `tools/call` — nearly all the traffic — is decoded straight into
//! `ClientRequest::CallToolRequest`. rmcp's own message type is an untagged enum of
//! untagged enums: serde buffers the whole message and tries the variants one by one, which
//! measured 37% of the server's CPU in a profile. The fast path reads the envelope once
//! (the params as a borrowed raw slice) and the params once, and builds exactly what the
//! general parse would (`_meta` in the request's extensions, as rmcp's own deserializer
//! puts it); a unit test holds the two to the same result.

use std::{borrow::Cow, fmt};

use rmcp::{
    RoleServer,
    model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, ErrorCode, ErrorData,
        InputResponses, JsonObject, JsonRpcMessage, RequestId, RequestMetaObject,
    },
    service::RxJsonRpcMessage,
};
use serde::{
    Deserialize, Deserializer, Serialize,
    de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor},
};
use serde_json::value::RawValue;

use crate::validate::{NumberLiterals, literal};

/// A message from the client, as rmcp's server side reads it.
pub(crate) type ClientMessage = RxJsonRpcMessage<RoleServer>;

/// What one line of input turned out to be.
#[derive(Debug)]
pub(crate) enum Decoded {
    /// A message for rmcp.
    Message(Box<ClientMessage>),
    /// Not a message rmcp can take: the transport answers it with this error.
    Reply(ErrorReply),
    /// Nothing to do: a blank line, or something JSON-RPC forbids answering (a
    /// notification or a response that does not parse). The text says what, for the log.
    Ignore(&'static str),
}

/// A JSON-RPC error answer written by the transport itself, for a message rmcp never saw.
///
/// rmcp's own error type omits `id` when it is unknown; JSON-RPC 2.0 (§5) wants `"id": null`,
/// and clients built on it (the Python SDK among them) look for the member.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ErrorReply {
    /// The request's id, when it could be read.
    pub(crate) id: Option<RequestId>,
    /// Code, message and optional data.
    pub(crate) error: ErrorData,
}

impl ErrorReply {
    fn new(id: Option<RequestId>, code: ErrorCode, message: String) -> Self {
        Self {
            id,
            error: ErrorData::new(code, message, None),
        }
    }
}

impl Serialize for ErrorReply {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut reply = serializer.serialize_struct("ErrorReply", 3)?;
        reply.serialize_field("jsonrpc", "2.0")?;
        reply.serialize_field("id", &self.id)?;
        reply.serialize_field("error", &self.error)?;
        reply.end()
    }
}

/// The answer to an id rmcp cannot hold: JSON-RPC ids are strings or integers, and MCP's
/// integers are 64-bit signed.
const BAD_ID: &str = "Invalid request: `id` must be a string or an integer from -9223372036854775808 to 9223372036854775807.";

/// The UTF-8 byte order mark. RFC 8259 §8.1 lets a parser ignore it, and rmcp does; some
/// Windows tools put one before the first line.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Decodes one line (without its `\n`).
pub(crate) fn decode_line(line: &[u8]) -> Decoded {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Ignore("blank line");
    }
    // JSON text is UTF-8 (RFC 8259 §8.1). serde skips unknown members unchecked, so without
    // this a line with other bytes there was taken as a message (the fuzz target
    // `stdio_line` found it). A few nanoseconds on a call's line.
    if let Err(error) = std::str::from_utf8(line) {
        return Decoded::Reply(ErrorReply::new(
            None,
            ErrorCode::PARSE_ERROR,
            format!(
                "Parse error: the line is not UTF-8 (an invalid byte at {}). Send one JSON-RPC message per line, as UTF-8 JSON.",
                error.valid_up_to()
            ),
        ));
    }
    if let Some(call) = decode_tool_call_in_one_pass(line) {
        return call;
    }
    decode_by_envelope(line)
}

/// Any message: its envelope first, then `tools/call`'s params or rmcp's general parse.
pub(crate) fn decode_by_envelope(line: &[u8]) -> Decoded {
    let envelope = match serde_json::from_slice::<Envelope<'_>>(line) {
        Ok(envelope) => envelope,
        Err(error) => return Decoded::Reply(envelope_error(line, &error)),
    };
    if envelope.is_tool_call() {
        return decode_tool_call(&envelope);
    }
    match serde_json::from_slice::<ClientMessage>(line) {
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(error) => explain_rejection(&envelope, &error),
    }
}

/// A line that is not even a JSON object with readable members.
fn envelope_error(line: &[u8], error: &serde_json::Error) -> ErrorReply {
    use serde_json::error::Category;
    match error.classify() {
        Category::Syntax | Category::Eof | Category::Io => ErrorReply::new(
            None,
            ErrorCode::PARSE_ERROR,
            format!(
                "Parse error: the line is not valid JSON ({} at byte {}). Send one JSON-RPC message per line, as UTF-8 JSON.",
                describe(error),
                error.column()
            ),
        ),
        // Valid JSON of the wrong shape: an array, a scalar, or an object with a member
        // given twice.
        Category::Data if line.trim_ascii_start().starts_with(b"[") => ErrorReply::new(
            None,
            ErrorCode::INVALID_REQUEST,
            "Invalid request: batches (JSON arrays) are not part of MCP; send one JSON-RPC message, a JSON object, per line.".to_owned(),
        ),
        Category::Data => ErrorReply::new(
            find_id(line),
            ErrorCode::INVALID_REQUEST,
            format!(
                "Invalid request: a JSON-RPC message is one JSON object with unique members ({}).",
                describe(error)
            ),
        ),
    }
}

/// Why rmcp's own parse rejected a JSON object, said as precisely as the envelope allows.
fn explain_rejection(envelope: &Envelope<'_>, error: &serde_json::Error) -> Decoded {
    if envelope.has_result || envelope.has_error {
        // A response (to a request the server sent) that does not parse: JSON-RPC never
        // answers a response.
        return Decoded::Ignore("unreadable response from the client");
    }
    let id = match envelope.id.map(read_id) {
        None => None,
        Some(Ok(id)) => Some(id),
        Some(Err(())) => {
            return Decoded::Reply(ErrorReply::new(
                None,
                ErrorCode::INVALID_REQUEST,
                BAD_ID.to_owned(),
            ));
        }
    };
    let invalid = |message: &str| {
        Decoded::Reply(ErrorReply::new(
            id.clone(),
            ErrorCode::INVALID_REQUEST,
            format!("Invalid request: {message}"),
        ))
    };
    if envelope.jsonrpc.is_none() && envelope.method.is_none() {
        return invalid("not a JSON-RPC message (it has neither `jsonrpc` nor `method`).");
    }
    if envelope.jsonrpc.map(RawValue::get) != Some("\"2.0\"") {
        return invalid("`jsonrpc` must be \"2.0\".");
    }
    let Some(method) = envelope.method else {
        return invalid("a JSON-RPC request needs a `method`.");
    };
    let Ok(method) = serde_json::from_str::<Cow<'_, str>>(method.get()) else {
        return invalid("`method` must be a string.");
    };
    if id.is_none() {
        // A notification: JSON-RPC forbids answering it, whatever is wrong with it.
        return Decoded::Ignore("notification whose params do not fit");
    }
    Decoded::Reply(ErrorReply::new(
        id,
        ErrorCode::INVALID_PARAMS,
        format!("Invalid params for `{method}`: {}.", describe(error)),
    ))
}

/// The fast path: a `tools/call` request, decoded without rmcp's untagged-enum parse.
fn decode_tool_call(envelope: &Envelope<'_>) -> Decoded {
    let Some(Ok(id)) = envelope.id.map(read_id) else {
        return Decoded::Reply(ErrorReply::new(
            None,
            ErrorCode::INVALID_REQUEST,
            BAD_ID.to_owned(),
        ));
    };
    let invalid_params = |id: RequestId, problem: String| {
        Decoded::Reply(ErrorReply::new(
            Some(id),
            ErrorCode::INVALID_PARAMS,
            format!(
                "Invalid params for `tools/call`: {problem}. Expected {{\"name\": \"<tool>\", \"arguments\": {{...}}}}."
            ),
        ))
    };
    let Some(params_text) = envelope.params else {
        return invalid_params(id, "`params` is missing".to_owned());
    };
    let params = match serde_json::from_str::<ToolCallParams>(params_text.get()) {
        Ok(params) => params,
        Err(error) => return invalid_params(id, describe(&error)),
    };
    let literals = number_literals(params_text.get(), params.arguments.as_ref());
    tool_call_message(id, params, literals)
}

/// The common case, read in one pass: a `tools/call` whose `method` comes before its
/// `params` (the order clients write), the params decoded as they are read instead of
/// skipped and read again. `None` for anything else and for whatever the general way
/// might answer otherwise (any error, an id that does not fit, a float in the arguments
/// whose literal must be recorded): `decode_line` then takes the envelope first, which
/// answers it. A unit test holds both ways to the same messages.
pub(crate) fn decode_tool_call_in_one_pass(line: &[u8]) -> Option<Decoded> {
    // The one pass skips unknown members unchecked (serde's `IgnoredAny` reads past lone
    // surrogate escapes), where the general way refuses the line: such lines go the
    // general way (the fuzz target `stdio_line` found one). `decode_line` checked UTF-8.
    if has_surrogate_escape(line) {
        return None;
    }
    let call = serde_json::from_slice::<OnePass<'_>>(line).ok()?;
    let arguments = call.params.arguments.as_ref();
    if arguments.is_some_and(|arguments| arguments.values().any(literal::has_float)) {
        return None;
    }
    let id = read_id(call.id).ok()?;
    Some(tool_call_message(
        id,
        call.params,
        NumberLiterals::default(),
    ))
}

/// The message of a decoded `tools/call`, `_meta` in the request's extensions as rmcp's
/// own deserializer puts it, and beside it the arguments' number `literals` when there are
/// any (`NumberLiterals::of` reads them there).
fn tool_call_message(id: RequestId, params: ToolCallParams, literals: NumberLiterals) -> Decoded {
    let meta = params.meta;
    let mut call = CallToolRequestParams::new(params.name);
    call.arguments = params.arguments;
    call.input_responses = params.input_responses;
    call.request_state = params.request_state;
    let mut request = CallToolRequest::new(call);
    if let Some(meta) = meta {
        request.extensions.insert(RequestMetaObject::from(meta));
    }
    if !literals.is_empty() {
        request.extensions.insert(literals);
    }
    Decoded::Message(Box::new(JsonRpcMessage::request(
        ClientRequest::CallToolRequest(request),
        id,
    )))
}

/// The literals of the numbers in `arguments` that a JSON value cannot hold exactly (see
/// [`literal`]): only looked for when the parsed arguments hold a float, by reading the
/// arguments' text from `params` once more.
fn number_literals(params: &str, arguments: Option<&JsonObject>) -> NumberLiterals {
    /// The arguments' text, as sent.
    #[derive(Deserialize)]
    struct RawArguments<'a> {
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
    }
    if !arguments.is_some_and(|arguments| arguments.values().any(literal::has_float)) {
        return NumberLiterals::default();
    }
    match serde_json::from_str::<RawArguments<'_>>(params) {
        Ok(RawArguments {
            arguments: Some(raw),
        }) => literal::scan(raw.get()),
        _ => NumberLiterals::default(),
    }
}

/// `tools/call` params as rmcp reads them: `_meta` apart (it goes to the extensions), the
/// rest into `CallToolRequestParams`, unknown members ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCallParams {
    #[serde(rename = "_meta", default)]
    meta: Option<JsonObject>,
    name: Cow<'static, str>,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default)]
    input_responses: Option<InputResponses>,
    #[serde(default)]
    request_state: Option<String>,
}

fn read_id(raw: &RawValue) -> Result<RequestId, ()> {
    serde_json::from_str(raw.get()).map_err(|_| ())
}

/// Whether `line` holds a `\uD800`-`\uDFFF` escape (half of a surrogate pair, or a lone
/// one). Rare in practice; such a line is read the general way.
fn has_surrogate_escape(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b"\\u").any(|at| {
        matches!(line.get(at + 2), Some(b'd' | b'D'))
            && matches!(
                line.get(at + 3),
                Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
            )
    })
}

/// A `tools/call` request read in one pass (see [`decode_tool_call_in_one_pass`]); any
/// other message is an error here.
struct OnePass<'a> {
    id: &'a RawValue,
    params: ToolCallParams,
}

impl<'de> Deserialize<'de> for OnePass<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OnePassVisitor;
        impl<'de> Visitor<'de> for OnePassVisitor {
            type Value = OnePass<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tools/call request")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OnePass<'de>, A::Error> {
                use serde::de::Error as _;
                let not_this_way = || A::Error::custom("not a tools/call read in one pass");
                let (mut jsonrpc, mut method) = (false, false);
                let (mut id, mut params) = (None, None);
                while let Some(member) = map.next_key::<Member>()? {
                    match member {
                        Member::Jsonrpc if !jsonrpc => {
                            let value: &RawValue = map.next_value()?;
                            jsonrpc = value.get() == "\"2.0\"";
                            if !jsonrpc {
                                return Err(not_this_way());
                            }
                        }
                        Member::Id if id.is_none() => id = Some(map.next_value()?),
                        Member::Method if !method => {
                            let value: &RawValue = map.next_value()?;
                            method = value.get() == "\"tools/call\"";
                            if !method {
                                return Err(not_this_way());
                            }
                        }
                        Member::Params if method && params.is_none() => {
                            params = Some(map.next_value::<ToolCallParams>()?);
                        }
                        Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                        // A member twice, `params` before `method`, a result or an error.
                        _ => return Err(not_this_way()),
                    }
                }
                match (jsonrpc, id, params) {
                    (true, Some(id), Some(params)) => Ok(OnePass { id, params }),
                    _ => Err(not_this_way()),
                }
            }
        }
        deserializer.deserialize_map(OnePassVisitor)
    }
}

/// serde_json's message without its " at line 1 column N" (the line is one message; the
/// column inside a sub-slice would mislead), and with the recursion limit explained.
fn describe(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let text = match text.rsplit_once(" at line ") {
        Some((message, _)) => message.to_owned(),
        None => text,
    };
    if text.contains("recursion limit exceeded") {
        "nested deeper than 128 levels (serde_json's recursion limit)".to_owned()
    } else {
        text
    }
}

/// The top-level members of a message, read in one pass without decoding the values:
/// enough to route `tools/call` to the fast path and to explain what is wrong otherwise.
#[derive(Default)]
struct Envelope<'a> {
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<&'a RawValue>,
    params: Option<&'a RawValue>,
    has_result: bool,
    has_error: bool,
}

impl Envelope<'_> {
    fn is_tool_call(&self) -> bool {
        // An escaped spelling of either string falls back to the general parse, which
        // handles it; exact bytes are what clients send.
        self.method.map(RawValue::get) == Some("\"tools/call\"")
            && self.jsonrpc.map(RawValue::get) == Some("\"2.0\"")
            && self.id.is_some()
            && !self.has_result
            && !self.has_error
    }
}

/// A top-level member's name, matched without allocating.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor;
        impl Visitor<'_> for MemberVisitor {
            type Value = Member;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Member, E> {
                Ok(match name {
                    "jsonrpc" => Member::Jsonrpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }
        deserializer.deserialize_identifier(MemberVisitor)
    }
}

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EnvelopeVisitor;
        impl<'de> Visitor<'de> for EnvelopeVisitor {
            type Value = Envelope<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC message (a JSON object)")
            }
            // Only `visit_map`: a derived struct would also accept an array, positionally.
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<'de>, A::Error> {
                fn set<'de, E: serde::de::Error>(
                    slot: &mut Option<&'de RawValue>,
                    value: &'de RawValue,
                    name: &'static str,
                ) -> Result<(), E> {
                    if slot.replace(value).is_some() {
                        return Err(E::duplicate_field(name));
                    }
                    Ok(())
                }
                let mut envelope = Envelope::default();
                while let Some(member) = map.next_key::<Member>()? {
                    match member {
                        Member::Jsonrpc => {
                            set(&mut envelope.jsonrpc, map.next_value()?, "jsonrpc")?
                        }
                        Member::Id => set(&mut envelope.id, map.next_value()?, "id")?,
                        Member::Method => set(&mut envelope.method, map.next_value()?, "method")?,
                        Member::Params => set(&mut envelope.params, map.next_value()?, "params")?,
                        Member::Result => {
                            map.next_value::<IgnoredAny>()?;
                            envelope.has_result = true;
                        }
                        Member::Error => {
                            map.next_value::<IgnoredAny>()?;
                            envelope.has_error = true;
                        }
                        Member::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(envelope)
            }
        }
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

/// The `id` of a message that cannot be decoded as a whole (too long, or malformed after
/// its id), read from its start: members are skipped until `id`, which is read if it is a
/// string or an integer. Skipping is iterative in serde_json, so deep nesting before the
/// id cannot exhaust the stack.
pub(crate) fn find_id(bytes: &[u8]) -> Option<RequestId> {
    struct Finder<'s>(&'s mut Option<RequestId>);
    impl<'de> DeserializeSeed<'de> for Finder<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Finder<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(member) = map.next_key::<Member>()? {
                if let Member::Id = member {
                    *self.0 = map.next_value::<RequestId>().ok();
                    // Stop here: the rest may be truncated or malformed.
                    return Err(serde::de::Error::custom("id found"));
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    // The error is expected (found, or the prefix ends mid-value); only `found` matters.
    let _ = Finder(&mut found).deserialize(&mut deserializer);
    found
}

/// What a decoded line says, as JSON, for comparing two ways of decoding it (the unit
/// tests, and the fuzz target that checks the one-pass read against the general one).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn said(decoded: &Decoded) -> serde_json::Value {
    use serde_json::json;
    match decoded {
        Decoded::Message(message) => {
            let meta = match &**message {
                JsonRpcMessage::Request(request) => match &request.request {
                    ClientRequest::CallToolRequest(call) => call
                        .extensions
                        .get::<RequestMetaObject>()
                        .and_then(|meta| serde_json::to_value(meta).ok()),
                    _ => None,
                },
                _ => None,
            };
            json!({"message": serde_json::to_value(message).ok(), "meta": meta})
        }
        Decoded::Reply(reply) => json!({"reply": serde_json::to_value(reply).ok()}),
        Decoded::Ignore(what) => json!({"ignored": what}),
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorCode, JsonRpcMessage, NumberOrString, ProtocolVersion};
    use serde_json::{Value, json};

    use super::*;
    use crate::transport::stdio::message::{cancelled_request, ends_handshake};

    /// rmcp stays in its handshake on a `ping`, a `server/discover` and a request whose
    /// 2026-07-28 `_meta` is incomplete or names a version the server does not serve; the
    /// transport must agree, or it passes on a notification that ends the service.
    #[test]
    fn the_handshake_ends_where_rmcp_ends_it() {
        let full_meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}
        });
        let ends = |line: Value, supported: &[ProtocolVersion]| {
            let message = match decode_line(line.to_string().as_bytes()) {
                Decoded::Message(message) => message,
                other => panic!("expected a message for {line}, got {other:?}"),
            };
            ends_handshake(&message, supported)
        };
        let all = ProtocolVersion::KNOWN_VERSIONS;
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}}});
        assert!(ends(initialize, all));
        assert!(ends(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": full_meta}}),
            all
        ));
        assert!(!ends(
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": full_meta}}),
            all
        ));
        assert!(!ends(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
            all
        ));
        assert!(!ends(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": full_meta}}),
            &[ProtocolVersion::V_2025_11_25]
        ));
        assert!(!ends(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            all
        ));
        assert!(!ends(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            all
        ));
        assert!(!ends(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            all
        ));
    }

    fn reply(line: &str) -> ErrorReply {
        match decode_line(line.as_bytes()) {
            Decoded::Reply(reply) => reply,
            other => panic!("expected an error reply for {line:?}, got {other:?}"),
        }
    }

    fn message(line: &[u8]) -> ClientMessage {
        match decode_line(line) {
            Decoded::Message(message) => *message,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    fn wire(reply: &ErrorReply) -> Value {
        serde_json::to_value(reply).expect("an error reply serializes")
    }

    #[test]
    fn not_json_is_a_parse_error_with_a_null_id() {
        for line in [
            "this is not json",
            "{\"jsonrpc\":\"2.0\",",
            "\u{0}\u{7f} garbage",
            "{]",
        ] {
            let reply = reply(line);
            assert_eq!(reply.error.code, ErrorCode::PARSE_ERROR, "{line}");
            let wire = wire(&reply);
            assert_eq!(wire["id"], Value::Null, "{line}");
            assert_eq!(wire["jsonrpc"], "2.0");
        }
        // Invalid UTF-8 too.
        let Decoded::Reply(reply) = decode_line(b"\xff\xfe{\"a\":1}") else {
            panic!("stray bytes must be answered");
        };
        assert_eq!(reply.error.code, ErrorCode::PARSE_ERROR);
    }

    #[test]
    fn json_that_is_not_json_rpc_is_an_invalid_request() {
        let cases = [
            (r#"{"hello":"world"}"#, None),
            (r#"[1,2,3]"#, None),
            (r#"42"#, None),
            (r#"{"id":7,"foo":1}"#, Some(NumberOrString::Number(7))),
            (
                r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#,
                Some(NumberOrString::String("a".into())),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":5}"#,
                Some(NumberOrString::Number(3)),
            ),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, None),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":9,"id":10,"method":"ping"}"#,
                Some(NumberOrString::Number(9)),
            ),
        ];
        for (line, id) in cases {
            let reply = reply(line);
            assert_eq!(reply.error.code, ErrorCode::INVALID_REQUEST, "{line}");
            assert_eq!(reply.id, id, "{line}");
        }
    }

    #[test]
    fn tool_call_params_that_do_not_fit_name_the_problem() {
        let reply = reply(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":5}}"#,
        );
        assert_eq!(reply.id, Some(NumberOrString::Number(4)));
        assert_eq!(reply.error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            reply.error.message.contains("invalid type: integer `5`"),
            "{}",
            reply.error.message
        );
        let missing = self::reply(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call"}"#);
        assert_eq!(missing.error.code, ErrorCode::INVALID_PARAMS);
        assert!(missing.error.message.contains("`params` is missing"));
        let nameless = self::reply(r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{}}"#);
        assert!(
            nameless.error.message.contains("missing field `name`"),
            "{}",
            nameless.error.message
        );
    }

    #[test]
    fn deep_nesting_is_answered_with_the_id() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{}{}}}}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let reply = reply(&deep);
        assert_eq!(reply.id, Some(NumberOrString::Number(11)));
        assert_eq!(reply.error.code, ErrorCode::INVALID_PARAMS);
        assert!(
            reply.error.message.contains("nested deeper than 128"),
            "{}",
            reply.error.message
        );
        // Deep nesting in another method goes through the general parse, and is answered too.
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{{"x":{}{}}}}}"#,
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let reply = self::reply(&deep);
        assert_eq!(reply.id, Some(NumberOrString::Number(12)));
        // A bare deep array is not JSON-RPC at all.
        let bare = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(matches!(decode_line(bare.as_bytes()), Decoded::Reply(_)));
    }

    #[test]
    fn blank_lines_are_ignored_and_a_bom_is_skipped() {
        for line in ["", "   ", "\r", "\t \r"] {
            assert!(
                matches!(decode_line(line.as_bytes()), Decoded::Ignore(_)),
                "{line:?}"
            );
        }
        let ping = message(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r");
        assert!(matches!(ping, JsonRpcMessage::Request(_)));
    }

    #[test]
    fn notifications_and_responses_that_do_not_parse_are_not_answered() {
        assert!(matches!(
            decode_line(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":5}"#),
            Decoded::Ignore(_)
        ));
    }

    /// The fast path must build what rmcp's own parse builds, `_meta` included.
    #[test]
    fn the_fast_path_matches_the_general_parse() {
        let lines = [
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","n":1.5,"z":[1,{"a":null}]}}}),
            json!({"jsonrpc":"2.0","id":"s-2","method":"tools/call","params":{"name":"echo"}}),
            json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":null,"_meta":{"progressToken":"p1","x":1}}}),
            json!({"params":{"requestState":"st","inputResponses":{"k":{"v":1}},"name":"n","extra":true},"method":"tools/call","id":4,"jsonrpc":"2.0"}),
        ];
        for line in lines {
            let bytes = serde_json::to_vec(&line).expect("serializes");
            let fast = message(&bytes);
            let general: ClientMessage = serde_json::from_slice(&bytes).expect("rmcp parses it");
            assert_eq!(
                serde_json::to_value(&fast).expect("serializes"),
                serde_json::to_value(&general).expect("serializes"),
                "{line}"
            );
            let (JsonRpcMessage::Request(fast), JsonRpcMessage::Request(general)) = (fast, general)
            else {
                panic!("both are requests");
            };
            assert_eq!(fast.id, general.id);
            let (ClientRequest::CallToolRequest(fast), ClientRequest::CallToolRequest(general)) =
                (fast.request, general.request)
            else {
                panic!("both are tool calls");
            };
            assert_eq!(fast.params, general.params);
            assert_eq!(
                fast.extensions.get::<RequestMetaObject>(),
                general.extensions.get::<RequestMetaObject>()
            );
        }
    }

    #[test]
    fn the_one_pass_read_says_what_the_envelope_first_read_says() {
        let deep = format!("{}1{}", "[".repeat(127), "]".repeat(127));
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"n":[1,2,{"b":null}]},"_meta":{"progressToken":7}},"x":[1]}"#.to_owned(),
            r#"{"id":2,"method":"tools/call","jsonrpc":"2.0","params":{"name":"echo","arguments":null}}"#.to_owned(),
            // Taken the general way: each is answered, or decoded, there.
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"f":1.5}}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":5}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo"},"params":{"name":"x"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":5.5,"method":"tools/call","params":{"name":"echo"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call"}"#.to_owned(),
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#.to_owned(),
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"},"result":{}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"t":"x"}}"#.to_owned(),
            format!(r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"echo","arguments":{{"d":{deep}}}}}}}"#),
        ];
        let mut one_pass = 0;
        for line in &lines {
            let general = decode_by_envelope(line.as_bytes());
            if let Some(fast) = decode_tool_call_in_one_pass(line.as_bytes()) {
                one_pass += 1;
                assert_eq!(said(&fast), said(&general), "{line}");
            }
        }
        assert_eq!(one_pass, 3, "the first three lines are read in one pass");
    }

    fn recorded_literals(line: &str) -> Option<NumberLiterals> {
        let JsonRpcMessage::Request(request) = message(line.as_bytes()) else {
            panic!("a request");
        };
        let ClientRequest::CallToolRequest(call) = request.request else {
            panic!("a tool call");
        };
        call.extensions.get::<NumberLiterals>().cloned()
    }

    /// Numbers a JSON value cannot hold exactly keep their text beside the request; what a
    /// client writes in `_meta` stays the client's, and is not read as literals.
    #[test]
    fn number_literals_are_recorded_and_cannot_be_forged() {
        let recorded = recorded_literals(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":9007199254740993.0,"b":[1,-9223372036854775809],"c":7}}}"#,
        )
        .expect("recorded");
        assert_eq!(
            (recorded.get("/a"), recorded.get("/b/1"), recorded.get("/c")),
            (
                Some("9007199254740993.0"),
                Some("-9223372036854775809"),
                None
            )
        );
        // No float: nothing scanned, nothing recorded.
        assert_eq!(
            recorded_literals(
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#
            ),
            None
        );
        // A client's entry under the old `_meta` key is not a literal.
        assert_eq!(
            recorded_literals(
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","_meta":{"progressToken":"p","fusion/number_literals":{"/a":"1"}},"arguments":{"a":1,"b":2}}}"#
            ),
            None
        );
        let recorded = recorded_literals(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"fusion\/number_literals":{"/a":"1"}},"name":"add","arguments":{"a":2.50}}}"#,
        )
        .expect("recorded");
        assert_eq!(recorded.get("/a"), Some("2.50"));
    }

    #[test]
    fn other_methods_take_the_general_parse() {
        let list = message(br#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
        let JsonRpcMessage::Request(list) = list else {
            panic!("a request");
        };
        assert!(matches!(list.request, ClientRequest::ListToolsRequest(_)));
        let cancel = message(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#,
        );
        assert_eq!(cancelled_request(&cancel), Some(&NumberOrString::Number(5)));
    }

    #[test]
    fn the_id_is_found_at_the_start_of_a_truncated_message() {
        assert_eq!(
            find_id(br#"{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"aaaa"#),
            Some(NumberOrString::Number(17))
        );
        assert_eq!(find_id(br#"{"jsonrpc":"2.0","params":{"text":"aaaa"#), None);
        let deep_first = format!(r#"{{"x":{}"#, "[".repeat(5_000));
        assert_eq!(find_id(deep_first.as_bytes()), None);
    }
}
