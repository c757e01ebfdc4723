//! An upstream that is a child process, spoken to in lines of JSON over its stdin and
//! stdout.
//!
//! One task reads its stdout: answers reach the calls waiting for them by id, a request of
//! the upstream's is answered (a `ping`) or refused, `notifications/tools/list_changed` wakes the refresh (`refresh.rs`), other
//! notifications are read and dropped. One
//! task writes its stdin from a bounded queue, so that a call dropped mid-send never leaves
//! half a line in the pipe. When the process dies, every waiting call fails at once and the
//! next call starts it again (at most twice a second).

use std::{
    collections::HashMap,
    process::Stdio,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    process::{Child, ChildStdin, ChildStdout},
    sync::{mpsc, oneshot},
    time::Instant,
};

use super::{
    link_error::LinkError,
    rpc::{self, ProgressRoute},
};
use crate::transport::stdio::framing::{Lines, Next};

/// Lines queued for the child's stdin: the calls in flight, and the answers to its own
/// requests. A full queue makes a call wait; an answer to the child that finds it full is
/// dropped (the child's request then waits for its own timeout).
const QUEUED_LINES: usize = 64;

/// The least time between two starts of the process, so that one that dies at once is not
/// started in a loop.
const RESTART_PACE: Duration = Duration::from_millis(500);

/// How long a start waits for the process's answer to `initialize`.
const START_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct StdioLink {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    max_message: usize,
    live: tokio::sync::Mutex<Option<Arc<Live>>>,
    last_start: Mutex<Option<Instant>>,
    /// Told when the process says its tools changed (`refresh.rs` lists them again).
    tools_changed: Arc<tokio::sync::Notify>,
}

/// One running process.
struct Live {
    lines: mpsc::Sender<Vec<u8>>,
    waiting: Arc<Waiting>,
    /// Its `initialize` result.
    init: Value,
    /// Killed when the process is replaced or the server dropped.
    _child: Mutex<Child>,
}

impl StdioLink {
    pub(crate) fn new(
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        max_message: usize,
        tools_changed: Arc<tokio::sync::Notify>,
    ) -> Self {
        Self {
            program,
            args,
            env,
            max_message,
            live: tokio::sync::Mutex::new(None),
            last_start: Mutex::new(None),
            tools_changed,
        }
    }

    pub(crate) async fn connect(&self) -> Result<Value, LinkError> {
        Ok(self.live().await?.init.clone())
    }

    pub(crate) async fn request(
        &self,
        method: &str,
        params: Value,
        progress: Option<&ProgressRoute>,
    ) -> Result<Value, LinkError> {
        let live = self.live().await?;
        let _routed = progress.map(|route| live.waiting.route(route));
        send(&live, method, &params).await
    }

    /// The running process, started (again) if it is not running.
    async fn live(&self) -> Result<Arc<Live>, LinkError> {
        let mut slot = self.live.lock().await;
        if let Some(live) = &*slot
            && !live.waiting.is_closed()
        {
            return Ok(Arc::clone(live));
        }
        // The dead process is killed and reaped as it is dropped.
        *slot = None;
        let last = self.last_start.lock().ok().and_then(|last| *last);
        if let Some(last) = last {
            tokio::time::sleep_until(last + RESTART_PACE).await;
        }
        if let Ok(mut last) = self.last_start.lock() {
            *last = Some(Instant::now());
        }
        let live = Arc::new(self.start().await?);
        *slot = Some(Arc::clone(&live));
        if last.is_some() {
            // A process started again (a new version of the program, say) may list other
            // tools than the one it replaces: they are listed again.
            self.tools_changed.notify_one();
        }
        Ok(live)
    }

