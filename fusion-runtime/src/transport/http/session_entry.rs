//! What one session of Streamable HTTP holds besides rmcp's worker: its requests in flight
//! (each id's claim numbered), when it was last active, and its owner.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use rmcp::model::RequestId;
use tokio::time::Instant;

/// What one session holds besides rmcp's worker.
#[derive(Debug)]
pub(super) struct Entry {
    state: Mutex<EntryState>,
}

#[derive(Debug)]
pub(super) struct EntryState {
    /// The ids of the requests in flight, each with the number of its claim: a client may
    /// use an id again once it is free, and a late hang-up must not cancel the new request.
    pub(super) in_flight: HashMap<RequestId, u64>,
    /// Numbers the claims of `in_flight`.
    pub(super) claims: u64,
    /// The last request of the client or answer of the server.
    pub(super) last_active: Instant,
    /// The verified subject of the token that created the session (OAuth), once bound:
    /// the session answers only that subject.
    pub(super) owner: Option<String>,
}

impl Entry {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(EntryState {
                in_flight: HashMap::new(),
                claims: 0,
                last_active: Instant::now(),
                owner: None,
            }),
        })
    }

    /// The state; a panic elsewhere while holding the lock leaves sets that are still
    /// consistent (each change is one insert or remove), so a poisoned lock is used as is.
    pub(super) fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn touch(&self) {
        self.lock().last_active = Instant::now();
    }

    /// The call `id` was answered (or cancelled): its id is free again.
    pub(super) fn finish(&self, id: &RequestId) {
        let mut state = self.lock();
        state.in_flight.remove(id);
        state.last_active = Instant::now();
    }

    /// Gives back claim `number` on `id`, if the id still holds that claim; whether it did.
    pub(super) fn give_back(&self, id: &RequestId, number: u64) -> bool {
        let mut state = self.lock();
        if state.in_flight.get(id) != Some(&number) {
            return false;
        }
        state.in_flight.remove(id);
        state.last_active = Instant::now();
        true
    }

    pub(super) fn idle_for(&self, now: Instant) -> Option<Duration> {
        let state = self.lock();
        state
            .in_flight
            .is_empty()
            .then(|| now.saturating_duration_since(state.last_active))
    }
}
