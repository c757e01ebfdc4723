//! What one session of Streamable HTTP holds besides rmcp's worker: its requests in flight
//! (each id's claim numbered, with its place among the calls that may run at once), when it
//! was last active, its owner, its peer for the calls served directly, and what its caller
//! was last shown of the tools.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard, OnceLock, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::{
    Peer, RoleServer,
    model::{ClientCapabilities, RequestId},
};

use super::asked::Asked;
use tokio::{
    sync::{OwnedSemaphorePermit, Semaphore},
    time::Instant,
};
use tokio_util::sync::CancellationToken;

/// What one session holds besides rmcp's worker.
#[derive(Debug)]
pub(super) struct Entry {
    state: Mutex<EntryState>,
    /// The session's calls that may run at once (`HttpOptions::max_calls_per_session`);
    /// a request over it waits, first come first served, for one to end.
    running: Arc<Semaphore>,
    /// The session's peer in rmcp's service, once the client said it is initialized, and
    /// what the client declared then (shared by its calls' streams, `call_stream.rs`).
    peer: OnceLock<(Peer<RoleServer>, Arc<ClientCapabilities>)>,
    /// What the session's caller was last shown of the tools (`Shown::fingerprint`), 0
    /// before any: a change sends `notifications/tools/list_changed`.
    shown: AtomicU64,
    /// The requests its calls made to the client, waiting for the answers (`asked.rs`);
    /// made with the first call that may ask (most sessions' memory stays as it was).
    asked: OnceLock<Arc<Asked>>,
}

#[derive(Debug)]
pub(super) struct EntryState {
    /// The requests in flight (running or waiting for their turn), by id.
    pub(super) in_flight: HashMap<RequestId, Slot>,
    /// Numbers the claims of `in_flight`.
    pub(super) claims: u64,
    /// The last request of the client or answer of the server.
    pub(super) last_active: Instant,
    /// The verified subject of the token that created the session (OAuth), once bound:
    /// the session answers only that subject.
    pub(super) owner: Option<String>,
}

/// One request in flight.
#[derive(Debug)]
pub(super) struct Slot {
    /// The number of its claim: a client may use an id again once it is free, and a late
    /// hang-up must not cancel the new request.
    pub(super) number: u64,
    /// Its turn among the calls that may run at once, once it has it; given back when the
    /// slot goes (answered, cancelled, hung up).
    turn: Option<OwnedSemaphorePermit>,
    /// Cancels a call served past rmcp (a `notifications/cancelled` for it, the session's
    /// end); rmcp cancels its own.
    pub(super) cancel: Option<CancellationToken>,
}

/// Why a request cannot be taken.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// A request with this id is in flight in the session.
    IdInUse,
    /// The calls that may run at once run, and the queue behind them is full.
    Full,
}

