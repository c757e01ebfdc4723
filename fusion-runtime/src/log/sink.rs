//! Where the JSON log's lines go: a buffer that a writer thread empties in batches.
//!
//! A call appends its line (or, for a successful call, the line's text: `call_line.rs`)
//! to one shared buffer (a copy under a mutex, no allocation once the buffer has grown)
//! and goes on; the writer thread swaps the buffer for an empty one and writes everything
//! that came meanwhile with one `write`. While lines keep coming it takes them every
//! couple of milliseconds; it is woken only after it went idle (50 ms without a line) or
//! when a large batch waits, so a busy server pays no wake-up a line. A slow stderr (a
//! full pipe, a terminal) never holds up a call until [`PENDING_LIMIT`] bytes wait; then
//! the caller blocks rather than drop a line (a lost fatal event is worse than a slow
//! call).
//!
//! [`Sink::close`] writes out what is queued and stops the thread; lines that come after
//! that are written at once, in the caller, so nothing is lost on the way out of a process.

use std::{
    io::{self, Write},
    sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError},
    time::{Duration, Instant},
};

use super::{
    call_line::{self, CallLine, Queued},
    clock::{Anchor, Clock},
};

/// How often a busy writer looks for new lines: the most a line waits in a busy server.
const TICK: Duration = Duration::from_millis(2);

/// How many ticks a busy writer stays awake with nothing to write before it sleeps until
/// the next line wakes it: between two bursts of calls no caller pays for a wake-up, and
/// an idle server's writer sleeps after 50 ms.
const QUIET_TICKS: u32 = 25;

/// The batch (in bytes written) that makes the writer busy: after a smaller one it sleeps
/// at once, as a server with a call now and then need not wake it 500 times a second.
const BUSY_BATCH: usize = 4 << 10;

/// The bytes that may wait for the writer before a caller blocks: about 2,400 call events,
/// and the most one `write` carries.
const PENDING_LIMIT: usize = 1 << 20;

/// The bytes past which the writer takes a batch at once instead of at its tick.
const WAKE_AT: usize = PENDING_LIMIT / 4;

/// The output of the JSON log, shared by every thread that logs.
pub(crate) struct Sink {
    state: Mutex<State>,
    /// Wakes the writer when a line comes while it is idle, or on close.
    wake: Condvar,
    /// Wakes callers that wait for room, and [`Sink::close`] when the writer is done.
    room: Condvar,
    /// The output, while no writer thread owns it (before start, after close).
    output: Mutex<Option<Box<dyn Write + Send>>>,
}

#[derive(Default)]
struct State {
    pending: Vec<u8>,
    /// Successful calls' lines, still to be formatted, each with the length `pending` had
    /// when it came: where it goes among the other lines.
    calls: Vec<(usize, Queued)>,
    /// The texts of `calls` (names, rendered arguments), one after the other.
    call_text: Vec<u8>,
    /// The writer waits for a line: the next caller wakes it.
    writer_idle: bool,
    /// Callers waiting for the writer to take the queue (it is full).
    waiting_for_room: usize,
    /// No new batch will be taken: the writer drains what is there and stops.
    closing: bool,
    /// The writer has stopped (or never ran): lines are written by their caller.
    finished: bool,
}

impl Sink {
    /// A sink writing to `output` from a thread of its own. If the thread cannot be
    /// started, lines are written to stderr by their callers.
    pub(crate) fn start(output: Box<dyn Write + Send>) -> Arc<Self> {
        let sink = Arc::new(Self {
            state: Mutex::new(State::with_room()),
            wake: Condvar::new(),
            room: Condvar::new(),
            output: Mutex::new(None),
        });
        let writer = Arc::clone(&sink);
        let spawned = std::thread::Builder::new()
            .name("fusion-log".into())
            .spawn(move || writer.write_batches(output));
        if spawned.is_err() {
            // No thread: callers write. The output went with the unrun closure; the log
            // goes to stderr in any case.
            *lock(&sink.output) = Some(Box::new(io::stderr()));
            lock(&sink.state).finished = true;
        }
        sink
    }

