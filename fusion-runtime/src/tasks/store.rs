//! Where tasks are kept: [`TaskStore`], and the in-memory [`MemoryTaskStore`] (bounded:
//! finished tasks expire, and a cap refuses new tasks once full).
//!
//! A store shared by a fleet (Redis: [`RedisStore`](crate::redis::RedisStore)) also carries
//! what lets any replica answer for any task and take over the work of one that died: a
//! lease per running task, the cancels and answers sent to a task, and the list of tasks
//! whose runner stopped renewing. The trait's defaults for those fit a single process.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rmcp::model::{InputRequests, TaskStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::future::BoxFuture;

/// One task as stored: what `tasks/get` reports. Serializable, so a shared store (a
/// database, a cache) can keep it as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The task's id (random, unguessable).
    pub id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A message about where it stands, for the user.
    pub status_message: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub last_updated_at: String,
    /// How long it is kept from its creation, and at least this long after it ends.
    pub ttl_ms: u64,
    /// The interval clients are asked to poll at.
    pub poll_interval_ms: u64,
    /// The tool's result (`CallToolResult`), once completed.
    pub result: Option<Value>,
    /// The JSON-RPC error, once failed.
    pub error: Option<Value>,
    /// When the store may forget it (Unix milliseconds); `None` while it runs.
    pub expires_at_ms: Option<u64>,
    /// Who created it: the OAuth subject, when the call had one. Only the same caller
    /// reaches it; `None`: whoever knows the (unguessable) id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The tool called, as the client named it.
    #[serde(default)]
    pub tool: String,
    /// The call's arguments: what another replica runs again when it takes the task over.
    #[serde(default)]
    pub arguments: Value,
    /// The verified token's claims, for the middleware of a run taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claims: Option<Value>,
    /// What the client declared it can answer (`ClientCapabilities`), for the questions of
    /// a run taken over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Value>,
    /// Whether running the tool again is safe (it is read-only or idempotent, or it has an
    /// idempotency key): a task whose runner died is then run again elsewhere, else it
    /// fails with an unknown outcome.
    #[serde(default)]
    pub rerunnable: bool,
    /// The questions the task waits on (`input_required`).
    #[serde(default, skip_serializing_if = "InputRequests::is_empty")]
    pub input_requests: InputRequests,
    /// How many times its work started (more than once after a take-over).
    #[serde(default)]
    pub runs: u32,
}

impl TaskRecord {
    /// A task just created, working.
    pub fn working(id: impl Into<String>, ttl: Duration, poll_interval: Duration) -> Self {
        let now = now_rfc3339();
        Self {
            id: id.into(),
            status: TaskStatus::Working,
            status_message: None,
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            poll_interval_ms: u64::try_from(poll_interval.as_millis()).unwrap_or(u64::MAX),
            result: None,
            error: None,
            expires_at_ms: None,
            owner: None,
            tool: String::new(),
            arguments: Value::Null,
            claims: None,
            capabilities: None,
            rerunnable: false,
            input_requests: InputRequests::new(),
            runs: 1,
        }
    }

    /// Whether it ended (completed, failed or cancelled).
    pub fn is_finished(&self) -> bool {
        matches!(
            self.status,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// Ends the task with `status` and its payload; it expires one TTL from now.
    pub fn finish(&mut self, status: TaskStatus, result: Option<Value>, error: Option<Value>) {
        self.status = status;
        self.result = result;
        self.error = error;
        self.input_requests.clear();
        self.last_updated_at = now_rfc3339();
        self.expires_at_ms = Some(now_ms().saturating_add(self.ttl_ms));
    }

    /// Whether it ended and its time is up.
    pub fn is_expired(&self) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms())
    }
}

/// The store was full: no task could be created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the server holds as many tasks as it may ({0}); try again when some have finished")]
pub struct StoreFull(pub usize);

/// Why a task store could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store holds as many tasks as it may, in all.
    #[error(transparent)]
    Full(#[from] StoreFull),
    /// The caller holds as many unfinished and unexpired tasks as one caller may.
    #[error("you hold as many tasks as one caller may ({0}); try again when some have finished")]
    CallerFull(usize),
    /// The store cannot be reached now (a network store that is down): try again later.
    #[error("the task store is unreachable right now: {0}")]
    Unavailable(String),
}

/// What was sent to a task from any replica, for its runner to act on.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct TaskSignals {
    /// `tasks/cancel` was asked.
    pub cancel: bool,
    /// Every answer `tasks/update` brought so far, by question key.
    pub answers: std::collections::BTreeMap<String, Value>,
}

/// One thing sent to a task ([`TaskStore::signal`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskSignal {
    /// Stop the work.
    Cancel,
    /// Answers to its questions, by key.
    Answers(Vec<(String, Value)>),
}