impl Entry {
    /// A session whose calls run `max_running` at a time.
    pub(super) fn new(max_running: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(EntryState {
                in_flight: HashMap::new(),
                claims: 0,
                last_active: Instant::now(),
                owner: None,
            }),
            running: Arc::new(Semaphore::new(max_running.max(1))),
            peer: OnceLock::new(),
            shown: AtomicU64::new(0),
            asked: OnceLock::new(),
        })
    }

    /// The requests the session's calls made to the client, waiting for answers.
    pub(super) fn asked(&self) -> &Arc<Asked> {
        self.asked.get_or_init(Arc::default)
    }

    /// The same, when a call of the session may have asked anything.
    pub(super) fn asked_if_any(&self) -> Option<&Arc<Asked>> {
        self.asked.get()
    }

    /// Records what the session's caller is shown now; what it was shown before, if
    /// anything.
    pub(super) fn swap_shown(&self, fingerprint: u64) -> Option<u64> {
        match self.shown.swap(fingerprint, Ordering::Relaxed) {
            0 => None,
            before => Some(before),
        }
    }

    /// The state; a panic elsewhere while holding the lock leaves sets that are still
    /// consistent (each change is one insert or remove), so a poisoned lock is used as is.
    pub(super) fn lock(&self) -> MutexGuard<'_, EntryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn touch(&self) {
        self.lock().last_active = Instant::now();
    }

    /// Records request `id` as in flight, unless its id is in use or `max_in_flight`
    /// requests (running and waiting) are in flight already; the claim's number.
    pub(super) fn claim(
        &self,
        id: &RequestId,
        max_in_flight: usize,
        cancel: Option<CancellationToken>,
    ) -> Result<u64, Refused> {
        let mut state = self.lock();
        state.last_active = Instant::now();
        if state.in_flight.contains_key(id) {
            return Err(Refused::IdInUse);
        }
        if state.in_flight.len() >= max_in_flight {
            return Err(Refused::Full);
        }
        state.claims += 1;
        let number = state.claims;
        state.in_flight.insert(
            id.clone(),
            Slot {
                number,
                turn: None,
                cancel,
            },
        );
        Ok(number)
    }

    /// Waits for claim `number` of `id` to have its turn among the calls that may run at
    /// once; `false` when the claim is gone meanwhile (cancelled, or the session ended).
    ///
    /// Cancel-safe: dropped while waiting, it holds nothing (the caller's claim guard gives
    /// the id back).
    pub(super) async fn take_turn(&self, id: &RequestId, number: u64) -> bool {
        let turn = match Arc::clone(&self.running).try_acquire_owned() {
            Ok(turn) => turn,
            Err(_) => {
                tracing::debug!(target: "fusion::transport", %id, "the request waits its turn: the session's calls in flight are at their cap");
                // Await: a turn. The semaphore is never closed.
                let Ok(turn) = Arc::clone(&self.running).acquire_owned().await else {
                    return false;
                };
                turn
            }
        };
        let mut state = self.lock();
        match state.in_flight.get_mut(id) {
            Some(slot) if slot.number == number => {
                slot.turn = Some(turn);
                true
            }
            // Dropping `turn` passes it to the next in line.
            _ => false,
        }
    }

    /// How many requests are in flight (running or waiting for their turn).
    pub(super) fn in_flight(&self) -> usize {
        self.lock().in_flight.len()
    }

    /// The call `id` was answered (or cancelled): its id is free again, and its turn passes
    /// to the next in line.
    pub(super) fn finish(&self, id: &RequestId) {
        let slot = {
            let mut state = self.lock();
            state.last_active = Instant::now();
            state.in_flight.remove(id)
        };
        if let Some(cancel) = slot.and_then(|slot| slot.cancel) {
            cancel.cancel();
        }
    }

    /// Gives back claim `number` on `id`, if the id still holds that claim; whether it did.
    pub(super) fn give_back(&self, id: &RequestId, number: u64) -> bool {
        let slot = {
            let mut state = self.lock();
            if state.in_flight.get(id).map(|slot| slot.number) != Some(number) {
                return false;
            }
            state.last_active = Instant::now();
            state.in_flight.remove(id)
        };
        if let Some(cancel) = slot.and_then(|slot| slot.cancel) {
            cancel.cancel();
        }
        true
    }

    /// Ends every request in flight (the session ended); the ids of those rmcp serves,
    /// for it to cancel (the others are cancelled here).
    pub(super) fn end_all(&self) -> Vec<RequestId> {
        let slots: Vec<(RequestId, Slot)> = self.lock().in_flight.drain().collect();
        slots
            .into_iter()
            .filter_map(|(id, slot)| match slot.cancel {
                Some(cancel) => {
                    cancel.cancel();
                    None
                }
                None => Some(id),
            })
            .collect()
    }

    pub(super) fn idle_for(&self, now: Instant) -> Option<Duration> {
        let state = self.lock();
        state
            .in_flight
            .is_empty()
            .then(|| now.saturating_duration_since(state.last_active))
    }

    /// Keeps the session's peer (the first one given: a session has one).
    pub(super) fn set_peer(&self, peer: &Peer<RoleServer>) {
        let _ = self.peer.get_or_init(|| {
            let declared = peer
                .peer_info()
                .map(|info| info.capabilities.clone())
                .unwrap_or_default();
            (peer.clone(), Arc::new(declared))
        });
    }

    /// The session's peer, once the client said it is initialized.
    pub(super) fn peer(&self) -> Option<&Peer<RoleServer>> {
        self.peer.get().map(|(peer, _)| peer)
    }

    /// What the session's client declared, once it said it is initialized.
    pub(super) fn capabilities(&self) -> Option<&Arc<ClientCapabilities>> {
        self.peer.get().map(|(_, declared)| declared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn calls_over_the_cap_wait_their_turn_and_the_queue_is_bounded() {
        let entry = Entry::new(1);
        let (a, b, c) = (
            RequestId::Number(1),
            RequestId::Number(2),
            RequestId::Number(3),
        );
        let first = entry.claim(&a, 2, None).expect("room");
        assert_eq!(entry.claim(&a, 2, None), Err(Refused::IdInUse));
        let second = entry.claim(&b, 2, None).expect("room in the queue");
        assert_eq!(entry.claim(&c, 2, None), Err(Refused::Full));
        assert!(entry.take_turn(&a, first).await);
        let waiting = entry.take_turn(&b, second);
        tokio::pin!(waiting);
        assert!(
            futures_util::poll!(&mut waiting).is_pending(),
            "one runs at a time"
        );
        entry.finish(&a);
        assert!(waiting.await, "the turn passed on");
        assert_eq!(entry.in_flight(), 1);
    }

    #[tokio::test]
    async fn a_claim_given_back_while_waiting_takes_no_turn() {
        let entry = Entry::new(1);
        let (a, b) = (RequestId::Number(1), RequestId::Number(2));
        let first = entry.claim(&a, 4, None).expect("room");
        assert!(entry.take_turn(&a, first).await);
        let cancel = CancellationToken::new();
        let second = entry.claim(&b, 4, Some(cancel.clone())).expect("room");
        assert!(entry.give_back(&b, second));
        assert!(
            cancel.is_cancelled(),
            "a call served here is cancelled with its claim"
        );
        entry.finish(&a);
        assert!(!entry.take_turn(&b, second).await);
        assert_eq!(entry.in_flight(), 0);
        // The turn `b` did not keep is free for the next request.
        let third = entry.claim(&b, 4, None).expect("room");
        assert!(entry.take_turn(&b, third).await);
    }
}
