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
//! Which calls go direct (issue 56): those that pass every check rmcp's dispatch
//! (`handle_request` of its `ServerHandler`) would make before calling `call_tool`, answered
//! as that dispatch shapes the answer for the call's revision (`transport/call_answer.rs`):
//! - a session opened with `initialize` on a revision before 2026-07-28: a call whose
//!   `_meta` names no revision. The dispatch only calls `call_tool`; the answer loses
//!   `resultType` and any output that is not an object;
//! - a session of the 2026-07-28 revision or a later one (rmcp's inline lifecycle: no
//!   `initialize`, every request naming its revision, client and capabilities in `_meta`;
//!   or one opened with `initialize` on such a revision): a call whose `_meta` names a
//!   revision the server serves, from 2026-07-28 on, and has every key 2026-07-28
//!   requires (`missing_required_keys` empty); in an `initialize`d session, also one that
//!   names none. The answer keeps `resultType`, a complete result gets its cache hints,
//!   a task is refused to a client that did not declare the tasks extension (`-32021`),
//!   and `-32002` becomes `-32602`. The call's `Peer` is the session's: its log messages
//!   and progress go through rmcp's loop as before, and a request of its own to the client
//!   is refused by rmcp (`enforce_outbound_request` reads the inline session's revision,
//!   where rmcp's dispatch scopes the request's): fusion asks through `input_required`
//!   rounds instead, which are answers like any other.
//!
//! What still goes through rmcp: the handshake, every other method, a `tools/call` read
//! before the session runs (the inline session's first request among them), one that
//! fails a check above (rmcp answers it with its error: `-32022` for a revision not served,
//! `-32602` for a `_meta` without a required key, or, in an inline session, without a
//! revision), one that names a revision before 2026-07-28 in a 2026-07-28 session (shaped
//! for that revision), one that names any revision in a session opened on a revision
//! before 2026-07-28 (an edge case: rmcp would then refuse the handler's own requests to
//! the client, which the session's revision here would not), notifications, and the
//! server's own requests to the client (progress, logging, elicitation, sampling through
//! the call's `Peer`) with their answers.

use std::{panic::AssertUnwindSafe, sync::Arc};

use futures_util::FutureExt as _;
use rmcp::{
    RoleServer,
    model::{CallToolRequestParams, CallToolResponse, ErrorData, RequestId, RequestMetaObject},
    service::RequestContext,
};
use tokio::sync::mpsc;

use crate::transport::hand_off::{call_context, tool_call, untaken};
use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::{
    state::{DirectCalls, Outgoing, Session, Shared},
    writer::{queue_line, serialize},
};
use crate::transport::call_answer::{current_answer, legacy_answer};
use crate::transport::decode::ClientMessage;