/// Called with a task's id when something was sent to it ([`TaskStore::subscribe`]).
pub type SignalListener = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// Where tasks are kept. The in-memory [`MemoryTaskStore`] is the default; a fleet shares
/// [`RedisStore`](crate::redis::RedisStore), so that every replica answers for every task
/// and takes over the work of a replica that died.
///
/// The first three methods are all a store for one process needs. A shared store also
/// implements the rest: each running task has a lease held by its runner (`runner` is a
/// token naming one run on one replica), renewed while it runs; a task whose lease lapsed
/// is an orphan that another replica takes over; cancels and answers reach the runner
/// through [`signal`](Self::signal) and [`subscribe`](Self::subscribe).
///
/// Every method must be cancel-safe: a future dropped before it resolves leaves the store
/// as it was or with the whole change made, never half of it.
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps a new task, held by `runner` (its lease starts now); refuses it when the
    /// store is full, in all or for the task's owner.
    fn insert<'a>(
        &'a self,
        record: TaskRecord,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>>;
    /// The task with this id, unless unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>>;
    /// Replaces the record of a task `runner` runs, if it still holds the task; `false`
    /// when it does not (another replica took it over). A task the store forgot stays
    /// forgotten. Ending the task ends its lease.
    fn update<'a>(
        &'a self,
        record: TaskRecord,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>>;

    /// Whether other processes share this store: leases, orphans and signals are then
    /// in use. `false` by default.
    fn is_shared(&self) -> bool {
        false
    }
    /// How long a lease lasts without renewal (renewed every third of it).
    fn lease_duration(&self) -> Duration {
        Duration::from_secs(10)
    }
    /// Extends `runner`'s lease on task `id`; `false` when it lost the task.
    fn renew<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let _ = (id, runner);
        Box::pin(std::future::ready(Ok(true)))
    }
    /// Takes the lease of an orphan for `runner`; `false` when another replica was first.
    fn acquire<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let _ = (id, runner);
        Box::pin(std::future::ready(Ok(false)))
    }
    /// Gives up `runner`'s lease on task `id` at once (a replica stopping): the task is an
    /// orphan from now on.
    fn release<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let _ = (id, runner);
        Box::pin(std::future::ready(Ok(())))
    }
    /// The unfinished tasks whose lease lapsed: their runner died.
    fn orphans(&self) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }
    /// Sends `signal` to task `id`, wherever it runs (and keeps it, for a runner that takes
    /// the task over).
    fn signal<'a>(
        &'a self,
        id: &'a str,
        signal: TaskSignal,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let _ = (id, signal);
        Box::pin(std::future::ready(Ok(())))
    }
    /// Everything sent to task `id` so far.
    fn signals<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskSignals, TaskStoreError>> {
        let _ = id;
        Box::pin(std::future::ready(Ok(TaskSignals::default())))
    }
    /// A future that calls `listener` with a task's id whenever something is sent to it,
    /// until dropped; `None` when the store has no such channel (runners then look at
    /// [`signals`](Self::signals) when they renew their lease).
    fn subscribe(&self, listener: SignalListener) -> Option<BoxFuture<'static, ()>> {
        let _ = listener;
        None
    }
}

/// The in-process store: at most `capacity` tasks; a finished task is forgotten one TTL
/// after it ends.
pub struct MemoryTaskStore {
    capacity: usize,
    records: Mutex<HashMap<String, TaskRecord>>,
}

impl MemoryTaskStore {
    /// The default capacity: 1,000 tasks.
    pub const DEFAULT_CAPACITY: usize = 1_000;

    /// A store of at most `capacity` tasks.
    ///
    /// ```
    /// use fusion_runtime::tasks::{MemoryTaskStore, TaskRecord, TaskStore};
    /// use std::time::Duration;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = MemoryTaskStore::new(1);
    /// let ttl = Duration::from_secs(60);
    /// // The runner's token: a store of one process has no leases and ignores it.
    /// store.insert(TaskRecord::working("a", ttl, ttl), "runner").await.unwrap();
    /// assert!(store.insert(TaskRecord::working("b", ttl, ttl), "runner").await.is_err());
    /// assert!(store.get("a").await.unwrap().is_some());
    /// # });
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            records: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        // Nothing panics while holding it; a poisoned map is still consistent.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        Self::new(Self::DEFAULT_CAPACITY)
    }
}

impl TaskStore for MemoryTaskStore {
    fn insert<'a>(
        &'a self,
        record: TaskRecord,
        _runner: &'a str,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let mut records = self.lock();
        records.retain(|_, record| !record.is_expired());
        let inserted = if records.len() >= self.capacity {
            Err(StoreFull(self.capacity).into())
        } else {
            records.insert(record.id.clone(), record);
            Ok(())
        };
        Box::pin(std::future::ready(inserted))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let found = self
            .lock()
            .get(id)
            .filter(|record| !record.is_expired())
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update<'a>(
        &'a self,
        record: TaskRecord,
        _runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let kept = match self.lock().get_mut(&record.id) {
            Some(stored) => {
                *stored = record;
                true
            }
            None => false,
        };
        Box::pin(std::future::ready(Ok(kept)))
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn now_rfc3339() -> String {
    chrono::DateTime::<chrono::Utc>::from(SystemTime::now())
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finished_tasks_expire_and_free_their_place() {
        let store = MemoryTaskStore::new(1);
        let mut record = TaskRecord::working("a", Duration::ZERO, Duration::ZERO);
        store.insert(record.clone(), "r").await.expect("room");
        record.finish(TaskStatus::Completed, Some(serde_json::json!({})), None);
        assert_eq!(store.update(record, "r").await, Ok(true));
        assert_eq!(store.get("a").await, Ok(None), "expired at once");
        store
            .insert(
                TaskRecord::working("b", Duration::ZERO, Duration::ZERO),
                "r",
            )
            .await
            .expect("the expired task made room");
    }
}
