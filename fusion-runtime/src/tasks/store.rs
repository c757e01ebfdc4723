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

use crate::{future::BoxFuture, json_cost::json_bytes};

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
    /// How long it is kept after its last activity: its end, or the last time its client
    /// read it (`tasks/get`), at most [`MAX_KEPT_TTLS`] of it after its end. A running
    /// task is never expired.
    pub ttl_ms: u64,
    /// The interval clients are asked to poll at.
    pub poll_interval_ms: u64,
    /// The tool's result (`CallToolResult`), once completed.
    pub result: Option<Value>,
    /// The JSON-RPC error, once failed.
    pub error: Option<Value>,
    /// When the store may forget it (Unix milliseconds); `None` while it runs.
    pub expires_at_ms: Option<u64>,
    /// When it ended (Unix milliseconds); `None` while it runs. Records written before
    /// this field existed end one TTL before they expire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at_ms: Option<u64>,
    /// Who created it: the OAuth subject, when the call had one. Only the same caller
    /// reaches it; `None`: whoever knows the (unguessable) id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Who asked for it, for the per-caller cap: `sub:<subject>` under OAuth, else
    /// `session:<id>`; `None` when the call named neither (a stateless request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requestor: Option<String>,
    /// The HTTP session that created it (before 2026-07-28), told of each change of its
    /// status (`notifications/tasks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
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
    /// Whether running the tool again is safe (it is read-only or idempotent): a task
    /// whose runner died is then run again elsewhere, else it fails with an unknown
    /// outcome (an idempotency key alone does not make it safe).
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
            ended_at_ms: None,
            owner: None,
            requestor: None,
            session: None,
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
        let now = now_ms();
        self.ended_at_ms = Some(now);
        self.expires_at_ms = Some(now.saturating_add(self.ttl_ms));
    }

    /// The record its client just read, kept one TTL from now (at most [`MAX_KEPT_TTLS`]
    /// of it after its end): `None` when that moves its expiry by less than a tenth of its
    /// TTL (not worth a write), or when it runs (it does not expire then).
    pub fn read_again(&self) -> Option<TaskRecord> {
        let ended = self.finished_at_ms()?;
        let expires = self.expires_at_ms?;
        let cap = ended.saturating_add(self.ttl_ms.saturating_mul(MAX_KEPT_TTLS));
        let kept_to = now_ms().saturating_add(self.ttl_ms).min(cap);
        (kept_to >= expires.saturating_add(self.ttl_ms / 10) && kept_to > expires).then(|| {
            let mut read = self.clone();
            read.expires_at_ms = Some(kept_to);
            read.ended_at_ms = Some(ended);
            read
        })
    }

    /// Whether it ended and its time is up.
    pub fn is_expired(&self) -> bool {
        self.expires_at_ms.is_some_and(|at| at <= now_ms())
    }

    /// When it ended (Unix milliseconds), if it did.
    pub fn finished_at_ms(&self) -> Option<u64> {
        self.ended_at_ms
            .or_else(|| self.expires_at_ms.map(|at| at.saturating_sub(self.ttl_ms)))
            .filter(|_| self.is_finished())
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
    /// Keeps a new task, held by `runner` (its lease starts now), and returns the lease's
    /// fencing token; refuses it when the store is full, in all or for the task's owner.
    fn insert<'a>(
        &'a self,
        record: TaskRecord,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<u64, TaskStoreError>>;
    /// The task with this id, unless unknown or expired.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>>;
    /// Replaces the record of a task `runner` runs, if it still holds the task; `false`
    /// when it does not (another replica took it over since, or the task ended). A
    /// runner whose lease lapsed while nobody took the task over still holds it: the
    /// check is on the newest holder (its fencing token), not on the lease's clock. A
    /// task the store forgot stays forgotten. Ending the task ends its lease, and no
    /// update changes it after that.
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
    /// Extends `runner`'s lease on task `id` (sets it again if it lapsed while nobody
    /// took the task over); `false` when it lost the task.
    fn renew<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let _ = (id, runner);
        Box::pin(std::future::ready(Ok(true)))
    }
    /// Takes the lease of an orphan for `runner`, with a fencing token larger than any
    /// earlier holder's: from then on, only `runner` may update the task. `None` when
    /// another replica was first.
    fn acquire<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, TaskStoreError>> {
        let _ = (id, runner);
        Box::pin(std::future::ready(Ok(None)))
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
    /// Keeps a finished task its client just read for longer: replaces `read` (the record
    /// as [`get`](Self::get) returned it) with `kept` (the same with a later
    /// `expires_at_ms`, [`TaskRecord::read_again`]) unless the record changed since. A
    /// store that does nothing here keeps a task one TTL from its end.
    fn touch<'a>(
        &'a self,
        read: &'a TaskRecord,
        kept: &'a TaskRecord,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        let _ = (read, kept);
        Box::pin(std::future::ready(Ok(())))
    }
    /// A future that calls `listener` with a task's id whenever something is sent to it,
    /// until dropped; `None` when the store has no such channel (runners then look at
    /// [`signals`](Self::signals) when they renew their lease).
    fn subscribe(&self, listener: SignalListener) -> Option<BoxFuture<'static, ()>> {
        let _ = listener;
        None
    }
}

