//! A client that hangs up before its answer (issue 32): the request's claim on its id is a
//! guard ([`Claim`]) until the request reaches the session, then the answer's stream
//! ([`AnswerStream`]) watches for the answer. Dropped before it, the stream frees the id
//! and hands the service a `notifications/cancelled` for the call, as a stdio cancel does:
//! the handler is dropped and its policies' state released, and the session serves on.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures_util::Stream;
use rmcp::{
    model::{
        CancelledNotification, CancelledNotificationParam, ClientJsonRpcMessage,
        ClientNotification, JsonRpcMessage, Notification, RequestId, ServerJsonRpcMessage,
    },
    transport::streamable_http_server::session::{ServerSseMessage, local::LocalSessionHandle},
};

use super::session_entry::Entry;

/// A request's claim on its id in its session, from the check of the cap until the
/// request reaches the session's worker. Dropped on the way (the client hung up while the
/// request was being handed over), it gives the id back.
pub(super) struct Claim {
    entry: Arc<Entry>,
    id: RequestId,
    number: u64,
    /// Cleared once the request reached the session.
    armed: bool,
}

impl Claim {
    /// Claim `number` of `id`, already recorded in `entry`'s calls in flight.
    pub(super) fn new(entry: Arc<Entry>, id: RequestId, number: u64) -> Self {
        Self {
            entry,
            id,
            number,
            armed: true,
        }
    }

    /// Waits for the request's turn among the session's calls that may run at once;
    /// `false` when the claim was given up meanwhile (cancelled, or the session ended).
    /// Cancel-safe: dropped while it waits, the claim (dropped with it) gives the id back.
    pub(super) async fn take_turn(&self) -> bool {
        self.entry.take_turn(&self.id, self.number).await
    }

    /// The request reached the session: the claim now waits for its answer.
    fn reached(mut self, session: LocalSessionHandle) -> HangUp {
        self.armed = false;
        HangUp {
            entry: Arc::clone(&self.entry),
            id: self.id.clone(),
            number: self.number,
            session,
            armed: true,
        }
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        if self.armed {
            self.entry.give_back(&self.id, self.number);
        }
    }
}

/// What cancels a call whose client left before its answer.
struct HangUp {
    entry: Arc<Entry>,
    id: RequestId,
    number: u64,
    /// The session's worker, to hand the service the cancellation.
    session: LocalSessionHandle,
    /// Cleared once the answer went out (or the session ended the stream).
    armed: bool,
}

impl Drop for HangUp {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        // Given back already when the answer was routed (or the call was cancelled):
        // nothing to cancel.
        if !self.entry.give_back(&self.id, self.number) {
            return;
        }
        tracing::debug!(target: "fusion::transport", id = %self.id, "the client hung up before its answer: cancelling the call");
        let session = self.session.clone();
        let cancel = cancellation_because(
            self.id.clone(),
            "the client closed the connection before the answer",
        );
        // Outside a runtime (the process is ending) the session goes with it anyway.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = session.push_message(cancel, None).await;
            });
        }
    }
}

/// The stream of a request's answer, watching for a client that leaves before it.
pub(super) struct AnswerStream<S> {
    answers: Pin<Box<S>>,
    /// Set until the answer to the request went out.
    watch: Option<HangUp>,
}

impl<S: Stream<Item = ServerSseMessage>> Stream for AnswerStream<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.answers.as_mut().poll_next(context);
        match &polled {
            Poll::Ready(Some(message)) => {
                let answers_it = self.watch.as_ref().is_some_and(|watch| {
                    message.message.as_deref().is_some_and(|message| {
                        answered_id(message).is_some_and(|id| *id == watch.id)
                    })
                });
                if answers_it {
                    // Handed to the connection: the answer's own `send` frees the id.
                    self.disarm();
                }
            }
            Poll::Ready(None) => {
                // The session ended the stream: it cancels its calls itself.
                self.disarm();
            }
            Poll::Pending => {}
        }
        polled
    }
}

impl<S> AnswerStream<S> {
    /// The stream of the answer to the request `claim` holds the id of, once the request
    /// reached `session`. Without a claim (a notification, a request of no known
    /// session), it only passes the messages on.
    pub(super) fn new(
        answers: S,
        claim: Option<Claim>,
        session: Option<LocalSessionHandle>,
    ) -> Self {
        Self {
            answers: Box::pin(answers),
            watch: claim
                .zip(session)
                .map(|(claim, session)| claim.reached(session)),
        }
    }

    fn disarm(&mut self) {
        if let Some(mut watch) = self.watch.take() {
            watch.armed = false;
        }
    }
}

/// The request a message from the server answers.
pub(super) fn answered_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    }
}

/// A `notifications/cancelled` for request `id`, as a client would send it.
pub(super) fn cancellation_because(id: RequestId, reason: &str) -> ClientJsonRpcMessage {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.to_owned()));
    let notification: CancelledNotification = Notification::new(params);
    ClientJsonRpcMessage::notification(ClientNotification::CancelledNotification(notification))
}
