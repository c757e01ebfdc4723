//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a tool declared to
//! run as a task answers a call at once with a task id; the work goes on in the
//! background, through the same pipeline as any call (the tool's timeout, retries,
//! circuit breaker, middleware and idempotency key), and the client polls `tasks/get` for
//! its status and, once it ended, its result. `tasks/cancel` drops the work (its guards
//! release every policy's state); `tasks/update` answers the questions a task asks the
//! user or the client's model while it runs.
//!
//! A tool is declared with [`ServerBuilder::task_tool`](crate::ServerBuilder::task_tool):
//!
//! ```
//! use std::time::Duration;
//! use fusion_runtime::{prelude::*, tasks::Tasking};
//!
//! /// Builds the quarterly report (slow).
//! #[mcp_tool(read_only, timeout = "10m")]
//! async fn quarterly_report(quarter: u8) -> String {
//!     tokio::time::sleep(Duration::from_millis(10)).await;
//!     format!("Q{quarter}: all good")
//! }
//!
//! let server = Server::builder("reports", "1.0.0")
//!     .task_tool(quarterly_report, Tasking::optional())
//!     .build();
//! ```
//!
//! Tasks are kept in a [`TaskStore`] (in memory by default, bounded: [`MemoryTaskStore`]);
//! a client that disconnects and comes back polls the same task id and gets the result.
//!
//! A fleet keeps them on Redis ([`RedisStore`](crate::redis::RedisStore)): every replica
//! answers for every task, a cancel or an answer sent to any replica reaches the one that
//! runs the task, and the work of a replica that died is taken over (`takeover.rs`): run
//! again elsewhere when the tool is safe to run twice, else ended `failed` with an unknown
//! outcome. The runner of a task (`runner.rs`) holds a lease on it while it runs.

mod outcome;
mod runner;
mod shared;
mod store;
mod takeover;

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use rmcp::model::{
    CallToolResult, ContentBlock, DetailedTask, ErrorData, GetTaskResult, InputRequests,
    JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub(crate) use outcome::TaskOutcome;
#[cfg(feature = "redis")]
pub(crate) use store::now_ms;
pub use store::{
    FINISHED_GRACE, MAX_KEPT_TTLS, MemoryTaskStore, SignalListener, StoreFull, TaskRecord,
    TaskSignal, TaskSignals, TaskStore, TaskStoreError,
};
pub(crate) use takeover::Relaunch;

use shared::Shared;
pub(crate) use shared::StatusListener;

use crate::{future::BoxFuture, meta::FAILURE_META_KEY, rounds::questions::InputState};

/// How a tool runs as a task ([`ServerBuilder::task_tool`](crate::ServerBuilder::task_tool)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tasking {
    required: bool,
    started_by_tool: bool,
    /// When a call started by the tool becomes a task without the handler asking
    /// (`task_after`).
    after: Option<Duration>,
}

impl Tasking {
    /// A task when the client declared the tasks extension; an ordinary call otherwise.
    pub fn optional() -> Self {
        Self::default()
    }

    /// Only as a task: a client that did not declare the tasks extension gets the error
    /// `-32021` (missing required client capability) and the tool does not run.
    pub fn required() -> Self {
        Self {
            required: true,
            started_by_tool: false,
            after: None,
        }
    }

    /// The call runs as an ordinary call (asking the client through `input_required`
    /// rounds) until the handler calls [`Call::continue_as_task`](crate::Call::continue_as_task);
    /// from there on it is a task.
    pub fn started_by_tool(mut self) -> Self {
        self.started_by_tool = true;
        self
    }

    /// Whether the tool runs only as a task.
    pub fn is_required(&self) -> bool {
        self.required
    }

    /// Whether the handler decides when the task starts.
    pub fn is_started_by_tool(&self) -> bool {
        self.started_by_tool
    }

    /// How a tool known only after build (one a mounted upstream added) with a
    /// `task_after` runs: as an ordinary call until `after`, as the tools known at build
    /// with one do ([`Tasks::new`]).
    pub(crate) fn after(after: Duration) -> Self {
        Self {
            required: false,
            started_by_tool: true,
            after: Some(after),
        }
    }

    /// How long a call started by the tool may run before it becomes a task all the same
    /// (`task_after`), if it has such a deadline.
    pub(crate) fn deadline(&self) -> Option<Duration> {
        self.after.filter(|_| self.started_by_tool)
    }
}

