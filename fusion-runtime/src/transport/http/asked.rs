//! A session's requests to its client that wait for an answer (issue 56): sampling,
//! elicitation and roots asked by calls served past rmcp (`call_stream.rs`). Each has an
//! id of its own (`fusion-<n>`, a string: rmcp numbers its own requests, so the two never
//! meet), and the client's answer, POSTed on the session, is routed back to the call that
//! waits for it by that id (`direct.rs`).

use std::{
    collections::HashMap,
    sync::{
        Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::model::RequestId;
use serde_json::Value;
use tokio::sync::oneshot;

/// What every id of these requests starts with: a cheap look tells a POSTed answer to
/// one of them from anything else.
pub(super) const ID_PREFIX: &str = "fusion-";

/// The client's answer: its `result`, or its error as text.
pub(super) type Answer = Result<Value, String>;

/// The requests of one session that wait for their answers.
#[derive(Debug, Default)]
pub(super) struct Asked {
    waiting: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    next: AtomicU64,
}

impl Asked {
    fn waiting(&self) -> MutexGuard<'_, HashMap<RequestId, oneshot::Sender<Answer>>> {
        // Each change is one insert or remove: a poisoned map is still consistent.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new request: its id, and where its answer comes. The id waits until it is
    /// answered or [`Asked::forget`] drops it.
    pub(super) fn ask(&self) -> (RequestId, oneshot::Receiver<Answer>) {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("{ID_PREFIX}{number}").into());
        let (sender, receiver) = oneshot::channel();
        self.waiting().insert(id.clone(), sender);
        (id, receiver)
    }

    /// Hands `answer` to the request `id` waits for; `false` when no request of this
    /// session waits under that id (answered already, forgotten, or never asked).
    pub(super) fn answer(&self, id: &RequestId, answer: Answer) -> bool {
        let Some(sender) = self.waiting().remove(id) else {
            return false;
        };
        // The call may have gone meanwhile: the answer was still this session's to take.
        let _ = sender.send(answer);
        true
    }

    /// Drops the request `id`: its call no longer waits (it ended, or was dropped).
    pub(super) fn forget(&self, id: &RequestId) {
        self.waiting().remove(id);
    }

    /// How many requests wait.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.waiting().len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn an_answer_reaches_the_request_of_its_id_once() {
        let asked = Asked::default();
        let (first, first_answer) = asked.ask();
        let (second, second_answer) = asked.ask();
        assert_ne!(first, second);
        assert!(asked.answer(&second, Ok(json!({"n": 2}))));
        assert!(
            !asked.answer(&second, Ok(json!({"n": 3}))),
            "answered already"
        );
        assert_eq!(second_answer.await.ok(), Some(Ok(json!({"n": 2}))));
        assert!(asked.answer(&first, Err("declined".to_owned())));
        assert_eq!(first_answer.await.ok(), Some(Err("declined".to_owned())));
        assert_eq!(asked.len(), 0);
    }

    #[test]
    fn a_forgotten_or_unknown_id_takes_no_answer() {
        let asked = Asked::default();
        let (id, _answer) = asked.ask();
        asked.forget(&id);
        assert!(!asked.answer(&id, Ok(Value::Null)));
        assert!(!asked.answer(&RequestId::Number(0), Ok(Value::Null)));
        assert!(!asked.answer(&RequestId::String("fusion-99".into()), Ok(Value::Null)));
    }
}
