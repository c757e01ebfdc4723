//! Input a tool asks the client for (elicitation, sampling, roots) when the call cannot
//! send the client a request of its own: under the 2026-07-28 revision, or inside a task.
//!
//! The tool keeps one API ([`Call::elicit`](crate::Call::elicit),
//! [`Call::sample_text`](crate::Call::sample_text), [`Call::list_roots`](crate::Call::list_roots));
//! each question has a key (given with [`Call::ask`](crate::Call::ask), or numbered in the
//! order the tool asks). How the answer comes depends on how the call is served:
//!
//! - **Rounds** (2026-07-28, multi-round-trip requests): the handler runs from the start on
//!   every round. A question answered in this round's `inputResponses` or in the signed
//!   request state of an earlier round is answered at once; an unanswered one is recorded
//!   and the handler never gets past it: the runtime drops the handler's future (its
//!   guards release everything) and answers `input_required` with every question recorded
//!   in that poll. The next round re-runs the handler with the answers.
//! - **Parked** (a task): the handler waits for the answer, which comes with `tasks/update`;
//!   `tasks/get` shows the questions meanwhile.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, MutexGuard},
    task::{Poll, Waker},
};

use rmcp::model::{ClientCapabilities, InputRequest, InputRequests};
use serde_json::Value;
use tokio::sync::oneshot;

/// The kinds of question, and the capability each needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Elicitation,
    Sampling,
    Roots,
}

impl Kind {
    /// The client capability the question needs, as `ClientCapabilities` names it.
    pub(crate) fn capability(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    fn auto_key_prefix(self) -> &'static str {
        match self {
            Self::Elicitation => "elicitation",
            Self::Sampling => "sampling",
            Self::Roots => "roots",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Elicitation => 0,
            Self::Sampling => 1,
            Self::Roots => 2,
        }
    }
}

/// What kinds of question a client declared it answers (per request under 2026-07-28).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Declared {
    pub(crate) elicitation: bool,
    pub(crate) sampling: bool,
    pub(crate) roots: bool,
}

impl From<&ClientCapabilities> for Declared {
    fn from(capabilities: &ClientCapabilities) -> Self {
        Self {
            elicitation: capabilities.elicitation.is_some(),
            sampling: capabilities.sampling.is_some(),
            roots: capabilities.roots.is_some(),
        }
    }
}

/// The questions and answers of one call served without a client connection to ask on.
pub(crate) struct InputState {
    state: Mutex<State>,
    /// What the client declared it can answer.
    capabilities: Declared,
}

impl std::fmt::Debug for InputState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("InputState")
            .field("parked", &state.parked)
            .field("answers", &state.answers.keys().collect::<Vec<_>>())
            .field("pending", &state.pending.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    /// Answers wait for the handler (a task) instead of ending the round.
    parked: bool,
    /// Answers known: from the signed state of earlier rounds and this round's responses.
    answers: BTreeMap<String, Value>,
    /// The answers the handler read in this round: what the next round's state carries.
    used: BTreeMap<String, Value>,
    /// Questions asked and not answered.
    pending: InputRequests,
    /// Parked handlers waiting for an answer, by key.
    waiting: HashMap<String, oneshot::Sender<Value>>,
    /// Questions asked without a key, by kind, in this round.
    counters: [u32; 3],
    /// A capability a question needed that the client did not declare.
    missing: Option<Kind>,
    /// Who waits for a question to be recorded (the round's runner).
    waker: Option<Waker>,
    /// The handler may turn the call into a task (a tool declared started by the tool).
    task_allowed: bool,
    /// The handler asked to continue as a task.
    task_requested: bool,
    /// Counts changes to `pending`, so that a task's runner can mirror them in the store.
    version: u64,
    /// Who waits for `pending` to change (a task's runner).
    watcher: Option<Waker>,
}

impl State {
    /// `pending` changed: the task's runner is told.
    fn pending_changed(&mut self) {
        self.version = self.version.wrapping_add(1);
        if let Some(watcher) = self.watcher.take() {
            watcher.wake();
        }
    }
}

