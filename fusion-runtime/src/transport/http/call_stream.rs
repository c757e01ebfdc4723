//! The own stream of a call served past rmcp on a session (issue 56): what the call sends
//! its client (progress, log messages, and requests: sampling, elicitation, roots) goes
//! on the answer to the call's own POST, which then becomes an SSE stream (`answer.rs`);
//! the client's answers to its requests come back as POSTs on the session and are routed
//! to the call by id (`asked.rs`, `direct.rs`).
//!
//! Why: rmcp routes a handler's request to the call's stream through a registration
//! private to its service, so until now a call of a client that declared sampling,
//! elicitation or roots went through rmcp's whole service, at rmcp's speed. With its own
//! stream, such a call takes the same road as any other until it actually sends
//! something, and is answered as one JSON body when it sends nothing.

use std::sync::Arc;

use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, JsonRpcMessage, Notification, RequestId,
    ServerJsonRpcMessage, ServerNotification, ServerRequest,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::{asked::Asked, session_entry::Entry};
use crate::{call::client::CallStream, future::BoxFuture};

/// How many messages of one call may wait to be written to its stream: past it, a
/// notification is dropped and a question waits for room, so that a client that does not
/// read holds no more than this of the server's memory per call.
const QUEUED: usize = 256;

/// The stream of one call: where its messages go, and the session's waiting requests.
#[derive(Debug)]
pub(super) struct SessionCallStream {
    capabilities: Arc<ClientCapabilities>,
    out: mpsc::Sender<ServerJsonRpcMessage>,
    /// The session: its waiting requests are made with the first question.
    session: Arc<Entry>,
}

impl SessionCallStream {
    /// The stream of a call whose client declared `capabilities`, and what reads it (the
    /// answer to the call's POST).
    pub(super) fn open(
        capabilities: Arc<ClientCapabilities>,
        session: Arc<Entry>,
    ) -> (Self, mpsc::Receiver<ServerJsonRpcMessage>) {
        let (out, sent) = mpsc::channel(QUEUED);
        (
            Self {
                capabilities,
                out,
                session,
            },
            sent,
        )
    }
}

impl CallStream for SessionCallStream {
    fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    fn notify(&self, notification: ServerNotification) -> Result<(), String> {
        match self
            .out
            .try_send(JsonRpcMessage::notification(notification))
        {
            Ok(()) => Ok(()),
            // A client that does not read its stream loses notifications, not memory: the
            // call goes on, as a progress or log message is never the call's outcome.
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::debug!(target: "fusion::transport", "a call's stream is full; a notification is dropped");
                Ok(())
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                Err("the call's stream is closed".to_owned())
            }
        }
    }

    fn request(&self, request: ServerRequest) -> BoxFuture<'static, Result<Value, String>> {
        let asked = Arc::clone(self.session.asked());
        let (id, answer) = asked.ask();
        // Until it is answered, the request waits under its id; a call that stops waiting
        // (it ended, timed out, or was dropped) takes the id with it.
        let mut waiting = Waiting {
            asked,
            id: id.clone(),
            out: Some(self.out.clone()),
        };
        let out = self.out.clone();
        Box::pin(async move {
            // Await: room on the call's stream (a client that does not read holds the
            // question back). Dropped here, `waiting` forgets the id.
            out.send(JsonRpcMessage::request(request, id))
                .await
                .map_err(|_| "the call's stream is closed".to_owned())?;
            // Await: the client's answer, POSTed on the session.
            let answer = answer
                .await
                .map_err(|_| "the session ended before the client answered".to_owned());
            waiting.out = None;
            drop(waiting);
            answer?
        })
    }
}