/// A finished task is kept one TTL after it was last read, and never more than this many
/// TTLs after it ended, however often it is read.
pub const MAX_KEPT_TTLS: u64 = 10;

/// How long a finished task whose result nobody read still counts against its caller's
/// cap: a client that polls gets its result within this, and a client that never polls
/// cannot hold its place for the whole TTL.
pub const FINISHED_GRACE: Duration = Duration::from_secs(10);

/// The in-process store, bounded three ways:
/// - at most `capacity` tasks in all: when full, the task that finished first is forgotten
///   to make room (before its TTL); only a store full of running tasks refuses a new one;
/// - at most `per_caller` tasks held by one caller (an OAuth subject, else a session):
///   running ones, and finished ones until their result is read or for
///   [`FINISHED_GRACE`];
/// - at most `max_bytes` of records (arguments and results), finished ones forgotten
///   first in the same way.
///
/// A finished task is forgotten one TTL after it ends, if nothing made room before.
pub struct MemoryTaskStore {
    capacity: usize,
    per_caller: usize,
    max_bytes: usize,
    records: Mutex<HashMap<String, Kept>>,
    /// The last fencing token handed out.
    fences: std::sync::atomic::AtomicU64,
}

/// A record as kept, with what it costs and whether its result was read.
struct Kept {
    record: TaskRecord,
    bytes: usize,
    read: bool,
}

impl Kept {
    fn new(record: TaskRecord) -> Self {
        let bytes = record_bytes(&record);
        Self {
            record,
            bytes,
            read: false,
        }
    }

    /// Whether it counts against its caller's cap at `now`.
    fn holds_a_place(&self, now: u64) -> bool {
        match self.record.finished_at_ms() {
            None => true,
            Some(at) => !self.read && now < at.saturating_add(millis(FINISHED_GRACE)),
        }
    }
}

impl MemoryTaskStore {
    /// The default capacity: 1,000 tasks.
    pub const DEFAULT_CAPACITY: usize = 1_000;
    /// The default cap per caller: 100 tasks.
    pub const DEFAULT_PER_CALLER: usize = 100;
    /// The default bound on what records take: 64 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

    /// A store of at most `capacity` tasks, with the default cap per caller and bytes.
    ///
    /// ```
    /// use fusion_runtime::tasks::{MemoryTaskStore, TaskRecord, TaskStore};
    /// use std::time::Duration;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = MemoryTaskStore::new(1).per_caller(10).max_bytes(1 << 20);
    /// let ttl = Duration::from_secs(60);
    /// // The runner's token: a store of one process has no leases and ignores it.
    /// store.insert(TaskRecord::working("a", ttl, ttl), "runner").await.unwrap();
    /// // Full of running tasks: the next is refused.
    /// assert!(store.insert(TaskRecord::working("b", ttl, ttl), "runner").await.is_err());
    /// assert!(store.get("a").await.unwrap().is_some());
    /// # });
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            per_caller: Self::DEFAULT_PER_CALLER,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            records: Mutex::new(HashMap::new()),
            fences: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// At most `tasks` held by one caller at once (at least 1).
    pub fn per_caller(mut self, tasks: usize) -> Self {
        self.per_caller = tasks.max(1);
        self
    }

