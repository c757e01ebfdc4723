//! What the runners, the sweeper and the handlers of `tasks/*` share on one replica: the
//! store, the tasks this process runs, and whether it still takes new ones.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, atomic::AtomicBool},
};

use tokio_util::sync::CancellationToken;

use super::store::TaskStore;
use crate::rounds::questions::InputState;

/// The state of a replica's tasks.
pub(crate) struct Shared {
    pub(super) store: Arc<dyn TaskStore>,
    running: Mutex<HashMap<String, Running>>,
    /// This process's name in runner tokens (random).
    replica: String,
    /// Cleared when the process stops: no new task starts here.
    pub(super) accepting: AtomicBool,
}

/// A task this process runs: how to cancel it, where its questions wait, how its runner
/// is told that something was sent to it, and how it is stopped for a hand-over.
pub(super) struct Running {
    pub(super) cancel: CancellationToken,
    pub(super) input: Arc<InputState>,
    pub(super) poke: Arc<tokio::sync::Notify>,
    pub(super) stop: CancellationToken,
}

impl Shared {
    pub(super) fn new(store: Arc<dyn TaskStore>, replica: String) -> Self {
        Self {
            store,
            running: Mutex::default(),
            replica,
            accepting: AtomicBool::new(true),
        }
    }

    /// The tasks this process runs, by id.
    pub(super) fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        // Nothing panics while holding it.
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A token naming one run of a task on this replica.
    pub(super) fn runner_token(&self) -> String {
        format!("{}:{:016x}", self.replica, fastrand::u64(..))
    }
}
