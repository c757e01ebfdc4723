//! Our stdio transport: rmcp's `Transport<RoleServer>` over newline-delimited JSON-RPC.
//!
//! Why not rmcp's `stdio()`/`stdio_pipes()`: they drop malformed input without an answer,
//! go through the blocking pool when stdin is not a FIFO (MCP clients written in Node give
//! their servers sockets), write one syscall a message, and rely on rmcp's untagged-enum
//! parse for every `tools/call`. This one answers every line that could be a request
//! ([`decode`](super::decode)), batches the answers that are ready into one write, and
//! decodes `tools/call` directly.
//!
//! Shape:
//! - **receive** (rmcp polls it inside `select!`, so it must be cancel-safe): bytes go into
//!   one buffer that lives on the transport; a line is taken out of it and decoded with no
//!   `.await` in between, so a cancelled `receive` loses nothing. Lines over
//!   [`StdioOptions::max_line_bytes`] are answered and skipped without buffering the rest.
//!   Every `LINES_BEFORE_WRITING` (16) lines in a row it yields, so the writer sends the
//!   answers ready so far while the rest of a burst waits to be served.
//! - **send** (rmcp spawns each returned future, so their order is not the call order):
//!   the message is serialized and queued synchronously, in the call, on a channel to a
//!   single writer; the future is already complete. The writer takes everything queued and
//!   writes it with one `write` call.
//! - **backpressure**: the bytes queued and not yet written are counted; past
//!   [`StdioOptions::max_unwritten_bytes`] `receive` stops reading stdin until the client
//!   reads its answers, so a client that stops reading cannot make the server buffer
//!   without bound.
//! - **`tools/call`** of the running session (after rmcp's handshake) is served by the
//!   transport itself, past rmcp's service loop (`direct.rs`): polled once where it is
//!   read, in a task of its own if it waits; everything else goes to rmcp.
//! - **duplicate ids**: a request whose id is still in flight is answered `-32600` by the
//!   transport and never reaches rmcp (which would cross the two calls' answers).
//! - **end of input** (stdin closed, or SIGTERM through [`StdioHandle::stop_reading`]):
//!   `receive` keeps the service running while calls are still unanswered, up to
//!   [`StdioOptions::shutdown_grace`], then returns `None`. rmcp then stops; `serve_stdio`
//!   does not wait for calls still running after the grace.
//! - **a failed output** (the reader closed stdout, a full disk) ends the service; the
//!   error is kept for `serve_stdio`'s exit code (1) and message.