    async fn start(&self) -> Result<Live, LinkError> {
        let mut child = tokio::process::Command::new(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| {
                LinkError::NotSent(format!("cannot start `{}`: {error}", self.program))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LinkError::NotSent(format!(
                "`{}` started without pipes",
                self.program
            )));
        };
        let waiting = Arc::new(Waiting::default());
        let (lines, queued) = mpsc::channel(QUEUED_LINES);
        tokio::spawn(write_lines(stdin, queued, Arc::clone(&waiting)));
        tokio::spawn(read_lines(
            stdout,
            Arc::clone(&waiting),
            lines.clone(),
            self.max_message,
            Arc::clone(&self.tools_changed),
        ));
        let mut live = Live {
            lines,
            waiting,
            init: Value::Null,
            _child: Mutex::new(child),
        };
        let initialized = tokio::time::timeout(
            START_TIMEOUT,
            send(&live, "initialize", &rpc::initialize_params()),
        )
        .await;
        live.init = match initialized {
            Ok(Ok(init)) => init,
            // Nothing but `initialize` was sent to this process: whatever happened, no call
            // reached it.
            Ok(Err(error)) => {
                return Err(LinkError::NotSent(format!(
                    "`{}` did not complete `initialize`: {error}",
                    self.program
                )));
            }
            Err(_) => {
                return Err(LinkError::NotSent(format!(
                    "`{}` did not answer `initialize` within {START_TIMEOUT:?}",
                    self.program
                )));
            }
        };
        let initialized = rpc::notification("notifications/initialized", &json!({}));
        if live.lines.send(line(initialized)).await.is_err() {
            return Err(LinkError::NotSent(format!(
                "`{}` exited after `initialize`",
                self.program
            )));
        }
        Ok(live)
    }
}

fn line(mut message: Vec<u8>) -> Vec<u8> {
    message.push(b'\n');
    message
}

/// One request on `live`, and its answer.
async fn send(live: &Live, method: &str, params: &Value) -> Result<Value, LinkError> {
    let (id, answer) = live.waiting.register()?;
    let mut withdraw = Withdraw {
        live,
        id,
        queued: false,
        armed: true,
    };
    if live
        .lines
        .send(line(rpc::request(id, method, params)))
        .await
        .is_err()
    {
        return Err(LinkError::NotSent(
            "the upstream process exited before the request was sent".to_owned(),
        ));
    }
    withdraw.queued = true;
    let answer = answer.await;
    withdraw.armed = false;
    answer.unwrap_or_else(|_| {
        Err(LinkError::Lost(
            "the upstream process exited before it answered".to_owned(),
        ))
    })
}

/// A request whose caller stopped waiting (its timeout, a cancel): its id is forgotten, and
/// the upstream told with `notifications/cancelled` if the request went out.
struct Withdraw<'a> {
    live: &'a Live,
    id: u64,
    queued: bool,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        self.live.waiting.forget(self.id);
        if self.queued {
            let cancelled = rpc::notification(
                "notifications/cancelled",
                &json!({"requestId": self.id, "reason": "the gateway's caller stopped waiting"}),
            );
            // Best effort: a full queue drops it, and the upstream's answer is then ignored.
            let _ = self.live.lines.try_send(line(cancelled));
        }
    }
}

async fn write_lines(
    mut stdin: ChildStdin,
    mut queued: mpsc::Receiver<Vec<u8>>,
    waiting: Arc<Waiting>,
) {
    while let Some(line) = queued.recv().await {
        let written = match stdin.write_all(&line).await {
            Ok(()) => stdin.flush().await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            waiting.close(&format!(
                "the upstream process's stdin closed mid-request: {error}"
            ));
            return;
        }
    }
}

async fn read_lines(
    mut stdout: ChildStdout,
    waiting: Arc<Waiting>,
    replies: mpsc::Sender<Vec<u8>>,
    max_message: usize,
    tools_changed: Arc<tokio::sync::Notify>,
) {
    let mut lines = Lines::new(max_message);
    let mut chunk = vec![0; 64 * 1024];
    let why = loop {
        let read = match stdout.read(&mut chunk).await {
            Ok(0) => break "the upstream process exited".to_owned(),
            Ok(read) => read,
            Err(error) => break format!("the upstream process's stdout failed: {error}"),
        };
        lines.buffer.extend_from_slice(&chunk[..read]);
        loop {
            match lines.next() {
                Next::Line(bytes) => take(bytes, &waiting, &replies, &tools_changed),
                Next::TooLong(start) => {
                    // The start holds the id: that call fails now, naming the limit.
                    if let Some(rmcp::model::NumberOrString::Number(id)) =
                        crate::transport::decode::find_id(start)
                        && let Ok(id) = u64::try_from(id)
                    {
                        waiting.answer(id, Err(LinkError::TooLarge { limit: max_message }));
                    }
                }
                Next::NeedMore => break,
            }
        }
        lines.compact();
    };
    waiting.close(&why);
}

