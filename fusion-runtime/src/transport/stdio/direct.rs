//! `tools/call` served by the transport itself, straight into what the handler's
//! `ServerHandler::call_tool` runs, past rmcp's service loop (issue 20).
//!
//! Why: for every request, rmcp's loop spawns a task whose future holds its whole
//! dispatch (every method's state, copied into the task and again on completion), makes
//! two child cancellation tokens, sends the answer back into the loop over a channel, and
//! spawns a second task to hand it to the transport. In a profile of the quickstart's
//! `echo` at 32 calls in flight that was about a third of the server's CPU, most of it
//! `memmove`. Here a call is the pipeline's future (boxed once) with one cancellation
//! token, polled once where it is read: most calls end there and need no task at all;
//! one that waits moves to a task of its own. Its answer is queued for the writer like
//! any other.
//!
//! Order: a call must not run before the tasks rmcp spawned for the messages read before
//! it (a pipelined `logging/setLevel` sets the level the call logs at). Until a task
//! spawned after those has run, calls go to tasks too, which the runtime's thread runs in
//! the order they were spawned (`StdioTransport::next_message`).
//!
//! What still goes through rmcp: the handshake, every other method, a `tools/call` read
//! before the session runs, one that names its own protocol revision in `_meta`
//! (2026-07-28 rounds and the inline lifecycle, whose checks rmcp's dispatch makes),
//! notifications, and the server's own requests to the client (progress, logging,
//! elicitation, sampling through the call's `Peer`) with their answers. For a classic
//! session's `tools/call`, rmcp's dispatch does nothing but call `call_tool`, so the
//! answer is the same either way.

use std::{panic::AssertUnwindSafe, sync::Arc};

use futures_util::FutureExt as _;
use rmcp::{
    RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, ClientRequest, ErrorData, JsonRpcMessage,
        JsonRpcRequest, RequestId, RequestMetaObject, ServerResult,
    },
    service::{RequestContext, TxJsonRpcMessage},
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    state::{DirectCalls, Outgoing, Shared},
    writer::{queue_line, serialize},
};
use crate::transport::decode::ClientMessage;

/// A `tools/call` the transport serves, taken apart as rmcp's loop would.
pub(super) struct DirectCall {
    params: CallToolRequestParams,
    context: RequestContext<RoleServer>,
}

impl DirectCall {
    /// The request's id.
    pub(super) fn id(&self) -> &RequestId {
        &self.context.id
    }

    /// The call's cancellation: `notifications/cancelled` cancels it.
    pub(super) fn cancellation(&self) -> CancellationToken {
        self.context.ct.clone()
    }
}

/// The message as a call the transport serves, or the message back for rmcp.
pub(super) fn take(
    message: Box<ClientMessage>,
    direct: &DirectCalls,
) -> Result<DirectCall, Box<ClientMessage>> {
    let served_here = matches!(
        &*message,
        JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::CallToolRequest(request),
            ..
        }) if request
            .extensions
            .get::<RequestMetaObject>()
            .is_none_or(|meta| meta.protocol_version().is_none())
    );
    if !served_here {
        return Err(message);
    }
    let (id, mut request) = match *message {
        JsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::CallToolRequest(request),
            ..
        }) => (id, request),
        other => return Err(Box::new(other)),
    };
    // As rmcp's loop does: `_meta` to the context's meta, the other extensions with it.
    let meta = request
        .extensions
        .remove::<RequestMetaObject>()
        .unwrap_or_default();
    let mut context = RequestContext::new(id, direct.peer.clone());
    context.meta = meta;
    context.extensions = std::mem::take(&mut request.extensions);
    Ok(DirectCall {
        params: request.params,
        context,
    })
}

/// Starts the call: polled once here, where it was read (most calls end in their first
/// poll, and then need no task), or, when it does not end there or must not run before
/// rmcp's tasks (`inline` false), in a task of its own. Its answer is queued when it ends,
/// unless it was cancelled meanwhile (`started` says where it goes).
pub(super) fn start(direct: &DirectCalls, call: DirectCall, started: Started, inline: bool) {
    let DirectCall { params, context } = call;
    let mut answer = (direct.call_tool)(params, context);
    if inline {
        // A future re-registers its waker on every poll that returns `Pending`, so one
        // polled here with a no-op waker and then moved to a task (which polls it at once)
        // loses no wake-up. The pipeline catches the tool's panics; one from anywhere else
        // still gets its one answer.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| (&mut answer).now_or_never()));
        match polled {
            Ok(Some(answer)) => return started.queue(answer),
            Ok(None) => {}
            Err(_) => {
                tracing::error!(target: "fusion::transport", id = %started.id, "a tool call panicked outside the tool's panic boundary");
                let error =
                    ErrorData::internal_error("the server failed while serving the call", None);
                return started.queue(Err(error));
            }
        }
    }
    // In rmcp's span, as rmcp runs its handlers: the call's events list it when it is on
    // (`RUST_LOG=rmcp=info`); `receive` is polled inside it.
    let span = tracing::Span::current();
    let work = async move {
        // Await: the call. A drop here (the runtime is going away) drops the pipeline's
        // future, whose guards give back what it holds; the id stays unanswered, as the
        // process is ending.
        started.queue(answer.await);
    };
    tokio::spawn(work.instrument(span));
}

/// Where a started call's answer goes: the request (its id, and its number in the
/// unanswered map) and the writer's queue.
pub(super) struct Started {
    pub(super) id: RequestId,
    pub(super) number: u64,
    pub(super) out: mpsc::UnboundedSender<Outgoing>,
    pub(super) shared: Arc<Shared>,
}

impl Started {
    /// Queues the answer, unless the call was cancelled (or its id answered) meanwhile.
    fn queue(self, answer: Result<CallToolResponse, ErrorData>) {
        let Self {
            id,
            number,
            out,
            shared,
        } = self;
        if !shared.answered_direct(&id, number) {
            tracing::debug!(target: "fusion::transport", %id, "dropping the answer of a cancelled call");
            return;
        }
        let line = serialize(&legacy_answer(answer, id));
        if !line.is_empty() {
            // A closed writer means the output is gone: nobody can read the answer.
            let _ = queue_line(&out, &shared, line);
        }
    }
}

/// The answer to a `tools/call` of a session opened with `initialize` on a revision before
/// 2026-07-28 (the only calls served past rmcp), shaped as rmcp's dispatch shapes it for
/// such a peer: without `resultType`, and without tool output that is not an object.
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