impl InputState {
    /// A round of a multi-round call: `answers` from the request state and responses.
    pub(crate) fn rounds(answers: BTreeMap<String, Value>, capabilities: Declared) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                answers,
                ..State::default()
            }),
            capabilities,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a handler panicked while holding it, which the code here
        // never does (no user code runs under it); the state is still consistent.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The handler may continue as a task.
    pub(crate) fn allow_task(&self) {
        self.lock().task_allowed = true;
    }

    /// The handler asks to continue as a task: true when the call becomes one.
    pub(crate) fn request_task(&self) -> bool {
        let mut state = self.lock();
        if !state.task_allowed || state.parked || state.task_requested {
            return false;
        }
        state.task_requested = true;
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
        true
    }

    /// Resolves once the handler asked to continue as a task.
    pub(crate) async fn task_requested(&self) {
        std::future::poll_fn(|context| {
            let mut state = self.lock();
            if state.task_requested && !state.parked {
                Poll::Ready(())
            } else {
                state.waker = Some(context.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }

    /// From now on answers wait for `tasks/update` (the call became a task).
    pub(crate) fn park(&self) {
        self.lock().parked = true;
    }

    /// Whether the client declared the capability `kind` needs; records it when not.
    pub(crate) fn check_capability(&self, kind: Kind) -> Result<(), &'static str> {
        let declared = match kind {
            Kind::Elicitation => self.capabilities.elicitation,
            Kind::Sampling => self.capabilities.sampling,
            Kind::Roots => self.capabilities.roots,
        };
        if declared {
            Ok(())
        } else {
            self.lock().missing.get_or_insert(kind);
            Err(kind.capability())
        }
    }

    /// The capability a question needed that the client did not declare.
    pub(crate) fn missing_capability(&self) -> Option<Kind> {
        self.lock().missing
    }

    /// The answer to `request` under `key` (or the next automatic key of its kind).
    /// Without an answer: in a round, records the question and never resolves (the
    /// runner drops the handler); parked, waits for `tasks/update`. An answer that
    /// `usable` refuses counts as none: the question is asked again.
    pub(crate) async fn ask(
        &self,
        kind: Kind,
        key: Option<&str>,
        request: InputRequest,
        usable: fn(&Value) -> bool,
    ) -> Result<Value, String> {
        let receiver = {
            let mut state = self.lock();
            let key = match key {
                Some(key) => key.to_owned(),
                None => {
                    let counter = &mut state.counters[kind.index()];
                    *counter += 1;
                    format!("{}-{counter}", kind.auto_key_prefix())
                }
            };
            if let Some(answer) = state.answers.get(&key).filter(|answer| usable(answer)) {
                let answer = answer.clone();
                state.used.insert(key, answer.clone());
                return Ok(answer);
            }
            state.pending.insert(key.clone(), request);
            state.pending_changed();
            if !state.parked {
                if let Some(waker) = state.waker.take() {
                    waker.wake();
                }
                None
            } else {
                let (sender, receiver) = oneshot::channel();
                state.waiting.insert(key.clone(), sender);
                Some((key, receiver))
            }
        };
        let Some((key, receiver)) = receiver else {
            // The round ends here: the runner sees the question and drops this future.
            return std::future::pending().await;
        };
        // Await: parked until `tasks/update` answers. Holds `_unask`, which withdraws the
        // question if this future is dropped (the task was cancelled).
        let _unask = Unask { state: self, key };
        match receiver.await {
            Ok(answer) if usable(&answer) => Ok(answer),
            Ok(_) => Err("the client's answer does not fit the question".to_owned()),
            Err(_) => Err("the task ended before the client answered".to_owned()),
        }
    }

    /// Resolves once the handler asked a question that this round cannot answer.
    pub(crate) async fn input_required(&self) {
        std::future::poll_fn(|context| {
            let mut state = self.lock();
            if !state.parked && !state.pending.is_empty() {
                Poll::Ready(())
            } else {
                state.waker = Some(context.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }

    /// Resolves once the questions changed since version `seen`; the new version.
    pub(crate) async fn pending_changed(&self, seen: u64) -> u64 {
        std::future::poll_fn(|context| {
            let mut state = self.lock();
            if state.version == seen {
                state.watcher = Some(context.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(state.version)
            }
        })
        .await
    }

    /// The questions not answered yet.
    pub(crate) fn pending(&self) -> InputRequests {
        self.lock().pending.clone()
    }

    /// The answers the handler read, for the next round's request state.
    pub(crate) fn used(&self) -> BTreeMap<String, Value> {
        self.lock().used.clone()
    }

    /// Delivers answers to parked questions (`tasks/update`); unknown keys are ignored.
    pub(crate) fn deliver(&self, answers: impl IntoIterator<Item = (String, Value)>) {
        let mut state = self.lock();
        for (key, answer) in answers {
            if let Some(sender) = state.waiting.remove(&key) {
                state.pending.remove(&key);
                state.pending_changed();
                // The handler may be gone (cancelled); nothing waits then.
                let _ = sender.send(answer);
            }
        }
    }
}

/// Withdraws a parked question when its handler goes away.
struct Unask<'a> {
    state: &'a InputState,
    key: String,
}

impl Drop for Unask<'_> {
    fn drop(&mut self) {
        let mut state = self.state.lock();
        if state.pending.remove(&self.key).is_some() {
            state.pending_changed();
        }
        state.waiting.remove(&self.key);
    }
}

/// An `elicitation/create` answer: an object with an `action`.
pub(crate) fn is_elicit_result(answer: &Value) -> bool {
    answer
        .get("action")
        .and_then(Value::as_str)
        .is_some_and(|action| matches!(action, "accept" | "decline" | "cancel"))
}

/// A `sampling/createMessage` answer: an object with `content`.
pub(crate) fn is_sampling_result(answer: &Value) -> bool {
    answer.get("content").is_some()
}

/// A `roots/list` answer: an object with a `roots` list.
pub(crate) fn is_roots_result(answer: &Value) -> bool {
    answer.get("roots").is_some_and(Value::is_array)
}

/// The question as the wire carries it.
pub(crate) fn request(method: &str, params: Option<Value>) -> Result<InputRequest, String> {
    let mut message = serde_json::Map::new();
    message.insert("method".to_owned(), Value::String(method.to_owned()));
    if let Some(params) = params {
        message.insert("params".to_owned(), params);
    }
    serde_json::from_value(Value::Object(message)).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elicitation() -> InputRequest {
        request(
            "elicitation/create",
            Some(serde_json::json!({
                "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}
            })),
        )
        .expect("a valid question")
    }

    #[tokio::test]
    async fn a_known_answer_is_returned_and_carried_forward() {
        let mut answers = BTreeMap::new();
        answers.insert(
            "name".to_owned(),
            serde_json::json!({"action": "accept", "content": {"name": "Ada"}}),
        );
        let state = InputState::rounds(answers, Declared::default());
        let answer = state
            .ask(
                Kind::Elicitation,
                Some("name"),
                elicitation(),
                is_elicit_result,
            )
            .await
            .expect("answered");
        assert_eq!(answer["content"]["name"], "Ada");
        assert!(state.used().contains_key("name"));
        assert!(state.pending().is_empty());
    }

    #[tokio::test]
    async fn an_unanswered_question_ends_the_round() {
        let state = InputState::rounds(BTreeMap::new(), Declared::default());
        let asked = async {
            let _ = state
                .ask(Kind::Elicitation, None, elicitation(), is_elicit_result)
                .await;
            unreachable!("a round never gets past an unanswered question");
        };
        tokio::select! {
            biased;
            () = asked => {}
            () = state.input_required() => {}
        }
        assert_eq!(
            state.pending().keys().collect::<Vec<_>>(),
            ["elicitation-1"]
        );
    }

    #[tokio::test]
    async fn a_parked_question_waits_for_its_answer_and_is_withdrawn_on_drop() {
        let state = InputState::rounds(BTreeMap::new(), Declared::default());
        state.park();
        let asked = state.ask(
            Kind::Elicitation,
            Some("k"),
            elicitation(),
            is_elicit_result,
        );
        tokio::pin!(asked);
        assert!(futures_util::poll!(asked.as_mut()).is_pending());
        assert_eq!(state.pending().len(), 1);
        state.deliver([("k".to_owned(), serde_json::json!({"action": "decline"}))]);
        let answer = asked.await.expect("delivered");
        assert_eq!(answer["action"], "decline");
        let mut dropped = Box::pin(state.ask(
            Kind::Elicitation,
            Some("j"),
            elicitation(),
            is_elicit_result,
        ));
        assert!(futures_util::poll!(dropped.as_mut()).is_pending());
        drop(dropped);
        assert!(state.pending().is_empty());
    }
}