/// The task settings a builder collects.
#[derive(Clone)]
pub(crate) struct TaskSettings {
    pub(crate) tools: HashMap<String, Tasking>,
    pub(crate) store: Option<Arc<dyn TaskStore>>,
    pub(crate) ttl: Duration,
    pub(crate) poll_interval: Duration,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            tools: HashMap::new(),
            store: None,
            ttl: Duration::from_secs(600),
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// What a builder collects for the 2026-07-28 revision: the request-state keys and tasks.
#[derive(Clone, Default)]
pub(crate) struct RevisionSettings {
    pub(crate) state_key: Option<StateKeys>,
    pub(crate) tasks: TaskSettings,
}

/// The keys that seal request states, as the builder was given them.
#[derive(Clone)]
pub(crate) enum StateKeys {
    /// `request_state_key(key)`.
    One([u8; 32]),
    /// `request_state_keys(current, previous)`.
    Ring {
        current: [u8; 32],
        previous: Vec<[u8; 32]>,
    },
}

/// The tasks of a built server: the store, and the tasks this process runs.
pub(crate) struct Tasks {
    tools: HashMap<String, Tasking>,
    ttl: Duration,
    poll_interval: Duration,
    shared: Arc<Shared>,
    /// The sweeper and the signal listener, once started (a shared store only).
    background: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// Where a task comes from: what a replica that takes it over needs to run it again, and
/// who may reach it.
pub(crate) struct TaskOrigin {
    pub(crate) tool: String,
    pub(crate) arguments: Value,
    pub(crate) owner: Option<String>,
    pub(crate) requestor: Option<String>,
    /// The HTTP session that created it, told of its status.
    pub(crate) session: Option<String>,
    pub(crate) claims: Option<Value>,
    pub(crate) capabilities: Option<Value>,
    pub(crate) rerunnable: bool,
    /// Where the task's work reads its fencing token (`Call::fencing_token`): set here
    /// once the store granted the runner's lease, before the work is first polled.
    pub(crate) fence: Arc<AtomicU64>,
}

impl Tasks {
    /// The tasks of a server: the tools registered as tasks, and those with a deadline
    /// (`task_after`, by tool name), which run as ordinary calls until it.
    pub(crate) fn new(
        settings: TaskSettings,
        deadlines: impl IntoIterator<Item = (&'static str, Duration)>,
    ) -> Self {
        let mut tools = settings.tools;
        for (name, after) in deadlines {
            let tasking = tools
                .entry(name.to_owned())
                .or_insert_with(|| Tasking::optional().started_by_tool());
            tasking.after = Some(after);
        }
        Self {
            tools,
            ttl: settings.ttl,
            poll_interval: settings.poll_interval,
            shared: Arc::new(Shared::new(
                settings
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryTaskStore::default())),
                task_id()[..12].to_owned(),
            )),
            background: Mutex::default(),
        }
    }

    /// Who is told each time a task this replica runs changes its status (once).
    pub(crate) fn on_status(&self, listener: StatusListener) {
        let _ = self.shared.status.set(listener);
    }

    /// Whether any tool runs as a task (the extension is advertised then).
    pub(crate) fn any(&self) -> bool {
        !self.tools.is_empty()
    }

    /// How `tool` runs as a task, if it does.
    pub(crate) fn tasking(&self, tool: &str) -> Option<Tasking> {
        self.tools.get(tool).copied()
    }

    /// Creates a task and starts `work` in the background; returns the task as created,
    /// once `tasks/get` finds it. `cancel` is the token `work`'s call watches; `input`
    /// is where its questions wait (parked from then on). A task the store refuses hands
    /// `work` back unstarted, for the caller to run as an ordinary call if it may.
    pub(crate) async fn start(
        &self,
        work: BoxFuture<'static, TaskOutcome>,
        cancel: CancellationToken,
        input: Arc<InputState>,
        origin: TaskOrigin,
    ) -> Result<Task, NotStarted> {
        if !self.shared.accepting.load(Ordering::SeqCst) {
            return Err(NotStarted {
                error: TaskStoreError::Unavailable(
                    "this replica is stopping and takes no new task".to_owned(),
                ),
                work,
            });
        }
        let mut record = TaskRecord::working(task_id(), self.ttl, self.poll_interval);
        record.tool = origin.tool;
        record.arguments = origin.arguments;
        record.owner = origin.owner;
        record.requestor = origin.requestor;
        record.claims = origin.claims;
        record.capabilities = origin.capabilities;
        record.rerunnable = origin.rerunnable;
        record.session = origin.session;
        let runner = self.shared.runner_token();
        // Await: the store's insert, which starts the runner's lease. A drop here drops
        // `work` unstarted (its guards were never taken); a record already inserted is an
        // orphan once the lease lapses, and is taken over or ended as any other.
        match self.shared.store.insert(record.clone(), &runner).await {
            Ok(fence) => origin.fence.store(fence, Ordering::Release),
            Err(error) => return Err(NotStarted { error, work }),
        }
        input.park();
        let task = task_of(&record);
        runner::launch(
            &self.shared,
            runner::Launch {
                record,
                runner,
                work,
                cancel,
                input,
            },
        );
        Ok(task)
    }

