//! Where tasks are kept: [`TaskStore`], and the in-memory [`MemoryTaskStore`] (bounded:
//! finished tasks expire, and a cap refuses new tasks once full).

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use rmcp::model::TaskStatus;
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
        }
    }

    /// Ends the task with `status` and its payload; it expires one TTL from now.
    pub fn finish(&mut self, status: TaskStatus, result: Option<Value>, error: Option<Value>) {
        self.status = status;
        self.result = result;
        self.error = error;
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

/// Where tasks are kept. The in-memory [`MemoryTaskStore`] is the default; several
/// replicas share one by implementing this over a shared database, so that `tasks/get`
/// answers on any replica. (The work itself, and the answers a parked task waits for,
/// stay on the replica that runs it.)
///
/// Every method must be cancel-safe: a future dropped before it resolves leaves the store
/// as it was or with the whole change made, never half of it.
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps a new task; refuses it when the store is full.
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreFull>>;
    /// The task with this id, unless unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<TaskRecord>>;
    /// Replaces a task's record (a task the store forgot stays forgotten).
    fn update(&self, record: TaskRecord) -> BoxFuture<'_, ()>;
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
    /// store.insert(TaskRecord::working("a", ttl, ttl)).await.unwrap();
    /// assert!(store.insert(TaskRecord::working("b", ttl, ttl)).await.is_err());
    /// assert!(store.get("a").await.is_some());
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
    fn insert(&self, record: TaskRecord) -> BoxFuture<'_, Result<(), StoreFull>> {
        let mut records = self.lock();
        records.retain(|_, record| !record.is_expired());
        let inserted = if records.len() >= self.capacity {
            Err(StoreFull(self.capacity))
        } else {
            records.insert(record.id.clone(), record);
            Ok(())
        };
        Box::pin(std::future::ready(inserted))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<TaskRecord>> {
        let found = self
            .lock()
            .get(id)
            .filter(|record| !record.is_expired())
            .cloned();
        Box::pin(std::future::ready(found))
    }

    fn update(&self, record: TaskRecord) -> BoxFuture<'_, ()> {
        if let Some(stored) = self.lock().get_mut(&record.id) {
            *stored = record;
        }
        Box::pin(std::future::ready(()))
    }
}

fn now_ms() -> u64 {
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
        store.insert(record.clone()).await.expect("room");
        record.finish(TaskStatus::Completed, Some(serde_json::json!({})), None);
        store.update(record).await;
        assert!(store.get("a").await.is_none(), "expired at once");
        store
            .insert(TaskRecord::working("b", Duration::ZERO, Duration::ZERO))
            .await
            .expect("the expired task made room");
    }
}
