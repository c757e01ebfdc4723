//! What the requests that may answer `input_required` share (2026-07-28, SEP-2322):
//! `tools/call` (`call.rs`) and `prompts/get` (`prompt.rs`). A round opens with the answers
//! so far (the signed request state of earlier rounds and this round's `inputResponses`);
//! the handler gets a [`Call`] whose questions go through the round (`rounds/questions.rs`); a
//! question the round cannot answer ends it with the questions and a new sealed state.

use std::{collections::BTreeMap, sync::Arc};

use rmcp::{
    RoleServer,
    model::{ClientCapabilities, ErrorData, InputRequiredResult, InputResponses, ProtocolVersion},
    service::RequestContext,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{
    call::{Call, LogLevel},
    protocol::request::{request_id_text, request_info},
    rounds::questions::{Declared, InputState},
    rounds::state::{self as request_state, Sealer},
    setup::server::Server,
};

/// Whether a request speaks the 2026-07-28 revision or a later one.
pub(crate) fn is_current(context: &RequestContext<RoleServer>) -> bool {
    // As `RequestContext::protocol_version` decides, without copying the session's
    // version (its text is owned: a copy is an allocation, on every call).
    let current =
        |version: &ProtocolVersion| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str();
    match context.meta.protocol_version() {
        Some(version) => current(&version),
        None => context
            .peer
            .peer_info()
            .is_some_and(|info| current(&info.protocol_version)),
    }
}

/// The handler's [`Call`] for a request served to a connected client, cancelled by
/// `cancel`; `current` as [`is_current`] says. The log level is the request's own under 2026-07-28 (no session holds one),
/// the session's before.
pub(crate) fn connected_call<C: Send + Sync + 'static>(
    server: &Server<C>,
    context: &RequestContext<RoleServer>,
    current: bool,
    cancel: CancellationToken,
) -> Call {
    let log_level = if current {
        context.meta.log_level().map(LogLevel::from_rmcp)
    } else {
        server.log_level()
    };
    Call::connected(
        request_id_text(&context.id),
        context.meta.get_progress_token(),
        context.peer.clone(),
        cancel,
        log_level,
        crate::validate::NumberLiterals::of(&context.extensions),
        request_info(&context.extensions),
    )
    .with_trace_context(&context.meta)
    .with_request_key(&context.meta)
}

/// Where a 2026-07-28 request's `_meta` holds its client's capabilities.
const CLIENT_CAPABILITIES_META_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// What kinds of question the request's client declared it answers. Read off the
/// request's `_meta` without decoding its capabilities whole (every 2026-07-28 call opens
/// a round, and most ask nothing); a session's, from its handshake.
fn declared_questions(context: &RequestContext<RoleServer>) -> Declared {
    let declared = |capabilities: &serde_json::Map<String, Value>, key: &str| {
        capabilities.get(key).is_some_and(Value::is_object)
    };
    match context
        .meta
        .get(CLIENT_CAPABILITIES_META_KEY)
        .and_then(Value::as_object)
    {
        Some(capabilities) => Declared {
            elicitation: declared(capabilities, "elicitation"),
            sampling: declared(capabilities, "sampling"),
            roots: declared(capabilities, "roots"),
        },
        None => context
            .client_capabilities()
            .map(|capabilities| Declared::from(&capabilities))
            .unwrap_or_default(),
    }
}

/// One round of a multi-round request.
pub(crate) struct Round {
    /// The questions and answers of this round; the handler's [`Call`] asks through it.
    pub(crate) input: Arc<InputState>,
    /// What the state is bound to: the method, the name, the arguments and the caller.
    binding: Vec<u8>,
}

impl Round {
    /// A round of `method` on `name` with `args`, by the request's caller. Under
    /// 2026-07-28 (`current`, as [`is_current`] says) the answers come from `request_state`
    /// (refused with `-32602` when it fails verification) and `responses`; before, and for
    /// a task, the round starts with none.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        sealer: &Sealer,
        method: &str,
        name: &str,
        args: &Value,
        context: &RequestContext<RoleServer>,
        current: bool,
        request_state: Option<&str>,
        responses: Option<InputResponses>,
    ) -> Result<Self, ErrorData> {
        let caller = request_info(&context.extensions);
        let capabilities = declared_questions(context);
        let binding = request_state::binding(method, name, args, caller.subject());
        let mut answers = BTreeMap::new();
        if current {
            if let Some(state) = request_state {
                answers = sealer.open(state, &binding)?;
            }
            // An answer sealed in an earlier round stands: a response for the same key
            // cannot replace what the server already acted on (issue 35).
            for (key, answer) in responses.unwrap_or_default() {
                answers.entry(key).or_insert(answer);
            }
        }
        Ok(Self {
            input: InputState::rounds(answers, capabilities),
            binding,
        })
    }

    /// The round's end: every question asked and not answered, and the answers read so
    /// far sealed for the next round.
    pub(crate) fn input_required(&self, sealer: &Sealer) -> InputRequiredResult {
        let state = sealer.seal(&self.input.used(), &self.binding);
        InputRequiredResult::new(Some(self.input.pending()), Some(state))
    }

    /// `-32021` naming the capability a question needed and the client did not declare,
    /// when the handler failed for that reason.
    pub(crate) fn missing_capability(&self) -> Option<ErrorData> {
        let kind = self.input.missing_capability()?;
        let mut required = serde_json::Map::new();
        required.insert(
            kind.capability().to_owned(),
            Value::Object(Default::default()),
        );
        let required: ClientCapabilities =
            serde_json::from_value(Value::Object(required)).unwrap_or_default();
        Some(ErrorData::missing_required_client_capability(required))
    }
}
