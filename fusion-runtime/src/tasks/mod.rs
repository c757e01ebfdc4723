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

mod store;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::model::{
    DetailedTask, ErrorData, GetTaskResult, JsonObject, Task, TaskPayload, TaskStatus,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use store::{MemoryTaskStore, StoreFull, TaskRecord, TaskStore};

use crate::{future::BoxFuture, input::InputState};

/// How a tool runs as a task ([`ServerBuilder::task_tool`](crate::ServerBuilder::task_tool)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tasking {
    required: bool,
    started_by_tool: bool,
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

/// What a builder collects for the 2026-07-28 revision: the request-state key and tasks.
#[derive(Clone, Default)]
pub(crate) struct RevisionSettings {
    pub(crate) state_key: Option<[u8; 32]>,
    pub(crate) tasks: TaskSettings,
}

/// The tasks of a built server: the store, and the tasks this process runs.
pub(crate) struct Tasks {
    tools: HashMap<String, Tasking>,
    store: Arc<dyn TaskStore>,
    ttl: Duration,
    poll_interval: Duration,
    running: Arc<Mutex<HashMap<String, Running>>>,
}

/// How a task's work ended: the tool's result, or a failure of the server's own.
pub(crate) struct TaskOutcome {
    /// The tool's result.
    pub(crate) result: rmcp::model::CallToolResult,
    /// The failure was the server's (its details masked): the task failed.
    pub(crate) internal: bool,
    /// The (masked) message of such a failure.
    pub(crate) message: String,
}

/// A task this process runs: how to cancel it and where its questions wait.
struct Running {
    cancel: CancellationToken,
    input: Arc<InputState>,
}

impl Tasks {
    pub(crate) fn new(settings: TaskSettings) -> Self {
        Self {
            tools: settings.tools,
            store: settings
                .store
                .unwrap_or_else(|| Arc::new(MemoryTaskStore::default())),
            ttl: settings.ttl,
            poll_interval: settings.poll_interval,
            running: Arc::default(),
        }
    }

    /// Whether any tool runs as a task (the extension is advertised then).
    pub(crate) fn any(&self) -> bool {
        !self.tools.is_empty()
    }

    /// How `tool` runs as a task, if it does.
    pub(crate) fn tasking(&self, tool: &str) -> Option<Tasking> {
        self.tools.get(tool).copied()
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        // Nothing panics while holding it.
        self.running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Creates a task and starts `work` in the background; returns the task as created,
    /// once `tasks/get` finds it. `cancel` is the token `work`'s call watches; `input`
    /// is where its questions wait (parked).
    pub(crate) async fn start(
        &self,
        work: BoxFuture<'static, TaskOutcome>,
        cancel: CancellationToken,
        input: Arc<InputState>,
    ) -> Result<Task, ErrorData> {
        input.park();
        let id = task_id();
        let record = TaskRecord::working(id.clone(), self.ttl, self.poll_interval);
        // Await: the store's insert. A drop here drops `work` unstarted (its guards were
        // never taken); a record already inserted says `working` until the store's TTL
        // forgets it, and no client learned its id.
        self.store
            .insert(record.clone())
            .await
            .map_err(|full| ErrorData::internal_error(full.to_string(), None))?;
        self.running().insert(
            id.clone(),
            Running {
                cancel: cancel.clone(),
                input,
            },
        );
        let store = Arc::clone(&self.store);
        let running = Arc::clone(&self.running);
        let task_id = id.clone();
        tokio::spawn(async move {
            // Await: the work. Cancelling drops it here (its guards release the circuit
            // probe, slots, claims); the record says so after.
            let report = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                report = work => Some(report),
            };
            let mut record = record;
            match report {
                None => record.finish(TaskStatus::Cancelled, None, None),
                Some(report) if report.internal => {
                    let error = ErrorData::internal_error(report.message, None);
                    record.finish(TaskStatus::Failed, None, serde_json::to_value(error).ok());
                }
                Some(report) => {
                    let result = serde_json::to_value(&report.result).ok();
                    record.finish(TaskStatus::Completed, result, None);
                }
            }
            // Await: writing the end; a drop here (the runtime shutting down) loses only
            // the record, which then stays `working` until the store forgets it.
            store.update(record).await;
            running
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(&task_id);
        });
        Ok(task_of(&TaskRecord::working(
            id,
            self.ttl,
            self.poll_interval,
        )))
    }

    /// `tasks/get`: the task with its payload.
    pub(crate) async fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let record = self.store.get(id).await.ok_or_else(|| unknown(id))?;
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
                let pending = self
                    .running()
                    .get(id)
                    .map(|running| running.input.pending())
                    .unwrap_or_default();
                if pending.is_empty() {
                    TaskPayload::Working
                } else {
                    TaskPayload::InputRequired {
                        input_requests: pending,
                    }
                }
            }
        };
        Ok(GetTaskResult::new(DetailedTask::new(
            task_of(&record),
            payload,
        )))
    }

    /// `tasks/update`: answers for the questions a task waits on.
    pub(crate) async fn update(
        &self,
        id: &str,
        answers: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), ErrorData> {
        self.store.get(id).await.ok_or_else(|| unknown(id))?;
        if let Some(running) = self.running().get(id) {
            running.input.deliver(answers);
        }
        Ok(())
    }

    /// `tasks/cancel`: stops a running task (its work is dropped); a finished one stays
    /// as it ended.
    pub(crate) async fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        self.store.get(id).await.ok_or_else(|| unknown(id))?;
        if let Some(running) = self.running().get(id) {
            running.cancel.cancel();
        }
        Ok(())
    }
}

/// The wire `Task` of a record.
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

/// 128 random bits, hex: unguessable, so a task is reachable only by whoever created it.
fn task_id() -> String {
    let mut bytes = [0_u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        for byte in &mut bytes {
            *byte = fastrand::u8(..);
        }
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