    /// `tasks/get` by `caller` (the OAuth subject, if any): the task with its payload.
    pub(crate) async fn get(
        &self,
        id: &str,
        caller: Option<&str>,
    ) -> Result<GetTaskResult, ErrorData> {
        let record = self.find(id, caller).await?;
        // Read by its client: a finished task is kept one TTL from now (within its cap).
        if let Some(kept) = record.read_again()
            && let Err(error) = self.shared.store.touch(&record, &kept).await
        {
            tracing::debug!(target: "fusion::tasks", task = id, %error, "a read task's expiry was not extended");
        }
        // The runner's own view of its questions when it runs here; else what it wrote.
        let pending = self
            .shared
            .running()
            .get(id)
            .map(|running| running.input.pending());
        Ok(GetTaskResult::new(detailed(&record, pending)))
    }

    /// `tasks/update`: answers for the questions a task waits on, wherever it runs.
    pub(crate) async fn update(
        &self,
        id: &str,
        caller: Option<&str>,
        answers: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), ErrorData> {
        let record = self.find(id, caller).await?;
        if record.is_finished() {
            return Ok(());
        }
        let answers: Vec<(String, Value)> = answers.into_iter().collect();
        if self.shared.store.is_shared() {
            // Kept in the store as well: a runner elsewhere (or one that takes the task
            // over later) reads them there.
            self.shared
                .store
                .signal(id, TaskSignal::Answers(answers.clone()))
                .await
                .map_err(|error| unavailable(&error))?;
        }
        if let Some(running) = self.shared.running().get(id) {
            running.input.deliver(answers);
        }
        Ok(())
    }

    /// `tasks/cancel`: stops a running task wherever it runs (its work is dropped); a
    /// finished one stays as it ended.
    pub(crate) async fn cancel(&self, id: &str, caller: Option<&str>) -> Result<(), ErrorData> {
        let record = self.find(id, caller).await?;
        if record.is_finished() {
            return Ok(());
        }
        if let Some(running) = self.shared.running().get(id) {
            running.cancel.cancel();
            return Ok(());
        }
        if self.shared.store.is_shared() {
            self.shared
                .store
                .signal(id, TaskSignal::Cancel)
                .await
                .map_err(|error| unavailable(&error))?;
        }
        Ok(())
    }

    /// The record of task `id`, if `caller` may reach it.
    async fn find(&self, id: &str, caller: Option<&str>) -> Result<TaskRecord, ErrorData> {
        let record = self
            .shared
            .store
            .get(id)
            .await
            .map_err(|error| unavailable(&error))?;
        record
            .filter(|record| record.owner.is_none() || record.owner.as_deref() == caller)
            .ok_or_else(|| unknown(id))
    }

    /// Starts what a shared store needs on every replica: the sweeper that takes over the
    /// tasks of replicas that died (running `relaunch` for those safe to run again), and
    /// the listener that pokes runners when a cancel or an answer arrives. Once; nothing
    /// for a store of one process.
    pub(crate) fn start_background(&self, relaunch: Relaunch) {
        // Without a runtime (a router built outside one) there is nothing to spawn on.
        if !self.shared.store.is_shared() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let mut background = self
            .background
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !background.is_empty() {
            return;
        }
        background.push(takeover::spawn_sweeper(Arc::clone(&self.shared), relaunch));
        if let Some(listener) = runner::listen(&self.shared) {
            background.push(tokio::spawn(listener).abort_handle());
        }
    }

