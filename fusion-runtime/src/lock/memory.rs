//! [`MemoryLockStore`]: the locks of one process, a fair queue per key, forgotten once
//! nobody holds or waits for them.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use crate::future::BoxFuture;

use super::store::{LockGuard, LockStore, LockUnavailable};

/// The locks of one process (the default): one `tokio::sync::Mutex` per key, whose queue is
/// fair, so the calls of a key run in the order they asked for it.
///
/// A key is kept only while a call holds or waits for it: the map has one entry per key
/// in use, never more, whatever keys clients send. Clones share the locks.
///
/// ```
/// use fusion_runtime::lock::{LockStore, MemoryLockStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let locks = MemoryLockStore::new();
/// let held = locks.lock("deposit:a-1").await.expect("in memory, always");
/// assert_eq!(locks.active_keys(), 1);
/// drop(held);
/// assert_eq!(locks.active_keys(), 0);
/// # });
/// ```
#[derive(Clone, Debug, Default)]
pub struct MemoryLockStore {
    keys: Arc<Mutex<HashMap<String, Slot>>>,
}

/// One key in use: its lock, and how many calls hold or wait for it.
#[derive(Debug)]
struct Slot {
    lock: Arc<tokio::sync::Mutex<()>>,
    users: usize,
}

/// A call's claim on a key's slot, from its arrival to its release: the last one out
/// removes the key.
struct Ticket {
    keys: Arc<Mutex<HashMap<String, Slot>>>,
    key: String,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // The map is only ever changed by these short sections, which cannot panic:
        // a poisoned map is still consistent.
        let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = keys.get_mut(&self.key) {
            slot.users = slot.users.saturating_sub(1);
            if slot.users == 0 {
                keys.remove(&self.key);
            }
        }
    }
}

/// A held key: the mutex's guard first, then the ticket (fields drop in order), so the
/// slot is never removed while a guard of it is alive.
struct Held {
    _guard: tokio::sync::OwnedMutexGuard<()>,
    _ticket: Ticket,
}

impl MemoryLockStore {
    /// No key held.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many keys are held or waited for now (zero once every call has ended).
    pub fn active_keys(&self) -> usize {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many calls hold or wait for a key now, all keys together.
    pub fn active_calls(&self) -> usize {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(|slot| slot.users)
            .sum()
    }
}

impl LockStore for MemoryLockStore {
    fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<LockGuard, LockUnavailable>> {
        Box::pin(async move {
            let (lock, ticket) = {
                let mut keys = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
                let slot = keys.entry(key.to_owned()).or_insert_with(|| Slot {
                    lock: Arc::default(),
                    users: 0,
                });
                slot.users += 1;
                let ticket = Ticket {
                    keys: Arc::clone(&self.keys),
                    key: key.to_owned(),
                };
                (Arc::clone(&slot.lock), ticket)
            };
            // Await: the key's turn, in the mutex's fair queue. A drop here drops the
            // ticket, and the key goes with its last user.
            let guard = lock.lock_owned().await;
            Ok(LockGuard::new(Held {
                _guard: guard,
                _ticket: ticket,
            }))
        })
    }
}