/// A `tools/call` the transport serves, taken apart as rmcp's loop would.
pub(super) struct DirectCall {
    params: CallToolRequestParams,
    context: RequestContext<RoleServer>,
    shape: Shape,
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

/// How a call's answer is shaped: as rmcp's dispatch shapes it for the call's revision.
#[derive(Clone, Copy)]
enum Shape {
    /// Before 2026-07-28 ([`legacy_answer`]).
    Legacy,
    /// From 2026-07-28 on ([`current_answer`]), with whether the client declared the tasks
    /// extension (read before the call, as rmcp reads it: the context goes to the call).
    Current { declared_tasks: bool },
}

/// The message as a call the transport serves, or the message back for rmcp: a
/// `tools/call` that passes every check rmcp's dispatch would make of it before calling
/// `call_tool` (module doc), and only those.
pub(super) fn take(
    message: Box<ClientMessage>,
    direct: &DirectCalls,
) -> Result<DirectCall, Box<ClientMessage>> {
    let (id, request) = tool_call(message)?;
    let meta = request.extensions.get::<RequestMetaObject>();
    // The revision the call names, decoded once: rmcp's dispatch reads it before the
    // session's.
    let named = meta.and_then(RequestMetaObject::protocol_version);
    // For a call naming its revision: whether its `_meta`'s capabilities declare tasks,
    // `None` when they are missing or do not decode.
    let mut declares_tasks = None;
    let goes_direct = match (&direct.session, &named) {
        (Session::Legacy, None) => true,
        // rmcp's dispatch would take the named revision's rules (checks, shape) and scope
        // it for the handler, whose requests to the client it then refuses from
        // 2026-07-28 on; here the session's revision would decide. An edge case: rmcp's.
        (Session::Legacy, Some(_)) => false,
        // Every request of the inline lifecycle names its revision: rmcp refuses one that
        // does not (`-32602`).
        (Session::Current { initialized, .. }, None) => *initialized,
        // A revision the server does not serve (`-32022`), one before 2026-07-28 (its
        // shape and rules differ), or a `_meta` without every key 2026-07-28 requires
        // (`-32602`): rmcp answers those as it always did. Those keys are the revision
        // (decoded above) and the capabilities (`missing_required_keys`; the test
        // `the_keys_2026_07_28_requires_are_the_revision_and_the_capabilities` holds rmcp
        // to it): the capabilities are decoded once, for both checks.
        (Session::Current { versions, .. }, Some(version)) => {
            declares_tasks = meta
                .and_then(RequestMetaObject::client_capabilities)
                .map(|capabilities| capabilities.supports_tasks());
            versions.contains(version) && declares_tasks.is_some()
        }
    };
    if !goes_direct {
        return Err(untaken(id, request));
    }
    let (params, context) = call_context(id, request, direct.peer.clone());
    let shape = match direct.session {
        Session::Legacy => Shape::Legacy,
        // As rmcp's dispatch reads it: the request's `_meta`, then (a session opened with
        // `initialize`) the session's capabilities.
        Session::Current { .. } => Shape::Current {
            declared_tasks: declares_tasks.unwrap_or_else(|| {
                context
                    .client_capabilities()
                    .is_some_and(|capabilities| capabilities.supports_tasks())
            }),
        },
    };
    Ok(DirectCall {
        params,
        context,
        shape,
    })
}

/// Starts the call: polled once here, where it was read (most calls end in their first
/// poll, and then need no task), or, when it does not end there or must not run before
/// rmcp's tasks (`inline` false), in a task of its own. Its answer is queued when it ends,
/// unless it was cancelled meanwhile (`started` says where it goes).
pub(super) fn start(direct: &DirectCalls, call: DirectCall, started: Started, inline: bool) {
    let DirectCall {
        params,
        context,
        shape,
    } = call;
    let mut answer = direct.calls.answer(params, context);
    if inline {
        // A future re-registers its waker on every poll that returns `Pending`, so one
        // polled here with a no-op waker and then moved to a task (which polls it at once)
        // loses no wake-up. The pipeline catches the tool's panics; one from anywhere else
        // still gets its one answer.
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| (&mut answer).now_or_never()));
        match polled {
            Ok(Some(answer)) => return started.queue(answer, shape),
            Ok(None) => {}
            Err(_) => {
                tracing::error!(target: "fusion::transport", id = %started.id, "a tool call panicked outside the tool's panic boundary");
                let error =
                    ErrorData::internal_error("the server failed while serving the call", None);
                return started.queue(Err(error), shape);
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
        started.queue(answer.await, shape);
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
    fn queue(self, answer: Result<CallToolResponse, ErrorData>, shape: Shape) {
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
        let answer = match shape {
            Shape::Legacy => legacy_answer(answer, id),
            Shape::Current { declared_tasks } => current_answer(answer, declared_tasks, id),
        };
        let line = serialize(&answer);
        if !line.is_empty() {
            // A closed writer means the output is gone: nobody can read the answer.
            let _ = queue_line(&out, &shared, line);
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ProtocolVersion, RequestMetaObject};
    use serde_json::json;

    /// `take` checks the keys 2026-07-28 requires by decoding the revision and the
    /// capabilities: should rmcp require another key, this fails.
    #[test]
    fn the_keys_2026_07_28_requires_are_the_revision_and_the_capabilities() {
        let keys = [
            (
                "io.modelcontextprotocol/protocolVersion",
                json!("2026-07-28"),
            ),
            ("io.modelcontextprotocol/clientCapabilities", json!({})),
            (
                "io.modelcontextprotocol/clientInfo",
                json!({"name": "c", "version": "1"}),
            ),
            ("io.modelcontextprotocol/logLevel", json!("debug")),
        ];
        for mask in 0..(1 << keys.len()) {
            let mut meta = serde_json::Map::new();
            for (at, (key, value)) in keys.iter().enumerate() {
                if mask & (1 << at) != 0 {
                    meta.insert((*key).to_owned(), value.clone());
                }
            }
            let meta = RequestMetaObject::from(meta);
            let decoded = meta.protocol_version().is_some() && meta.client_capabilities().is_some();
            assert_eq!(
                meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                    .is_empty(),
                decoded,
                "the keys present, by bit: {mask:04b}"
            );
        }
    }
}