    /// The process is stopping, after its grace period: no new task starts here, and the
    /// tasks still running are handed over. Those safe to run again are released at once,
    /// for another replica to take over without waiting for their leases; the others end
    /// `failed` with an unknown outcome. Waits (at most `limit`) for their records to be
    /// written.
    pub(crate) async fn hand_over(&self, limit: Duration) {
        self.shared.accepting.store(false, Ordering::SeqCst);
        for running in self.shared.running().values() {
            running.stop.cancel();
        }
        let deadline = tokio::time::Instant::now() + limit;
        while !self.shared.running().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let background = std::mem::take(
            &mut *self
                .background
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for handle in background {
            handle.abort();
        }
    }

    #[cfg(feature = "http")]
    /// No new task starts here (the process is draining).
    pub(crate) fn stop_accepting(&self) {
        self.shared.accepting.store(false, Ordering::SeqCst);
    }
}

/// A task the store refused, with its work, not started.
pub(crate) struct NotStarted {
    pub(crate) error: TaskStoreError,
    pub(crate) work: BoxFuture<'static, TaskOutcome>,
}

impl std::fmt::Debug for NotStarted {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("NotStarted")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl NotStarted {
    /// Whether the store was full (in all or for the caller): a tool whose tasking is
    /// optional then runs as an ordinary call instead of being refused.
    pub(crate) fn is_full(&self) -> bool {
        matches!(
            self.error,
            TaskStoreError::Full(_) | TaskStoreError::CallerFull(_)
        )
    }
}

/// What a task that could not be created answers: a `-32603` for a full store, as before;
/// a transient `isError` result when the store is unreachable or this replica is stopping
/// (the same call may work in a moment, perhaps on another replica).
pub(crate) fn refusal(error: TaskStoreError) -> Result<CallToolResult, ErrorData> {
    match error {
        TaskStoreError::Unavailable(_) => {
            let text =
                format!("The task was not created: {error}. Call the tool again in a moment.");
            let entry = serde_json::json!({
                "class": "transient",
                "code": "task_store_unavailable",
                "retryable": true,
                "retry_after_ms": 1000,
            });
            let mut meta = serde_json::Map::new();
            meta.insert(FAILURE_META_KEY.to_owned(), entry);
            Ok(CallToolResult::error(vec![ContentBlock::text(text)])
                .with_meta(Some(rmcp::model::MetaObject(meta))))
        }
        other => Err(ErrorData::internal_error(other.to_string(), None)),
    }
}

/// The wire `Task` of a record.
/// The task as `tasks/get` and `notifications/tasks` report it: with its result, its
/// error, or the questions it waits on (`pending`, when the runner's own view is at hand;
/// else what the record says).
pub(crate) fn detailed(record: &TaskRecord, pending: Option<InputRequests>) -> DetailedTask {
    let as_object = |value: Option<Value>| match value {
        Some(Value::Object(object)) => object,
        _ => JsonObject::new(),
    };
    let payload = match record.status {
        TaskStatus::Completed => TaskPayload::Completed {
            result: as_object(record.result.clone()),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: as_object(record.error.clone()),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        _ => {
            let pending = pending.unwrap_or_else(|| record.input_requests.clone());
            if pending.is_empty() {
                TaskPayload::Working
            } else {
                TaskPayload::InputRequired {
                    input_requests: pending,
                }
            }
        }
    };
    DetailedTask::new(task_of(record), payload)
}

fn task_of(record: &TaskRecord) -> Task {
    let mut task = Task::new(
        record.id.clone(),
        record.status,
        record.created_at.clone(),
        record.last_updated_at.clone(),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(record.poll_interval_ms);
    if let Some(message) = &record.status_message {
        task = task.with_status_message(message.clone());
    }
    task
}

fn unknown(id: &str) -> ErrorData {
    let shown: String = id.chars().take(80).collect();
    ErrorData::invalid_params(format!("no task has the id `{shown}`"), None)
}

/// The store could not be read: a transient error, never "unknown task" (the task may
/// well exist); the next poll may succeed.
fn unavailable(error: &TaskStoreError) -> ErrorData {
    let mut meta = serde_json::Map::new();
    meta.insert(
        FAILURE_META_KEY.to_owned(),
        serde_json::json!({"class": "transient", "code": "task_store_unavailable", "retryable": true, "retry_after_ms": 1000}),
    );
    ErrorData::internal_error(
        format!("{error}; poll again in a moment"),
        Some(serde_json::json!({"_meta": meta})),
    )
}

/// 128 random bits, hex: unguessable, so a task is reachable only by whoever created it
/// (and a replica's name on the change bus is its own).
pub(crate) fn task_id() -> String {
    let mut bytes = [0_u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        for byte in &mut bytes {
            *byte = fastrand::u8(..);
        }
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(owner: Option<&str>) -> TaskOrigin {
        TaskOrigin {
            tool: "report".to_owned(),
            arguments: Value::Null,
            owner: owner.map(str::to_owned),
            requestor: owner.map(|owner| format!("sub:{owner}")),
            session: None,
            claims: None,
            capabilities: None,
            rerunnable: true,
            fence: Arc::default(),
        }
    }

    fn input() -> Arc<InputState> {
        InputState::rounds(Default::default(), Default::default())
    }

    #[tokio::test]
    async fn a_task_reaches_only_the_caller_that_created_it() {
        let tasks = Tasks::new(TaskSettings::default(), []);
        let work: BoxFuture<'static, TaskOutcome> = Box::pin(std::future::pending());
        let task = tasks
            .start(
                work,
                CancellationToken::new(),
                input(),
                origin(Some("alice")),
            )
            .await
            .expect("created");
        let id = task.task_id;
        assert!(tasks.get(&id, Some("alice")).await.is_ok());
        for stranger in [Some("bob"), None] {
            let refused = tasks.get(&id, stranger).await.expect_err("not theirs");
            assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(tasks.cancel(&id, stranger).await.is_err());
            assert!(tasks.update(&id, stranger, Vec::new()).await.is_err());
        }
        // Still running: the strangers' cancel did nothing.
        let still = tasks.get(&id, Some("alice")).await.expect("alice's");
        assert_eq!(still.task.status(), TaskStatus::Working);
        tasks
            .cancel(&id, Some("alice"))
            .await
            .expect("alice cancels");
    }

    #[tokio::test]
    async fn a_task_without_an_owner_reaches_whoever_knows_its_id() {
        let tasks = Tasks::new(TaskSettings::default(), []);
        let work: BoxFuture<'static, TaskOutcome> = Box::pin(std::future::pending());
        let task = tasks
            .start(work, CancellationToken::new(), input(), origin(None))
            .await
            .expect("created");
        assert!(tasks.get(&task.task_id, Some("anyone")).await.is_ok());
        assert!(tasks.get(&task.task_id, None).await.is_ok());
    }

    #[cfg(feature = "http")]
    #[tokio::test]
    async fn a_stopping_process_takes_no_new_task() {
        let tasks = Tasks::new(TaskSettings::default(), []);
        tasks.stop_accepting();
        let work: BoxFuture<'static, TaskOutcome> = Box::pin(std::future::pending());
        let refused = tasks
            .start(work, CancellationToken::new(), input(), origin(None))
            .await
            .expect_err("stopping");
        assert!(matches!(refused.error, TaskStoreError::Unavailable(_)));
        assert!(!refused.is_full(), "not a full store: the call is refused");
        let answer = refusal(refused.error).expect("a result, not an error");
        assert_eq!(answer.is_error, Some(true));
    }
}

#[cfg(test)]
mod ending {
    use super::*;

    #[tokio::test]
    async fn a_task_whose_work_ends_is_completed_and_then_forgotten_after_its_ttl() {
        let tasks = Tasks::new(
            TaskSettings {
                ttl: Duration::from_millis(50),
                ..TaskSettings::default()
            },
            [],
        );
        let work: BoxFuture<'static, TaskOutcome> = Box::pin(async {
            TaskOutcome {
                result: CallToolResult::success(vec![ContentBlock::text("done")]),
                internal: false,
                message: String::new(),
            }
        });
        let input = InputState::rounds(Default::default(), Default::default());
        let origin = TaskOrigin {
            tool: "t".to_owned(),
            arguments: Value::Null,
            owner: None,
            requestor: None,
            session: None,
            claims: None,
            capabilities: None,
            rerunnable: false,
            fence: Arc::default(),
        };
        let task = tasks
            .start(work, CancellationToken::new(), input, origin)
            .await
            .expect("created");
        tokio::time::sleep(Duration::from_millis(10)).await;
        let ended = tasks.get(&task.task_id, None).await.expect("known");
        assert_eq!(ended.task.status(), TaskStatus::Completed);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert!(tasks.get(&task.task_id, None).await.is_err(), "forgotten");
        assert!(tasks.shared.running().is_empty());
    }
}