/// A request's id while its call waits for the answer: dropped, the id is forgotten,
/// and, when the call stopped waiting before the answer came (its deadline passed, or it
/// was cancelled while its answer still goes out), the client is told with a
/// `notifications/cancelled`, so that it can take its question back from the user.
struct Waiting {
    asked: Arc<Asked>,
    id: RequestId,
    /// The call's stream while no answer came.
    out: Option<mpsc::Sender<ServerJsonRpcMessage>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.asked.forget(&self.id);
        if let Some(out) = self.out.take() {
            let cancelled = CancelledNotificationParam::new(
                Some(self.id.clone()),
                Some("the call no longer waits for this answer".to_owned()),
            );
            // A closed stream: the client hung up, nobody is left to tell; a full one: the
            // client reads nothing, and its question lapses with the call anyway.
            let _ = out.try_send(JsonRpcMessage::notification(
                ServerNotification::CancelledNotification(Notification::new(cancelled)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{Notification, ProgressNotificationParam, ProgressToken};
    use serde_json::json;

    use super::*;

    // Roots are deprecated by the 2026-07-28 revision; a session of an earlier one asks.
    #[allow(deprecated)]
    fn roots_request() -> ServerRequest {
        ServerRequest::ListRootsRequest(rmcp::model::RequestNoParam {
            method: Default::default(),
            extensions: Default::default(),
        })
    }

    #[tokio::test]
    async fn a_request_goes_out_on_the_stream_and_its_answer_comes_back_by_id() {
        let session = Entry::new(1);
        let asked = Arc::clone(session.asked());
        let (stream, mut sent) = SessionCallStream::open(Arc::default(), session);
        let roots = roots_request();
        let answer = tokio::spawn(stream.request(roots));
        let Some(JsonRpcMessage::Request(request)) = sent.recv().await else {
            panic!("the request goes out first");
        };
        assert!(asked.answer(&request.id, Ok(json!({"roots": []}))));
        let answer = answer.await.expect("the call goes on");
        assert_eq!(answer, Ok(json!({"roots": []})));
        assert_eq!(asked.len(), 0);
        assert!(
            sent.try_recv().is_err(),
            "an answered request is not cancelled"
        );
    }

    #[tokio::test]
    async fn a_call_that_stops_waiting_forgets_its_request() {
        let session = Entry::new(1);
        let asked = Arc::clone(session.asked());
        let (stream, mut sent) = SessionCallStream::open(Arc::default(), session);
        let roots = roots_request();
        let mut waiting = stream.request(roots);
        assert!(futures_util::poll!(&mut waiting).is_pending());
        assert_eq!(asked.len(), 1);
        drop(waiting);
        assert_eq!(asked.len(), 0, "the dropped call's id is gone");
        let Some(JsonRpcMessage::Request(request)) = sent.recv().await else {
            panic!("the request went out");
        };
        assert!(!asked.answer(&request.id, Ok(Value::Null)));
        let told = serde_json::to_value(sent.recv().await).expect("serializes");
        assert_eq!(told["method"], json!("notifications/cancelled"), "{told}");
        assert_eq!(
            told["params"]["requestId"],
            serde_json::to_value(&request.id).expect("serializes")
        );
    }

    #[tokio::test]
    async fn notifications_go_out_in_order_and_fail_once_the_answer_is_gone() {
        let (stream, mut sent) = SessionCallStream::open(Arc::default(), Entry::new(1));
        for done in [1.0, 2.0] {
            let progress = ProgressNotificationParam::new(
                ProgressToken(rmcp::model::NumberOrString::Number(7)),
                done,
            );
            let notification =
                ServerNotification::ProgressNotification(Notification::new(progress));
            assert!(stream.notify(notification).is_ok());
        }
        for done in [1.0, 2.0] {
            let message = serde_json::to_value(sent.recv().await).expect("serializes");
            assert_eq!(message["params"]["progress"], json!(done));
        }
        drop(sent);
        let progress = ProgressNotificationParam::new(
            ProgressToken(rmcp::model::NumberOrString::Number(7)),
            3.0,
        );
        assert!(
            stream
                .notify(ServerNotification::ProgressNotification(Notification::new(
                    progress
                )))
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_client_that_reads_nothing_holds_a_bounded_queue() {
        let (stream, mut sent) = SessionCallStream::open(Arc::default(), Entry::new(1));
        let progress = |done: f64| {
            ServerNotification::ProgressNotification(Notification::new(
                ProgressNotificationParam::new(
                    ProgressToken(rmcp::model::NumberOrString::Number(7)),
                    done,
                ),
            ))
        };
        for done in 0..(QUEUED as u32 + 100) {
            assert!(
                stream.notify(progress(f64::from(done))).is_ok(),
                "the call goes on"
            );
        }
        // A question waits for room instead of growing the queue.
        let mut asking = stream.request(roots_request());
        assert!(futures_util::poll!(&mut asking).is_pending());
        let mut queued = 0;
        while let Ok(message) = sent.try_recv() {
            queued += 1;
            assert!(
                serde_json::to_value(&message).expect("serializes")["method"]
                    != json!("roots/list")
            );
        }
        assert_eq!(queued, QUEUED, "the oldest kept, the rest dropped");
        // Room again: the question goes out.
        assert!(futures_util::poll!(&mut asking).is_pending());
        let Ok(JsonRpcMessage::Request(_)) = sent.try_recv() else {
            panic!("the question went out once there was room");
        };
    }
}