    /// Queues one line (or writes it at once once the writer has stopped).
    pub(crate) fn push(&self, line: &[u8]) {
        let Some(mut state) = self.room_for_more() else {
            return self.write_now(line);
        };
        let queued_before = state.queued();
        state.pending.extend_from_slice(line);
        self.wake_after(state, queued_before);
    }

    /// Queues a successful call's line, formatted by the writer thread (or at once, here,
    /// once the writer has stopped). Only its text is copied here, into the queue.
    pub(crate) fn push_call(&self, call: &CallLine<'_>) {
        let Some(mut state) = self.room_for_more() else {
            let mut text = Vec::new();
            let queued = Queued::store(call, &mut text);
            let mut line = Vec::new();
            let anchor = Anchor::now();
            queued.write(&as_text(&text), &mut line, &mut Clock::default(), &anchor);
            return self.write_now(&line);
        };
        let queued_before = state.queued();
        let at = state.pending.len();
        let queued = Queued::store(call, &mut state.call_text);
        state.calls.push((at, queued));
        self.wake_after(state, queued_before);
    }

    /// The queue, once there is room in it; `None` once the writer has stopped.
    fn room_for_more(&self) -> Option<MutexGuard<'_, State>> {
        let mut state = lock(&self.state);
        while state.queued() >= PENDING_LIMIT && !state.closing && !state.finished {
            // Backpressure: wait for the writer to take the batch (now, not at its tick).
            self.wake.notify_one();
            state.waiting_for_room += 1;
            state = self
                .room
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
            state.waiting_for_room -= 1;
        }
        (!state.finished).then_some(state)
    }

    /// Unlocks the queue, then wakes the writer if it went idle, or once the queue has
    /// grown to [`WAKE_AT`]. After the unlock: a writer woken while the lock is still held
    /// would block on it at once, and the caller then pay a second system call to let it in.
    fn wake_after(&self, mut state: MutexGuard<'_, State>, queued_before: usize) {
        let wake = if state.writer_idle {
            state.writer_idle = false;
            true
        } else {
            queued_before < WAKE_AT && state.queued() >= WAKE_AT
        };
        drop(state);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Writes a line in the caller, once the writer has stopped.
    fn write_now(&self, line: &[u8]) {
        if let Some(output) = lock(&self.output).as_mut() {
            // Nowhere to report a failed stderr.
            let _ = output.write_all(line).and_then(|()| output.flush());
        }
    }

    /// Writes out what is queued and stops the writer, waiting at most `timeout` (a stderr
    /// nobody reads must not hold the exit forever). Lines logged afterwards are written by
    /// their callers.
    pub(crate) fn close(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut state = lock(&self.state);
        state.closing = true;
        self.wake.notify_one();
        while !state.finished {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .room
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The writer thread: takes everything queued, writes it with one call, repeats.
    ///
    /// While lines keep coming it takes them once every [`TICK`], not as they come: a
    /// wake-up is a system call for the caller, and a write a few lines long is one for
    /// the writer (taking whatever came during the last write made batches of a handful
    /// of lines at 100k calls a second, and the writer's wake-ups and writes most of the
    /// log's cost). A batch past [`WAKE_AT`] bytes is taken at once. After
    /// [`QUIET_TICKS`] ticks with nothing new (at once after a batch under [`BUSY_BATCH`])
    /// the writer sleeps until the next line wakes it; a line that comes before then is
    /// taken at the end of its tick.
    fn write_batches(&self, mut output: Box<dyn Write + Send>) {
        let State {
            pending: mut batch,
            mut calls,
            mut call_text,
            ..
        } = State::with_room();
        let mut text = Vec::new();
        let mut clock = Clock::default();
        let mut busy = false;
        loop {
            let mut state = lock(&self.state);
            let mut quiet_ticks = 0;
            while !state.closing && state.queued() < WAKE_AT {
                if !state.is_empty() {
                    // Lines are waiting: let the rest of the tick's come too.
                    state.writer_idle = false;
                    state = self.wait_tick(state);
                    break;
                }
                if busy && quiet_ticks < QUIET_TICKS {
                    // Nothing came during the last write: stay awake a little, so that
                    // the next caller need not wake the writer (a system call).
                    quiet_ticks += 1;
                    state = self.wait_tick(state);
                    if state.is_empty() {
                        continue;
                    }
                    break;
                }
                state.writer_idle = true;
                state = self
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            state.writer_idle = false;
            if state.is_empty() {
                // Closing, and everything is written: callers write from now on.
                *lock(&self.output) = Some(output);
                state.finished = true;
                self.room.notify_all();
                return;
            }
            std::mem::swap(&mut batch, &mut state.pending);
            std::mem::swap(&mut calls, &mut state.calls);
            std::mem::swap(&mut call_text, &mut state.call_text);
            // Waking is a system call, and one made under the lock keeps the callers out
            // meanwhile: only when a caller waits, and after the unlock.
            let waiting = state.waiting_for_room > 0;
            drop(state);
            if waiting {
                self.room.notify_all();
            }
            let written = if calls.is_empty() {
                &batch
            } else {
                // The calls' lines formatted here, each in its place among the others, their
                // times told by clocks read after the last of them ended.
                let anchor = Anchor::now();
                let call_text = as_text(&call_text);
                text.clear();
                let mut copied = 0;
                for (at, call) in &calls {
                    text.extend_from_slice(&batch[copied..*at]);
                    call.write(&call_text, &mut text, &mut clock, &anchor);
                    copied = *at;
                }
                text.extend_from_slice(&batch[copied..]);
                &text
            };
            // A failed stderr loses these lines; there is nowhere else to say so.
            let _ = output.write_all(written).and_then(|()| output.flush());
            busy = written.len() >= BUSY_BATCH;
            batch.clear();
            calls.clear();
            call_text.clear();
            if text.capacity() > 2 * PENDING_LIMIT {
                text = Vec::new();
            }
            if call_text.capacity() > 2 * PENDING_LIMIT {
                call_text.shrink_to(PENDING_LIMIT);
            }
            if batch.capacity() > 2 * PENDING_LIMIT {
                // One huge line grew the buffer: give the memory back.
                batch.shrink_to(PENDING_LIMIT);
            }
        }
    }

    /// Waits a [`TICK`] (or for a wake-up: a close, a large batch).
    fn wait_tick<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.wake
            .wait_timeout(state, TICK)
            .unwrap_or_else(PoisonError::into_inner)
            .0
    }
}

impl State {
    /// An empty queue whose buffers already have room for a full one.
    ///
    /// Why: grown a line at a time, they were reallocated (and their old blocks freed)
    /// among the calls' own small allocations, and the holes left behind made every call's
    /// allocations slower: with the log on, malloc ran 290 more instructions a call
    /// (callgrind). Allocated whole, they are never moved; a system allocator maps blocks
    /// this large apart from the small ones, and only the pages used take memory.
    fn with_room() -> Self {
        Self {
            pending: Vec::with_capacity(PENDING_LIMIT),
            calls: Vec::with_capacity(PENDING_LIMIT / call_line::FRAME_BYTES),
            call_text: Vec::with_capacity(PENDING_LIMIT),
            ..Self::default()
        }
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.calls.is_empty()
    }

    /// About the bytes waiting.
    fn queued(&self) -> usize {
        self.pending.len() + self.call_text.len() + self.calls.len() * call_line::FRAME_BYTES
    }
}

/// The calls' texts as one `str`, checked once for the whole batch rather than a text at a
/// time. They were copied from `str`s and serde_json's output, so they are always UTF-8
/// and borrowed; the lossy copy is only there not to lose the lines if they were not.
fn as_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock left plain bytes behind, still fine to write.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The [`MakeWriter`](tracing_subscriber::fmt::MakeWriter) of tracing-subscriber's
/// formatter (the events of other targets): each event's line goes to the same sink, in
/// the order the events happened.
#[derive(Clone)]
pub(crate) struct SinkWriter(pub(crate) Arc<Sink>);

impl Write for SinkWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // tracing-subscriber writes each event with one `write_all` of the whole line; a
        // line quoting a client at length is cut first.
        self.0.push(&super::line_cut::bounded(bytes));
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SinkWriter {
    type Writer = SinkWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_in_order_and_after_close_too() {
        let out = Shared::default();
        let sink = Sink::start(Box::new(out.clone()));
        let threads: Vec<_> = (0..4)
            .map(|thread| {
                let sink = Arc::clone(&sink);
                std::thread::spawn(move || {
                    for line in 0..5_000 {
                        sink.push(format!("{thread} {line}\n").as_bytes());
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().expect("a logging thread");
        }
        sink.close(Duration::from_secs(10));
        sink.push(b"after close\n");
        let text = String::from_utf8(lock(&out.0).clone()).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 20_001);
        assert_eq!(lines.last(), Some(&"after close"));
        for thread in 0..4 {
            let own: Vec<usize> = lines
                .iter()
                .filter_map(|line| line.strip_prefix(&format!("{thread} ")))
                .filter_map(|n| n.parse().ok())
                .collect();
            assert_eq!(own, (0..5_000).collect::<Vec<_>>(), "thread {thread}");
        }
    }

    /// Waits (at most 10 s) until `out` holds `lines` lines.
    fn wait_for_lines(out: &Shared, lines: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if lock(&out.0).iter().filter(|&&byte| byte == b'\n').count() >= lines {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_line_after_a_quiet_spell_is_written_without_a_close() {
        let out = Shared::default();
        let sink = Sink::start(Box::new(out.clone()));
        // A small batch (the writer sleeps at once after it), then a busy one (it stays
        // awake a while first); each time the next line, after the writer went to sleep,
        // must wake it.
        sink.push(b"one\n");
        assert!(wait_for_lines(&out, 1), "the first line was not written");
        std::thread::sleep(Duration::from_millis(20));
        let busy_line = format!("{}\n", "x".repeat(99));
        for _ in 0..(BUSY_BATCH / busy_line.len() + 1) {
            sink.push(busy_line.as_bytes());
        }
        let after_busy = 2 + BUSY_BATCH / busy_line.len();
        assert!(
            wait_for_lines(&out, after_busy),
            "the busy batch was not written"
        );
        std::thread::sleep(TICK * (QUIET_TICKS + 10));
        sink.push(b"last\n");
        assert!(
            wait_for_lines(&out, after_busy + 1),
            "a line after the writer went to sleep was not written"
        );
        sink.close(Duration::from_secs(10));
    }

    fn call<'a>(
        request_id: &'a str,
        args: &'a serde_json::Value,
        redactor: &'a super::super::redact::Redactor,
    ) -> CallLine<'a> {
        CallLine {
            level: tracing::Level::INFO,
            at: std::time::Instant::now(),
            tool: "echo",
            action: "",
            request_id,
            caller: "",
            correlation: 1,
            latency_us: 3,
            outcome: "ok",
            attempts: 1,
            args,
            redactor,
            trace: None,
        }
    }

    #[test]
    fn call_lines_are_formatted_in_their_place_among_the_others() {
        let out = Shared::default();
        let sink = Sink::start(Box::new(out.clone()));
        let args = serde_json::json!({"text": "hi \"there\""});
        let redactor = super::super::redact::Redactor::default();
        for n in 0..1_000 {
            sink.push(format!("line {n}\n").as_bytes());
            sink.push_call(&call(&n.to_string(), &args, &redactor));
        }
        sink.close(Duration::from_secs(10));
        sink.push_call(&call("after close", &args, &redactor));
        let text = String::from_utf8(lock(&out.0).clone()).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2_001);
        for n in 0..1_000 {
            assert_eq!(lines[2 * n], format!("line {n}"));
            let event: serde_json::Value =
                serde_json::from_str(lines[2 * n + 1]).expect("a JSON line");
            assert_eq!(event["fields"]["request_id"], n.to_string());
            assert_eq!(event["fields"]["arguments"], r#"{"text":"hi \"there\""}"#);
            assert_eq!(event["target"], "fusion::call");
        }
        assert!(lines[2_000].contains("after close"));
    }
}