use std::{
    borrow::Cow,
    io::{self},
    sync::{
        Arc, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use rmcp::{
    RoleServer,
    model::{ErrorCode, ErrorData, JsonRpcMessage, ProtocolVersion, RequestId},
    service::TxJsonRpcMessage,
    transport::Transport,
};
use tokio::{
    sync::{mpsc, oneshot},
    time::Instant,
};

use super::decode::{self, ClientMessage, Decoded, ErrorReply};

mod direct;
pub(crate) mod framing;
pub(crate) mod message;
mod options;
pub(crate) mod process;
mod state;
mod stream;
mod writer;

pub use self::options::StdioOptions;
pub(crate) use self::state::{DirectCalls, Session};
pub(crate) use self::stream::{Input, Output};
use self::{framing::*, state::*, writer::*};

/// How many lines `receive` handles in a row before it lets the writer (and the calls that
/// wait) run. Answers then wait for at most this many others, instead of for everything
/// read so far, and the client works on the first ones while the server serves the rest.
/// Each turn costs a scheduler round and one `write`, which wakes the client. Measured
/// with the quickstart's `echo` over a pipe at 32 calls in flight, log on: never yielding
/// gave 137k–141k calls/s; every 4 lines 183k–187k; every 16, 191k–221k; every 24,
/// 195k–197k. A flood of lines also cannot keep the calls that wait from running.
const LINES_BEFORE_WRITING: usize = 16;

/// How long `close` waits for queued answers to be written (the client may have stopped
/// reading).
const WRITE_ON_CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

/// rmcp's `Transport<RoleServer>` over a byte input and a byte output.
pub(crate) struct StdioTransport {
    input: Input,
    lines: Lines,
    /// The input reached its end (or failed).
    input_done: bool,
    /// rmcp has left its handshake (see [`message::ends_handshake`]).
    handshake_done: bool,
    /// The protocol versions the served handler supports: rmcp leaves its handshake on a
    /// 2026-07-28 request only when it names one of them.
    supported_versions: Cow<'static, [ProtocolVersion]>,
    /// The last message read went to rmcp, which has spawned its tasks since.
    handed_to_rmcp: bool,
    /// Set while tasks that rmcp spawned for earlier messages may not have run yet: a
    /// call polled where it is read would run before them (`start_call`).
    rmcp_behind: Arc<AtomicBool>,
    /// Lines handled since `receive` last yielded to the writer ([`LINES_BEFORE_WRITING`]).
    lines_in_a_row: usize,
    /// When the wait for unanswered calls after the end of the input gives up.
    grace_deadline: Option<Instant>,
    grace: Duration,
    /// [`StdioOptions::max_unwritten_bytes`].
    max_unwritten: usize,
    out: mpsc::UnboundedSender<Outgoing>,
    shared: Arc<Shared>,
}

/// What `serve_stdio` keeps of the transport once rmcp owns it: when the input ended,
/// what is still unanswered, and a way to flush the output.
#[derive(Clone)]
pub(crate) struct StdioHandle {
    out: mpsc::UnboundedSender<Outgoing>,
    shared: Arc<Shared>,
}

impl StdioHandle {
    /// Completes when `receive` has returned `None`: the input ended and every call was
    /// answered, or the grace period is over.
    pub(crate) async fn input_ended(&self) {
        self.shared.input_ended.wait().await;
    }

    /// Requests received and not answered (nor cancelled) yet.
    pub(crate) fn pending(&self) -> usize {
        self.shared.pending()
    }

    /// The requests received and not answered yet.
    pub(crate) fn pending_ids(&self) -> Vec<RequestId> {
        self.shared.unanswered().keys().cloned().collect()
    }

    /// Whether any of `ids` is still unanswered.
    pub(crate) fn any_pending(&self, ids: &[RequestId]) -> bool {
        let unanswered = self.shared.unanswered();
        ids.iter().any(|id| unanswered.contains_key(id))
    }

    /// From now on, `tools/call` requests of the session are served by the transport
    /// itself, through `direct` (see `direct.rs`); once rmcp's handshake is done.
    pub(crate) fn serve_calls_directly(&self, direct: DirectCalls) {
        // Set once: a second session cannot run on one transport.
        let _ = self.shared.direct.set(direct);
    }

    /// Stops reading the input (on SIGTERM): the requests already read are served, and the
    /// input then ends as at end of file (the calls in flight get the shutdown grace).
    pub(crate) fn stop_reading(&self) {
        self.shared.stop_reading.set();
    }

    /// Why the output failed, when it did (the reader closed stdout, the disk is full).
    pub(crate) fn output_error(&self) -> Option<String> {
        let slot = self
            .shared
            .output_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slot.as_ref().map(ToString::to_string)
    }

    /// Waits, at most `timeout`, until everything queued so far has been written.
    pub(crate) async fn flush(&self, timeout: Duration) {
        let (done, written) = oneshot::channel();
        if self.out.send(Outgoing::Flush(done)).is_ok() {
            let _ = tokio::time::timeout(timeout, written).await;
        }
    }
}

impl StdioTransport {
    /// A transport over `input` and `output`; spawns the writer (a task, or a thread for
    /// a blocking output). Must be called inside a tokio runtime.
    pub(crate) fn new(
        input: Input,
        output: Output,
        options: &StdioOptions,
        supported_versions: Cow<'static, [ProtocolVersion]>,
    ) -> io::Result<(Self, StdioHandle)> {
        let shared = Arc::new(Shared::default());
        let (out, queue) = mpsc::unbounded_channel();
        match output {
            Output::Async(sink) => {
                tokio::spawn(write_async(queue, sink, Arc::clone(&shared)));
            }
            Output::Blocking(sink) => {
                let shared = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name("fusion-stdout".into())
                    .spawn(move || write_blocking(queue, sink, &shared))?;
            }
        }
        let handle = StdioHandle {
            out: out.clone(),
            shared: Arc::clone(&shared),
        };
        let transport = Self {
            input,
            lines: Lines::new(options.max_line_bytes),
            input_done: false,
            handshake_done: false,
            supported_versions,
            handed_to_rmcp: false,
            rmcp_behind: Arc::new(AtomicBool::new(false)),
            lines_in_a_row: 0,
            grace_deadline: None,
            grace: options.shutdown_grace,
            max_unwritten: options.max_unwritten_bytes,
            out,
            shared,
        };
        Ok((transport, handle))
    }

    fn reply(&self, reply: ErrorReply) {
        // An `ErrorReply` is plain data: serializing it cannot fail.
        if let Ok(mut line) = serde_json::to_vec(&reply) {
            line.push(b'\n');
            // A closed writer means the output is gone: nobody can read the answer anyway.
            let _ = queue_line(&self.out, &self.shared, line);
        }
    }

    /// The next message for rmcp, answering on the way whatever is not one.
    async fn next_message(&mut self) -> Option<ClientMessage> {
        if std::mem::take(&mut self.handed_to_rmcp) {
            // rmcp has spawned the tasks of the message it was handed (a pipelined
            // `logging/setLevel`, `notifications/initialized`). A runtime's thread runs its
            // tasks in the order they were spawned: until this one has run, calls are
            // spawned too, so that none runs before those.
            self.rmcp_behind.store(true, Ordering::Release);
            let behind = Arc::clone(&self.rmcp_behind);
            tokio::spawn(async move { behind.store(false, Ordering::Release) });
        }
        loop {
            if self.shared.output_closed.is_set() {
                // Nobody can receive an answer any more: stop serving.
                self.shared.input_ended.set();
                return None;
            }
            // Everything complete in the buffer first; no `.await` between taking a line
            // out of the buffer and returning its message (cancel safety).
            let max = self.lines.max;
            loop {
                if self.lines_in_a_row >= LINES_BEFORE_WRITING {
                    // Let the writer (and the calls that wait) run: answers go out while
                    // the rest of the input is read, instead of after all of it, and the
                    // client works on them meanwhile. Cancel-safe: no line is held here.
                    self.lines_in_a_row = 0;
                    tokio::task::yield_now().await;
                }
                let decoded = match self.lines.next() {
                    Next::NeedMore => break,
                    Next::Line(line) => decode::decode_line(line),
                    Next::TooLong(start) => Decoded::Reply(too_long(start, max)),
                };
                self.lines_in_a_row += 1;
                match decoded {
                    Decoded::Message(message)
                        if !self.handshake_done
                            && !matches!(*message, JsonRpcMessage::Request(_)) =>
                    {
                        // During its handshake rmcp ends the whole service (exit code 1)
                        // on anything but a request; a stray notification is not worth
                        // that, and JSON-RPC does not answer it.
                        tracing::debug!(target: "fusion::transport", "ignored a notification or response before initialize");
                    }
                    Decoded::Message(message) => {
                        // A `tools/call` of the running session is served here (direct.rs).
                        let message = match self.shared.direct.get() {
                            Some(direct) => match direct::take(message, direct) {
                                Ok(call) => {
                                    self.start_call(direct, call);
                                    continue;
                                }
                                Err(message) => message,
                            },
                            None => message,
                        };
                        if let Some(id) = message::awaited_request(&message)
                            && self.shared.opened(id, None).is_none()
                        {
                            // rmcp keys its answers by id: a second call under an id in
                            // flight would take the first one's answer.
                            self.reply(id_in_use(id));
                            continue;
                        }
                        self.handshake_done |=
                            message::ends_handshake(&message, &self.supported_versions);
                        if let Some(id) = message::cancelled_request(&message) {
                            self.shared.cancelled(id);
                        }
                        self.handed_to_rmcp = true;
                        return Some(*message);
                    }
                    Decoded::Reply(reply) => {
                        tracing::debug!(
                            target: "fusion::transport",
                            code = reply.error.code.0,
                            message = %reply.error.message,
                            "answered an unreadable message"
                        );
                        self.reply(reply);
                    }
                    Decoded::Ignore(what) => {
                        tracing::debug!(target: "fusion::transport", what, "ignored a line");
                    }
                }
            }
            if self.input_done {
                self.wait_for_answers().await;
                self.shared.input_ended.set();
                return None;
            }
            if self.shared.stop_reading.is_set() {
                // SIGTERM: what was read is served; a partial last line is not a request.
                self.input_done = true;
                continue;
            }
            self.lines.compact();
            // Backpressure: answers the client has not read yet stay below the bound
            // because no new request is read meanwhile.
            if self.shared.unwritten.load(Ordering::Acquire) > self.max_unwritten {
                tracing::debug!(target: "fusion::transport", "stdout is not being read; pausing stdin");
                tokio::select! {
                    () = self.shared.wait_for_room(self.max_unwritten) => {}
                    () = self.shared.stop_reading.wait() => {}
                }
                continue;
            }
            let read = tokio::select! {
                read = self.input.fill(&mut self.lines.buffer) => read,
                () = self.shared.output_closed.wait() => continue,
                () = self.shared.stop_reading.wait() => continue,
            };
            match read {
                Ok(0) => self.input_done = true,
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    tracing::warn!(target: "fusion::transport", %error, "stdin failed; treating it as closed");
                    self.input_done = true;
                }
            }
            if self.input_done && self.lines.buffer.len() > self.lines.start {
                // The last line has no newline: take it as a line anyway (a client that
                // writes one message and closes stdin expects its answer).
                self.lines.buffer.push(b'\n');
            }
        }
    }

    /// Starts a `tools/call` (`direct.rs`), or refuses it when its id is in flight.
    fn start_call(&self, direct: &DirectCalls, call: direct::DirectCall) {
        match self.shared.opened(call.id(), Some(call.cancellation())) {
            Some(number) => {
                let started = direct::Started {
                    id: call.id().clone(),
                    number,
                    out: self.out.clone(),
                    shared: Arc::clone(&self.shared),
                };
                let inline = !self.rmcp_behind.load(Ordering::Acquire);
                direct::start(direct, call, started, inline);
            }
            None => self.reply(id_in_use(call.id())),
        }
    }

    /// After the end of the input: until every call is answered, or the grace is over.
    /// Cancel-safe: the deadline is kept on the transport.
    async fn wait_for_answers(&mut self) {
        let deadline = match self.grace_deadline {
            Some(deadline) => deadline,
            None => {
                let pending = self.shared.pending();
                if pending > 0 {
                    tracing::info!(
                        target: "fusion::transport",
                        pending,
                        grace_ms = self.grace.as_millis() as u64,
                        "stdin closed; waiting for the calls still running"
                    );
                }
                // `Duration::MAX` means "wait for every call": a deadline past any run.
                let now = Instant::now();
                let deadline = now
                    .checked_add(self.grace)
                    .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600));
                *self.grace_deadline.insert(deadline)
            }
        };
        tokio::select! {
            () = self.shared.wait_all_answered() => {}
            () = tokio::time::sleep_until(deadline) => {}
            () = self.shared.output_closed.wait() => {}
        }
    }
}