fn take(
    bytes: &[u8],
    waiting: &Waiting,
    replies: &mpsc::Sender<Vec<u8>>,
    tools_changed: &tokio::sync::Notify,
) {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match rpc::read(bytes) {
        rpc::Incoming::Answer { id, outcome } => {
            if !waiting.answer(id, outcome) {
                tracing::debug!(target: "fusion::upstream", id, "an answer to no waiting call was dropped");
            }
        }
        rpc::Incoming::Request { id, method } => {
            let _ = replies.try_send(line(rpc::answer_to(&id, &method)));
        }
        rpc::Incoming::Progress { token, progress } => waiting.progress(&token, progress),
        // One stored permit however many come: a flood costs one more listing.
        rpc::Incoming::Notification { method } if method == rpc::TOOLS_CHANGED => {
            tools_changed.notify_one();
        }
        rpc::Incoming::Notification { method } => {
            tracing::trace!(target: "fusion::upstream", method = %crate::limits::name(&method), "notification");
        }
        rpc::Incoming::Unreadable(why) => {
            tracing::debug!(target: "fusion::upstream", %why, "a line from the upstream was dropped");
        }
    }
}

type AnswerSender = oneshot::Sender<Result<Value, LinkError>>;

/// The calls waiting for an answer, by id; closed for good when the process is gone.
#[derive(Default)]
struct Waiting {
    next: AtomicU64,
    state: Mutex<WaitState>,
}

#[derive(Default)]
struct WaitState {
    closed: Option<String>,
    calls: HashMap<u64, AnswerSender>,
    /// Where the progress of each call that asked for it goes, by its token.
    progress: HashMap<String, mpsc::Sender<rpc::Progress>>,
}

/// A call's progress route, removed when the call ends however it ends.
struct Routed<'a> {
    waiting: &'a Waiting,
    token: String,
}

impl Drop for Routed<'_> {
    fn drop(&mut self) {
        if let Ok(mut state) = self.waiting.state.lock() {
            state.progress.remove(&self.token);
        }
    }
}

impl Waiting {
    fn register(&self) -> Result<(u64, oneshot::Receiver<Result<Value, LinkError>>), LinkError> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = oneshot::channel();
        let mut state = self
            .state
            .lock()
            .map_err(|_| LinkError::NotSent("the link's state is poisoned".to_owned()))?;
        if let Some(why) = &state.closed {
            return Err(LinkError::NotSent(why.clone()));
        }
        state.calls.insert(id, sender);
        Ok((id, receiver))
    }

    /// Hands `outcome` to the call waiting for `id`; false when none is.
    fn answer(&self, id: u64, outcome: Result<Value, LinkError>) -> bool {
        let sender = self
            .state
            .lock()
            .ok()
            .and_then(|mut state| state.calls.remove(&id));
        sender.is_some_and(|sender| sender.send(outcome).is_ok())
    }

    fn route(&self, route: &ProgressRoute) -> Routed<'_> {
        if let Ok(mut state) = self.state.lock() {
            state
                .progress
                .insert(route.token.clone(), route.sender.clone());
        }
        Routed {
            waiting: self,
            token: route.token.clone(),
        }
    }

    /// Passes `progress` to the call that asked for it with `token`, if it still waits and
    /// its queue has room.
    fn progress(&self, token: &str, progress: rpc::Progress) {
        let sender = self
            .state
            .lock()
            .ok()
            .and_then(|state| state.progress.get(token).cloned());
        if let Some(sender) = sender {
            let _ = sender.try_send(progress);
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut state) = self.state.lock() {
            state.calls.remove(&id);
        }
    }

    fn close(&self, why: &str) {
        let calls = match self.state.lock() {
            Ok(mut state) => {
                state.closed.get_or_insert_with(|| why.to_owned());
                std::mem::take(&mut state.calls)
            }
            Err(_) => return,
        };
        // One death is one failure for the breaker, however many calls it took along:
        // the process is started again for the next call.
        for (index, (_, sender)) in calls.into_iter().enumerate() {
            let lost = if index == 0 {
                LinkError::Lost(why.to_owned())
            } else {
                LinkError::AlsoLost(why.to_owned())
            };
            let _ = sender.send(Err(lost));
        }
    }

    fn is_closed(&self) -> bool {
        self.state
            .lock()
            .map_or(true, |state| state.closed.is_some())
    }
}