    /// Records (their arguments and results, as their JSON text would take) up to
    /// `bytes`; finished ones are forgotten first to stay within it.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Kept>> {
        // Nothing panics while holding it; a poisoned map is still consistent.
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets the tasks that finished first until `records` has room for one more task
    /// of `bytes` (none when `bytes` is 0 and only the byte bound is to be held); `false`
    /// when only running tasks are left and there is still no room.
    fn make_room(&self, records: &mut HashMap<String, Kept>, adding: Option<usize>) -> bool {
        let extra = adding.unwrap_or(0);
        let count_limit = if adding.is_some() {
            self.capacity - 1
        } else {
            self.capacity
        };
        let mut total: usize = records.values().map(|kept| kept.bytes).sum();
        while records.len() > count_limit || total.saturating_add(extra) > self.max_bytes {
            let oldest = records
                .iter()
                .filter_map(|(id, kept)| Some((kept.record.finished_at_ms()?, id)))
                .min()
                .map(|(_, id)| id.clone());
            let Some(kept) = oldest.and_then(|id| records.remove(&id)) else {
                return false;
            };
            total = total.saturating_sub(kept.bytes);
        }
        true
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
    ) -> BoxFuture<'a, Result<u64, TaskStoreError>> {
        let mut records = self.lock();
        records.retain(|_, kept| !kept.record.is_expired());
        let now = now_ms();
        let caller_full = record.requestor.as_ref().is_some_and(|requestor| {
            let held = records
                .values()
                .filter(|kept| kept.record.requestor.as_ref() == Some(requestor))
                .filter(|kept| kept.holds_a_place(now))
                .count();
            held >= self.per_caller
        });
        let kept = Kept::new(record);
        let inserted = if caller_full {
            Err(TaskStoreError::CallerFull(self.per_caller))
        } else if !self.make_room(&mut records, Some(kept.bytes)) {
            Err(StoreFull(self.capacity).into())
        } else {
            records.insert(kept.record.id.clone(), kept);
            // One process: nobody else ever holds a task, so the token only has to be
            // there (and distinct).
            Ok(self
                .fences
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1)
        };
        Box::pin(std::future::ready(inserted))
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        let mut records = self.lock();
        let found = records
            .get_mut(id)
            .filter(|kept| !kept.record.is_expired())
            .map(|kept| {
                // A finished task read: its caller's place is free again.
                kept.read |= kept.record.is_finished();
                kept.record.clone()
            });
        Box::pin(std::future::ready(Ok(found)))
    }

    fn update<'a>(
        &'a self,
        record: TaskRecord,
        _runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        let mut records = self.lock();
        let kept = match records.get_mut(&record.id) {
            Some(stored) => {
                let read = stored.read;
                *stored = Kept::new(record);
                stored.read = read;
                true
            }
            None => false,
        };
        // A result may have grown the records past the byte bound.
        self.make_room(&mut records, None);
        Box::pin(std::future::ready(Ok(kept)))
    }

    fn touch<'a>(
        &'a self,
        read: &'a TaskRecord,
        kept: &'a TaskRecord,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        if let Some(stored) = self.lock().get_mut(&read.id)
            && stored.record.expires_at_ms == read.expires_at_ms
        {
            stored.record.expires_at_ms = kept.expires_at_ms;
            stored.record.ended_at_ms = kept.ended_at_ms;
        }
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What a record costs in memory: its arguments, result, error and claims, plus its
/// fixed fields.
fn record_bytes(record: &TaskRecord) -> usize {
    const FIXED: usize = 512;
    let optional = |value: &Option<Value>| value.as_ref().map_or(0, json_bytes);
    FIXED
        + record.id.len()
        + record.tool.len()
        + record.status_message.as_ref().map_or(0, String::len)
        + json_bytes(&record.arguments)
        + optional(&record.result)
        + optional(&record.error)
        + optional(&record.claims)
        + optional(&record.capabilities)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
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

    const MINUTE: Duration = Duration::from_secs(60);

    fn record(id: &str, requestor: Option<&str>) -> TaskRecord {
        let mut record = TaskRecord::working(id, MINUTE, MINUTE);
        record.requestor = requestor.map(str::to_owned);
        record
    }

    async fn finish(store: &MemoryTaskStore, mut record: TaskRecord, result: Value) {
        record.finish(TaskStatus::Completed, Some(result), None);
        assert_eq!(store.update(record, "r").await, Ok(true));
    }

    #[tokio::test]
    async fn a_finished_task_read_again_is_kept_a_ttl_from_then_within_ten_ttls_of_its_end() {
        let store = MemoryTaskStore::new(8);
        let mut record = TaskRecord::working("a", MINUTE, MINUTE);
        assert_eq!(record.read_again(), None, "a running task does not expire");
        store.insert(record.clone(), "r").await.expect("room");
        record.finish(TaskStatus::Completed, Some(serde_json::json!({})), None);
        // Ended five minutes ago, kept for ten seconds more: a read keeps it a minute from
        // now.
        let now = now_ms();
        record.ended_at_ms = Some(now - 5 * 60_000);
        record.expires_at_ms = Some(now + 10_000);
        assert_eq!(store.update(record.clone(), "r").await, Ok(true));
        let read = store.get("a").await.expect("found").expect("kept");
        let kept = read
            .read_again()
            .expect("moved by more than a tenth of its TTL");
        store.touch(&read, &kept).await.expect("touched");
        let expiry = store
            .get("a")
            .await
            .expect("found")
            .expect("kept")
            .expires_at_ms;
        assert_eq!(expiry, kept.expires_at_ms);
        assert!(
            expiry > read.expires_at_ms,
            "{expiry:?} after {:?}",
            read.expires_at_ms
        );
        assert_eq!(
            kept.read_again(),
            None,
            "read again at once: not worth a write"
        );
        // A touch of a record that changed since it was read changes nothing.
        store.touch(&read, &read).await.expect("touched");
        assert_eq!(
            store
                .get("a")
                .await
                .expect("found")
                .expect("kept")
                .expires_at_ms,
            expiry
        );
        // Ten TTLs after its end, a read keeps it no longer.
        let mut capped = kept.clone();
        capped.ended_at_ms = capped.ended_at_ms.map(|at| at - 10 * 60_000);
        assert_eq!(capped.read_again(), None, "at its cap");
    }

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

    #[tokio::test]
    async fn a_full_store_forgets_the_task_that_finished_first_and_refuses_only_when_all_run() {
        let store = MemoryTaskStore::new(3);
        for id in ["a", "b", "c"] {
            store.insert(record(id, None), "r").await.expect("room");
        }
        assert_eq!(
            store.insert(record("d", None), "r").await,
            Err(TaskStoreError::Full(StoreFull(3))),
            "three running"
        );
        finish(&store, record("b", None), serde_json::json!({})).await;
        // Ends are kept to the millisecond: "a" ends in a later one.
        tokio::time::sleep(Duration::from_millis(5)).await;
        finish(&store, record("a", None), serde_json::json!({})).await;
        store
            .insert(record("d", None), "r")
            .await
            .expect("room made");
        assert_eq!(store.get("b").await, Ok(None), "finished first, forgotten");
        assert!(store.get("a").await.expect("in memory").is_some(), "kept");
        assert!(
            store.get("c").await.expect("in memory").is_some(),
            "running"
        );
    }

    #[tokio::test]
    async fn a_caller_holds_its_running_tasks_and_its_unread_results_only() {
        let store = MemoryTaskStore::new(100).per_caller(2);
        let alice = Some("sub:alice");
        store.insert(record("a1", alice), "r").await.expect("first");
        store
            .insert(record("a2", alice), "r")
            .await
            .expect("second");
        assert_eq!(
            store.insert(record("a3", alice), "r").await,
            Err(TaskStoreError::CallerFull(2))
        );
        store
            .insert(record("b1", Some("sub:bob")), "r")
            .await
            .expect("bob is not alice");
        store
            .insert(record("n1", None), "r")
            .await
            .expect("no caller");
        // Finished and unread: still hers, for the grace.
        finish(&store, record("a1", alice), serde_json::json!({})).await;
        assert!(store.insert(record("a3", alice), "r").await.is_err());
        // Read: her place is free again, and the result still there.
        assert!(store.get("a1").await.expect("in memory").is_some());
        store.insert(record("a3", alice), "r").await.expect("freed");
        assert!(store.get("a1").await.expect("in memory").is_some());
    }

    #[tokio::test]
    async fn records_are_bounded_by_bytes_finished_ones_going_first() {
        let store = MemoryTaskStore::new(100).max_bytes(10_000);
        let big = serde_json::json!({"text": "x".repeat(4_000)});
        for id in ["a", "b"] {
            store.insert(record(id, None), "r").await.expect("room");
            finish(&store, record(id, None), big.clone()).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        store.insert(record("c", None), "r").await.expect("room");
        finish(&store, record("c", None), big.clone()).await;
        assert_eq!(store.get("a").await, Ok(None), "the oldest result went");
        assert!(store.get("c").await.expect("in memory").is_some());
        let total: usize = store.lock().values().map(|kept| kept.bytes).sum();
        assert!(total <= 10_000, "{total} bytes kept");
        let mut huge = record("h", None);
        huge.arguments = serde_json::json!("y".repeat(20_000));
        assert!(
            matches!(store.insert(huge, "r").await, Err(TaskStoreError::Full(_))),
            "a task over the whole bound is refused"
        );
    }
}