/// The answer to a request whose id is still in flight.
fn id_in_use(id: &RequestId) -> ErrorReply {
    tracing::warn!(target: "fusion::transport", %id, "a request reused an id still in flight; refused");
    ErrorReply {
        id: Some(id.clone()),
        error: ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!(
                "Invalid request: the id {id} is already in use by a request still in flight; the earlier request goes on. Give each request its own id."
            ),
            None,
        ),
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = io::Error;

    fn name() -> std::borrow::Cow<'static, str> {
        "fusion-stdio".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let Some(id) = answered_request(&item) {
            self.shared.answered(id);
        }
        // Serialized and queued here, in the call, not in the returned future: rmcp spawns
        // the futures, so only the calls are in rmcp's order. Serializing here also lets
        // the reader count the bytes waiting to be written (backpressure).
        let line = serialize(&item);
        let queued = if line.is_empty() {
            Ok(())
        } else {
            queue_line(&self.out, &self.shared, line)
        };
        std::future::ready(queued)
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientMessage>> + Send {
        self.next_message()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let (done, written) = oneshot::channel();
        if self.out.send(Outgoing::Close(done)).is_ok()
            && tokio::time::timeout(WRITE_ON_CLOSE_TIMEOUT, written)
                .await
                .is_err()
        {
            tracing::warn!(target: "fusion::transport", "stdout did not drain in time; answers may be lost");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use super::*;

    fn lines(max: usize, input: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::new(max);
        let mut seen = Vec::new();
        for chunk in input {
            lines.compact();
            lines.buffer.extend_from_slice(chunk);
            loop {
                match lines.next() {
                    Next::NeedMore => break,
                    Next::Line(line) => seen.push(String::from_utf8_lossy(line).into_owned()),
                    Next::TooLong(start) => {
                        seen.push(format!("TOO LONG: {}", String::from_utf8_lossy(start)));
                    }
                }
            }
        }
        seen
    }

    #[test]
    fn lines_split_across_reads() {
        assert_eq!(
            lines(100, &[b"ab", b"c\nde", b"f\n\ng", b"h\n"]),
            ["abc", "def", "", "gh"]
        );
    }

    #[test]
    fn a_long_line_is_reported_once_and_skipped_without_being_kept() {
        let mut state = Lines::new(8);
        state.buffer.extend_from_slice(b"0123456789");
        assert!(matches!(state.next(), Next::TooLong(b"01234567")));
        for _ in 0..100 {
            state.compact();
            state.buffer.extend_from_slice(&[b'x'; 1000]);
            assert!(matches!(state.next(), Next::NeedMore));
            assert!(
                state.buffer.len() <= 1000,
                "the skipped line is not buffered"
            );
        }
        state.compact();
        state.buffer.extend_from_slice(b"xxx\nok\n");
        assert!(matches!(state.next(), Next::Line(b"ok")));
        assert!(matches!(state.next(), Next::NeedMore));
        // A long line that arrives whole, newline included.
        assert_eq!(lines(4, &[b"abcdefgh\nabc\n"]), ["TOO LONG: abcd", "abc"]);
    }

    fn ping(id: u32) -> String {
        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n")
    }

    /// A transport over in-memory pipes: what the test writes, and what the server wrote.
    fn pair(
        options: &StdioOptions,
    ) -> (
        StdioTransport,
        StdioHandle,
        tokio::io::DuplexStream,
        tokio::io::DuplexStream,
    ) {
        let (client_in, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, client_out) = tokio::io::duplex(1 << 16);
        let (transport, handle) = StdioTransport::new(
            Input::Async(Box::pin(server_in)),
            Output::Async(Box::pin(server_out)),
            options,
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        )
        .expect("a transport");
        (transport, handle, client_in, client_out)
    }

    async fn read_lines(
        output: &mut tokio::io::DuplexStream,
        count: usize,
    ) -> Vec<serde_json::Value> {
        let mut text = Vec::new();
        let mut chunk = [0u8; 4096];
        while text.iter().filter(|&&b| b == b'\n').count() < count {
            let read = tokio::time::timeout(Duration::from_secs(5), output.read(&mut chunk))
                .await
                .expect("output in time")
                .expect("readable");
            assert!(read > 0, "output closed early");
            text.extend_from_slice(&chunk[..read]);
        }
        text.split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).expect("every output line is JSON"))
            .collect()
    }

    #[tokio::test]
    async fn receive_is_cancel_safe() {
        let (mut transport, _handle, mut client, _out) = pair(&StdioOptions::default());
        // Half a message, then a receive that is cancelled while waiting for the rest.
        let line = ping(1);
        let (first, second) = line.as_bytes().split_at(10);
        client.write_all(first).await.expect("write");
        let cancelled = tokio::time::timeout(Duration::from_millis(50), transport.receive()).await;
        assert!(cancelled.is_err(), "no message yet");
        client.write_all(second).await.expect("write");
        let message = tokio::time::timeout(Duration::from_secs(5), transport.receive())
            .await
            .expect("in time")
            .expect("a message");
        assert!(matches!(message, JsonRpcMessage::Request(_)));
    }

    #[tokio::test]
    async fn garbage_is_answered_and_the_next_message_still_arrives() {
        let options = StdioOptions::default().max_line_bytes(64);
        let (mut transport, handle, mut client, mut out) = pair(&options);
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"{}\"}}}}\n",
            "x".repeat(500)
        );
        let input = format!("not json\n\n{{\"a\":1}}\n{long}{}", ping(2));
        client.write_all(input.as_bytes()).await.expect("write");
        let message = transport.receive().await.expect("the ping");
        let JsonRpcMessage::Request(request) = message else {
            panic!("a request");
        };
        assert_eq!(request.id, RequestId::Number(2));
        handle.flush(Duration::from_secs(5)).await;
        let answers = read_lines(&mut out, 3).await;
        assert_eq!(answers[0]["error"]["code"], -32700);
        assert_eq!(answers[0]["id"], serde_json::Value::Null);
        assert_eq!(answers[1]["error"]["code"], -32600);
        assert_eq!(answers[2]["error"]["code"], -32600);
        assert_eq!(
            answers[2]["id"], 5,
            "the id is read from the long line's start"
        );
    }

    #[tokio::test]
    async fn sends_keep_their_order_and_share_writes() {
        let (mut transport, handle, _client, mut out) = pair(&StdioOptions::default());
        for id in 0..100 {
            let message = TxJsonRpcMessage::<RoleServer>::error(
                ErrorData::internal_error("x", None),
                Some(RequestId::Number(id)),
            );
            // The futures are dropped unpolled, as a spawned task might run late.
            drop(transport.send(message));
        }
        handle.flush(Duration::from_secs(5)).await;
        let answers = read_lines(&mut out, 100).await;
        let ids: Vec<i64> = answers.iter().filter_map(|a| a["id"].as_i64()).collect();
        assert_eq!(ids, (0..100).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn end_of_input_waits_for_unanswered_calls_up_to_the_grace() {
        let options = StdioOptions::default().shutdown_grace(Duration::from_secs(5));
        let (mut transport, handle, mut client, _out) = pair(&options);
        client.write_all(ping(1).as_bytes()).await.expect("write");
        client.write_all(ping(2).as_bytes()).await.expect("write");
        drop(client);
        assert!(transport.receive().await.is_some());
        assert!(transport.receive().await.is_some());
        assert_eq!(handle.pending(), 2);
        let answer = |id| {
            TxJsonRpcMessage::<RoleServer>::error(
                ErrorData::internal_error("x", None),
                Some(RequestId::Number(id)),
            )
        };
        drop(transport.send(answer(1)));
        let started = Instant::now();
        let ended = transport.receive().await;
        assert!(ended.is_none());
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(5),
            "gave up after the grace"
        );
        assert_eq!(handle.pending(), 1);

        // With everything answered, the end is immediate.
        let (mut transport, _handle, mut client, _out) = pair(&options);
        client.write_all(ping(3).as_bytes()).await.expect("write");
        drop(client);
        assert!(transport.receive().await.is_some());
        drop(transport.send(answer(3)));
        let started = Instant::now();
        assert!(transport.receive().await.is_none());
        assert_eq!(started.elapsed(), Duration::ZERO);

        // An unbounded grace is a deadline far away, not an overflow.
        let forever = StdioOptions::default().shutdown_grace(Duration::MAX);
        let (mut transport, _handle, client, _out) = pair(&forever);
        drop(client);
        assert!(transport.receive().await.is_none());
    }

    #[tokio::test]
    async fn notifications_before_initialize_are_dropped() {
        let (mut transport, _handle, mut client, _out) = pair(&StdioOptions::default());
        let cancel = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}\n";
        let initialize = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n";
        let input = format!("{cancel}{}{cancel}{initialize}{cancel}", ping(1));
        client.write_all(input.as_bytes()).await.expect("write");
        let mut next = async || {
            tokio::time::timeout(Duration::from_secs(5), transport.receive())
                .await
                .expect("in time")
                .expect("a message")
        };
        // The ping (rmcp answers it during its handshake), not the notification before it.
        assert!(matches!(next().await, JsonRpcMessage::Request(_)));
        assert!(
            matches!(next().await, JsonRpcMessage::Request(_)),
            "initialize"
        );
        assert!(
            matches!(next().await, JsonRpcMessage::Notification(_)),
            "after initialize"
        );
    }

    fn big_answer(id: i64) -> TxJsonRpcMessage<RoleServer> {
        TxJsonRpcMessage::<RoleServer>::error(
            ErrorData::internal_error("x".repeat(10_000), None),
            Some(RequestId::Number(id)),
        )
    }

    #[tokio::test]
    async fn a_client_that_stops_reading_stops_the_reading_of_its_requests() {
        let options = StdioOptions::default().max_unwritten_bytes(20_000);
        let (mut transport, handle, mut client, mut out) = pair(&options);
        // 200 kB of answers: the pipe takes 64 kB, the rest waits to be written.
        for id in 0..20 {
            drop(transport.send(big_answer(id)));
        }
        client.write_all(ping(1).as_bytes()).await.expect("write");
        let paused = tokio::time::timeout(Duration::from_millis(200), transport.receive()).await;
        assert!(paused.is_err(), "no request is read while stdout is full");
        // The client reads its answers: every one arrives, then its request is read.
        let answers = read_lines(&mut out, 20).await;
        assert_eq!(answers.len(), 20);
        let message = tokio::time::timeout(Duration::from_secs(5), transport.receive())
            .await
            .expect("reading resumed")
            .expect("the ping");
        assert!(matches!(message, JsonRpcMessage::Request(_)));
        handle.flush(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn a_second_request_with_an_id_in_flight_is_refused_and_the_first_goes_on() {
        let (mut transport, handle, mut client, mut out) = pair(&StdioOptions::default());
        client
            .write_all(format!("{}{}{}", ping(7), ping(7), ping(8)).as_bytes())
            .await
            .expect("write");
        let first = transport.receive().await.expect("the first 7");
        let JsonRpcMessage::Request(first) = first else {
            panic!("a request");
        };
        assert_eq!(first.id, RequestId::Number(7));
        let next = transport.receive().await.expect("the 8");
        let JsonRpcMessage::Request(next) = next else {
            panic!("a request");
        };
        assert_eq!(
            next.id,
            RequestId::Number(8),
            "the second 7 never reaches rmcp"
        );
        handle.flush(Duration::from_secs(5)).await;
        let refused = read_lines(&mut out, 1).await;
        assert_eq!(refused[0]["id"], 7);
        assert_eq!(refused[0]["error"]["code"], -32600);
        assert!(
            refused[0]["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("already in use")),
            "{}",
            refused[0]
        );
        assert_eq!(handle.pending(), 2, "the first 7 and the 8 are in flight");
        // Once the first is answered, the id is free again.
        drop(transport.send(big_answer(7)));
        client.write_all(ping(7).as_bytes()).await.expect("write");
        let again = transport.receive().await.expect("7 again");
        assert!(matches!(again, JsonRpcMessage::Request(r) if r.id == RequestId::Number(7)));
    }

    #[tokio::test(start_paused = true)]
    async fn stop_reading_serves_what_was_read_then_ends_after_the_grace() {
        let options = StdioOptions::default().shutdown_grace(Duration::from_secs(3));
        let (mut transport, handle, mut client, _out) = pair(&options);
        client
            .write_all(format!("{}{}{{\"partial", ping(1), ping(2)).as_bytes())
            .await
            .expect("write");
        assert!(transport.receive().await.is_some());
        handle.stop_reading();
        assert!(
            transport.receive().await.is_some(),
            "the second line was read"
        );
        // The client keeps writing; nothing more is read.
        client.write_all(ping(3).as_bytes()).await.expect("write");
        drop(transport.send(big_answer(1)));
        let started = Instant::now();
        assert!(transport.receive().await.is_none(), "the input ended");
        assert_eq!(started.elapsed(), Duration::from_secs(3), "after the grace");
        assert_eq!(handle.pending(), 1, "call 2 was still running");
    }

    #[tokio::test]
    async fn a_failed_output_is_reported_with_its_cause() {
        let (mut transport, handle, _client, out) = pair(&StdioOptions::default());
        drop(out);
        drop(transport.send(big_answer(1)));
        let ended = tokio::time::timeout(Duration::from_secs(5), transport.receive())
            .await
            .expect("the service ends");
        assert!(ended.is_none());
        assert!(handle.output_error().is_some(), "the cause is kept");
    }

    #[tokio::test]
    async fn a_last_line_without_newline_is_read() {
        let (mut transport, _handle, mut client, _out) = pair(&StdioOptions::default());
        client
            .write_all(ping(9).trim_end().as_bytes())
            .await
            .expect("write");
        drop(client);
        assert!(transport.receive().await.is_some());
    }
}
