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
    /// Told of each status a task this replica runs takes (`notifications/tasks`).
    pub(super) status: std::sync::OnceLock<StatusListener>,
}

/// Called with a task's record each time its status changes.
pub(crate) type StatusListener = Arc<dyn Fn(&super::TaskRecord) + Send + Sync>;

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
            status: std::sync::OnceLock::new(),
        }
    }

    /// Tells the listener, if there is one, that task `record` now has its status.
    pub(super) fn told(&self, record: &super::TaskRecord) {
        if let Some(listener) = self.status.get() {
            listener(record);
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
