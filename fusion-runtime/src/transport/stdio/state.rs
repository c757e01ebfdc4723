//! What the reader, the writer and the handle share: the queue of outgoing messages, the
//! ids still unanswered (duplicates refused), the unwritten bytes (backpressure), latches.

use std::{
    collections::HashMap,
    io::{self},
    sync::{
        Mutex, OnceLock, PoisonError,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
};

use rmcp::{
    Peer, RoleServer,
    model::{ProtocolVersion, RequestId},
};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::transport::hand_off::Calls;

/// What the writer is asked to do.
pub(super) enum Outgoing {
    /// One serialized message, its newline included (counted in `Shared::unwritten`).
    Line(Vec<u8>),
    /// Acknowledge once everything queued before has been written.
    Flush(oneshot::Sender<()>),
    /// Like `Flush`, then stop and close the output.
    Close(oneshot::Sender<()>),
}

/// A condition that happens once, that tasks can wait for.
#[derive(Default)]
pub(super) struct Latch {
    pub(super) set: AtomicBool,
    pub(super) notify: Notify,
}

impl Latch {
    pub(super) fn set(&self) {
        self.set.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub(super) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Cancel-safe: nothing is consumed.
    pub(super) async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Register before checking, so a `set` between the check and the await wakes us.
            notified.as_mut().enable();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

/// What the transport needs to serve `tools/call` itself (`direct.rs`), once rmcp's
/// handshake is done.
pub(crate) struct DirectCalls {
    /// The server the calls go to.
    pub(super) calls: Calls,
    /// The session's peer, for the call's requests and notifications to the client.
    pub(super) peer: Peer<RoleServer>,
    /// Which calls go direct, and how their answers are shaped.
    pub(super) session: Session,
}

impl DirectCalls {
    /// The server, the running session's peer, and what the session is.
    pub(crate) fn new(calls: Calls, peer: Peer<RoleServer>, session: Session) -> Self {
        Self {
            calls,
            peer,
            session,
        }
    }
}

/// The session a transport serves calls of, as rmcp's dispatch tells revisions apart
/// (`direct::take` says which calls of each go direct).
pub(crate) enum Session {
    /// Opened with `initialize` on a revision before 2026-07-28.
    Legacy,
    /// Of the 2026-07-28 revision or a later one: opened with `initialize` on such a
    /// revision (`initialized`), or (no `initialize`) by a request whose `_meta` named its
    /// revision, rmcp's inline lifecycle.
    Current {
        /// The revisions from 2026-07-28 on that the server serves: a call naming another
        /// one is rmcp's to refuse.
        versions: Vec<ProtocolVersion>,
        initialized: bool,
    },
}

/// A request received and not answered yet.
pub(super) struct Open {
    /// Which request under this id: an id may be used again once its request is answered
    /// or cancelled, and a late answer to the earlier one must not answer the new one.
    pub(super) number: u64,
    /// The cancellation of a call the transport serves itself ([`DirectCalls`]); rmcp
    /// keeps the tokens of the requests it serves.
    pub(super) cancel: Option<CancellationToken>,
}

/// State shared by the transport, its writer and [`StdioHandle`].
#[derive(Default)]
pub(super) struct Shared {
    /// Requests received and not answered yet. An id is in it at most once: a second
    /// request with an id in flight is refused by the transport.
    pub(super) unanswered: Mutex<HashMap<RequestId, Open>>,
    /// Numbers the requests of `unanswered`.
    pub(super) opened_count: AtomicU64,
    /// Set once the session is running: `tools/call` is then served by the transport.
    pub(super) direct: OnceLock<DirectCalls>,
    /// Notified when `unanswered` becomes empty.
    pub(super) all_answered: Notify,
    /// Set when `receive` has returned `None` (the input ended and the grace is over or
    /// every call was answered, or the output failed).
    pub(super) input_ended: Latch,
    /// Set when the writer stopped (the output failed or was closed).
    pub(super) output_closed: Latch,
    /// Why the output failed, when it did.
    pub(super) output_error: Mutex<Option<io::Error>>,
    /// Set to stop reading the input (SIGTERM): what was read is served, then the input
    /// counts as ended.
    pub(super) stop_reading: Latch,
    /// Bytes queued for the writer and not written yet.
    pub(super) unwritten: AtomicUsize,
    /// Notified when the writer has written a batch.
    pub(super) written: Notify,
}

impl Shared {
    pub(super) fn unanswered(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Open>> {
        // The set stays consistent whatever panicked while holding it.
        self.unanswered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a request in flight, with the token that cancels it when the transport
    /// serves it itself; its number, or `None` when its id is already in flight.
    pub(super) fn opened(&self, id: &RequestId, cancel: Option<CancellationToken>) -> Option<u64> {
        let mut unanswered = self.unanswered();
        if unanswered.contains_key(id) {
            return None;
        }
        let number = self.opened_count.fetch_add(1, Ordering::Relaxed);
        unanswered.insert(id.clone(), Open { number, cancel });
        Some(number)
    }

    /// An answer rmcp sends (it drops those of cancelled requests itself).
    pub(super) fn answered(&self, id: &RequestId) {
        let mut unanswered = self.unanswered();
        unanswered.remove(id);
        if unanswered.is_empty() {
            self.all_answered.notify_waiters();
        }
    }

    /// The answer of a call the transport serves itself: `true` when it is still to be
    /// sent, `false` when the call was cancelled (no answer, as the protocol says) or its
    /// id now belongs to a later request.
    pub(super) fn answered_direct(&self, id: &RequestId, number: u64) -> bool {
        let mut unanswered = self.unanswered();
        if unanswered.get(id).is_none_or(|open| open.number != number) {
            return false;
        }
        unanswered.remove(id);
        if unanswered.is_empty() {
            self.all_answered.notify_waiters();
        }
        true
    }

    /// `notifications/cancelled`: the request is no longer awaited; a call the transport
    /// serves is told to stop.
    pub(super) fn cancelled(&self, id: &RequestId) {
        let mut unanswered = self.unanswered();
        if let Some(Open {
            cancel: Some(cancel),
            ..
        }) = unanswered.remove(id)
        {
            cancel.cancel();
        }
        if unanswered.is_empty() {
            self.all_answered.notify_waiters();
        }
    }

    pub(super) fn pending(&self) -> usize {
        self.unanswered().len()
    }

    /// Records why the output failed (the first error only) and stops the writer's users.
    pub(super) fn output_failed(&self, error: io::Error) {
        let mut slot = self
            .output_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(error);
    }

    /// Cancel-safe: waits until at most `limit` bytes wait to be written, or the output
    /// closed (nothing will be written any more: the caller finds out next).
    pub(super) async fn wait_for_room(&self, limit: usize) {
        loop {
            let written = self.written.notified();
            tokio::pin!(written);
            written.as_mut().enable();
            if self.unwritten.load(Ordering::Acquire) <= limit || self.output_closed.is_set() {
                return;
            }
            tokio::select! {
                () = written => {}
                () = self.output_closed.wait() => return,
            }
        }
    }

    /// Cancel-safe.
    pub(super) async fn wait_all_answered(&self) {
        loop {
            let notified = self.all_answered.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.unanswered().is_empty() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_answer_never_answers_a_later_request_under_the_same_id() {
        let shared = Shared::default();
        let id = RequestId::Number(7);
        let first_token = CancellationToken::new();
        let first = shared
            .opened(&id, Some(first_token.clone()))
            .expect("a new id");
        assert!(shared.opened(&id, None).is_none(), "the id is in flight");
        // The client cancels the call, then uses the id again.
        shared.cancelled(&id);
        assert!(first_token.is_cancelled(), "the call is told to stop");
        let second = shared.opened(&id, None).expect("the id is free again");
        assert_ne!(first, second);
        // The cancelled call ends late: its answer is dropped, the new request stays open.
        assert!(!shared.answered_direct(&id, first));
        assert_eq!(shared.pending(), 1);
        assert!(shared.answered_direct(&id, second));
        assert_eq!(shared.pending(), 0);
        assert!(!shared.answered_direct(&id, second), "answered once");
    }
}
