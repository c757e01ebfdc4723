//! A cancellation storm over stdio against `examples/cancel_safety` (`src/cancel_safety.rs`):
//! a few thousand calls to tools behind a circuit breaker, a concurrency limit, an
//! idempotency key (some sharing a key), a timeout, retries with a reconnect, plus panics
//! and hangs, while `notifications/cancelled` goes out for random calls at random moments
//! (right after the request, or up to 30 ms later: in the queue, mid-run, in a backoff, in
//! a reconnect). Every call to `hang` is cancelled, since nothing else ends it.
//!
//! Asserts: every request that was not cancelled is answered exactly once, with the outcome
//! its tool gives; a cancelled one is answered at most once; all successful answers for one
//! idempotency key are the same result. Then the server must still serve each policy: the
//! circuit probes and closes with the upstream healthy, a call that has to queue behind a
//! running one is admitted, a fresh idempotency key runs once and replays, and `in_flight`
//! reports no call left running.
//!
//! The RNG is seeded (`CANCEL_STORM_SEED` overrides the seed, printed on each run). Every wait
//! is bounded; the child is killed on every exit path. Needs the built example
//! (`cargo build --example cancel_safety`).

use crate::support;

use std::{
    collections::{BTreeMap, HashMap, HashSet},
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::stdio_peer::StdioPeer;

/// Calls in the storm.
const CALLS: u64 = 5_000;

/// Calls outstanding at once (sent, neither answered nor cancelled).
const WINDOW: usize = 48;

/// The whole storm must end within this.
const STORM_DEADLINE: Duration = Duration::from_secs(60);

/// Silence this long while calls are outstanding means the server is stuck.
const SILENCE: Duration = Duration::from_secs(10);

/// The bound on each call after the storm.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The seed of the storm, unless `CANCEL_STORM_SEED` gives another.
const DEFAULT_SEED: u64 = 0x5707_14ca_9ce1;

/// What a storm call asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    /// The circuit-broken tool, failing.
    BreakerFail,
    /// The circuit-broken tool, healthy.
    BreakerOk,
    /// The concurrency-limited tool.
    Limited(u64),
    /// An order under one of a few shared idempotency keys.
    SharedOrder(u64),
    /// An order under a key of its own.
    FreshOrder,
    Explode,
    /// Hangs under a 50 ms timeout.
    Stall,
    /// Hangs with no deadline: always cancelled.
    Hang,
    /// Fails transiently 0 to 2 times; retried after a reconnect.
    Flaky(u32),
    /// Fails transiently once; retried after a backoff.
    Blip,
    Work(u64),
}

impl Kind {
    fn pick(rng: &mut fastrand::Rng) -> Self {
        match rng.u32(0..100) {
            0..8 => Self::BreakerFail,
            8..16 => Self::BreakerOk,
            16..30 => Self::Limited(rng.u64(0..=4)),
            30..42 => Self::SharedOrder(rng.u64(0..4)),
            42..46 => Self::FreshOrder,
            46..51 => Self::Explode,
            51..56 => Self::Stall,
            56..59 => Self::Hang,
            59..69 => Self::Flaky(rng.u32(0..=2)),
            69..76 => Self::Blip,
            _ => Self::Work(rng.u64(0..=5)),
        }
    }

    fn params(&self, id: u64) -> Value {
        let (tool, arguments) = match self {
            Self::BreakerFail => ("breaker", json!({"fail": true})),
            Self::BreakerOk => ("breaker", json!({"fail": false})),
            Self::Limited(ms) => ("limited", json!({"ms": ms})),
            Self::SharedOrder(key) => (
                "place_order",
                json!({"request_id": format!("shared-{key}"), "item": "lamp"}),
            ),
            Self::FreshOrder => (
                "place_order",
                json!({"request_id": format!("fresh-{id}"), "item": "desk"}),
            ),
            Self::Explode => ("explode", json!({"message": format!("storm {id}")})),
            Self::Stall => ("stall", json!({})),
            Self::Hang => ("hang", json!({})),
            Self::Flaky(fail_times) => (
                "flaky",
                json!({"key": format!("k-{id}"), "fail_times": fail_times}),
            ),
            Self::Blip => ("blip", json!({"key": format!("b-{id}")})),
            Self::Work(ms) => ("work", json!({"ms": ms})),
        };
        json!({"name": tool, "arguments": arguments})
    }

    /// Whether the answer's `isError` must be set (`Some(true)`), clear, or either.
    fn expects_error(&self) -> Option<bool> {
        match self {
            Self::BreakerFail | Self::BreakerOk | Self::Limited(_) => None,
            Self::Explode | Self::Stall => Some(true),
            Self::SharedOrder(_)
            | Self::FreshOrder
            | Self::Flaky(_)
            | Self::Blip
            | Self::Work(_) => Some(false),
            // Never answered unless cancelled first (and then anything goes).
            Self::Hang => None,
        }
    }

    fn order_key(&self, id: u64) -> Option<String> {
        match self {
            Self::SharedOrder(key) => Some(format!("shared-{key}")),
            Self::FreshOrder => Some(format!("fresh-{id}")),
            _ => None,
        }
    }
}

/// The storm's bookkeeping and the pipes to the server.
struct Storm {
    /// The server, strict: a stdout line that is not JSON-RPC, stdout closing or stdin
    /// refusing a write fails the test at once.
    server: StdioPeer,
    /// The kind of every storm call sent.
    kinds: HashMap<u64, Kind>,
    /// Sent, not answered, not cancelled.
    outstanding: HashSet<u64>,
    /// Cancelled before an answer came.
    cancelled: HashSet<u64>,
    /// Answers per storm id.
    answers: HashMap<u64, u32>,
    /// Answers to the requests after the storm, by their (string) id.
    finals: HashMap<String, Value>,
    /// Successful results per idempotency key.
    orders: BTreeMap<String, HashSet<String>>,
    problems: Vec<String>,
    cancels_sent: u64,
    answered_after_cancel: u64,
}

impl Storm {
    fn spawn() -> Self {
        let server = StdioPeer::spawn(
            &support::example_binary("cancel_safety"),
            &[],
            &[("RUST_LOG", "warn")],
        )
        .strict();
        Self {
            server,
            kinds: HashMap::new(),
            outstanding: HashSet::new(),
            cancelled: HashSet::new(),
            answers: HashMap::new(),
            finals: HashMap::new(),
            orders: BTreeMap::new(),
            problems: Vec::new(),
            cancels_sent: 0,
            answered_after_cancel: 0,
        }
    }

    /// The end of the server's stderr, for failure reports (panics print there).
    fn stderr_tail(&self) -> String {
        self.server.stderr_tail(4_000)
    }

    fn send(&mut self, message: &Value) {
        self.server.send(message);
    }

    fn cancel(&mut self, id: u64) {
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "storm"}}));
        self.cancels_sent += 1;
        if self.outstanding.remove(&id) {
            self.cancelled.insert(id);
        }
    }

    /// The next message within `timeout`, or `None`.
    fn next(&mut self, timeout: Duration) -> Option<Value> {
        self.server.next(timeout)
    }

    /// Books one message from the server.
    fn handle(&mut self, message: Value) {
        if message.get("id").is_none() && message.get("method").is_some() {
            return; // a notification from the server
        }
        if let Some(id) = message["id"].as_str() {
            if self.finals.insert(id.to_owned(), message.clone()).is_some() {
                self.problems
                    .push(format!("a second answer to {id:?}: {message}"));
            }
            return;
        }
        let Some(id) = message["id"].as_u64() else {
            self.problems
                .push(format!("an answer with an unexpected id: {message}"));
            return;
        };
        let count = self.answers.entry(id).or_default();
        *count += 1;
        if *count > 1 {
            self.problems
                .push(format!("call {id} answered {count} times; now: {message}"));
            return;
        }
        let Some(kind) = self.kinds.get(&id).cloned() else {
            self.problems.push(format!(
                "an answer to {id}, which was never sent: {message}"
            ));
            return;
        };
        let was_cancelled = self.cancelled.contains(&id);
        if was_cancelled {
            self.answered_after_cancel += 1;
        } else {
            self.outstanding.remove(&id);
        }
        let Some(result) = message.get("result") else {
            self.problems
                .push(format!("{kind:?} call {id} got no result: {message}"));
            return;
        };
        let is_error = result["isError"] == true;
        if !was_cancelled {
            if kind == Kind::Hang {
                self.problems.push(format!(
                    "`hang` call {id} answered before its cancel: {message}"
                ));
            }
            if kind
                .expects_error()
                .is_some_and(|expected| expected != is_error)
            {
                self.problems
                    .push(format!("{kind:?} call {id}: unexpected outcome: {message}"));
            }
        }
        if let Some(key) = kind.order_key(id)
            && !is_error
        {
            let text = result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            self.orders.entry(key).or_default().insert(text);
        }
    }

    /// Sends a request with a string id and waits for its answer, booking every other
    /// message that arrives meanwhile.
    fn request(&mut self, id: &str, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.await_answer(id)
    }

    fn await_answer(&mut self, id: &str) -> Value {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            if let Some(answer) = self.finals.get(id) {
                return answer.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(message) => self.handle(message),
                None => panic!(
                    "no answer to {id:?} within {ANSWER_TIMEOUT:?}: the server is wedged\n--- stderr ---\n{}",
                    self.stderr_tail()
                ),
            }
        }
    }

    fn call(&mut self, id: &str, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// A call after the storm that must succeed; its text.
    fn call_ok(&mut self, id: &str, tool: &str, arguments: Value, what: &str) -> Option<String> {
        let answer = self.call(id, tool, arguments);
        if answer["result"]["isError"] == false && answer["result"].is_object() {
            answer["result"]["content"][0]["text"]
                .as_str()
                .map(str::to_owned)
        } else {
            self.problems
                .push(format!("after the storm, {what}: {answer}"));
            None
        }
    }
}

#[test]
fn a_cancellation_storm_leaves_every_policy_serving() {
    let seed = std::env::var("CANCEL_STORM_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut storm = Storm::spawn();
    let started = Instant::now();

    let init = storm.request(
        "init",
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cancel-storm", "version": "1"}}),
    );
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    storm.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // Cancels to send, with when.
    let mut due: Vec<(Instant, u64)> = Vec::new();
    let mut next_id = 1_u64;
    let mut last_message = Instant::now();
    while next_id <= CALLS || !storm.outstanding.is_empty() || !due.is_empty() {
        assert!(
            started.elapsed() < STORM_DEADLINE,
            "the storm took over {STORM_DEADLINE:?}; {} calls outstanding",
            storm.outstanding.len()
        );
        while next_id <= CALLS && storm.outstanding.len() < WINDOW {
            let id = next_id;
            next_id += 1;
            let kind = Kind::pick(&mut rng);
            let params = kind.params(id);
            let hang = kind == Kind::Hang;
            storm.kinds.insert(id, kind);
            storm.outstanding.insert(id);
            storm.send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
            );
            // A quarter of the calls (and every `hang`) are cancelled: half of those at
            // once, the others up to 30 ms later.
            if hang || rng.u32(0..4) == 0 {
                let delay = if rng.bool() { 0 } else { rng.u64(1..=30) };
                due.push((Instant::now() + Duration::from_millis(delay), id));
            }
            // Now and then, a cancel for a random earlier call, answered or not.
            if rng.u32(0..50) == 0 {
                due.push((Instant::now(), rng.u64(1..=id)));
            }
        }
        let now = Instant::now();
        let (fire, later): (Vec<_>, Vec<_>) = due.into_iter().partition(|(at, _)| *at <= now);
        due = later;
        for (_, id) in fire {
            storm.cancel(id);
        }
        let wait = due
            .iter()
            .map(|(at, _)| at.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_millis(20))
            .min(Duration::from_millis(20));
        match storm.next(wait) {
            Some(message) => {
                last_message = Instant::now();
                storm.handle(message);
            }
            None if !storm.outstanding.is_empty() && last_message.elapsed() > SILENCE => {
                let mut stuck: Vec<String> = storm
                    .outstanding
                    .iter()
                    .take(20)
                    .map(|id| format!("{id} {:?}", storm.kinds.get(id)))
                    .collect();
                stuck.sort();
                panic!(
                    "no answer for {SILENCE:?} with {} calls outstanding, e.g. {stuck:?}\n--- stderr ---\n{}",
                    storm.outstanding.len(),
                    storm.stderr_tail()
                );
            }
            None => {}
        }
    }
    let storm_time = started.elapsed();
    // Late answers to cancelled calls (at most one each) and duplicates show up here.
    let settle = Instant::now() + Duration::from_millis(300);
    while let Some(message) = storm.next(settle.saturating_duration_since(Instant::now())) {
        storm.handle(message);
    }

    // Each policy still serves. The circuit: past its cooldown, a healthy call probes and
    // closes it; the next one runs.
    thread::sleep(Duration::from_millis(120));
    storm.call_ok(
        "final-breaker-probe",
        "breaker",
        json!({"fail": false}),
        "the circuit's probe (upstream healthy)",
    );
    storm.call_ok(
        "final-breaker",
        "breaker",
        json!({"fail": false}),
        "a call once the circuit closed",
    );
    // The concurrency limit: one call runs, a second has to queue, both are served.
    storm.send(
        &json!({"jsonrpc": "2.0", "id": "final-limited-running", "method": "tools/call",
        "params": {"name": "limited", "arguments": {"ms": 300}}}),
    );
    thread::sleep(Duration::from_millis(100));
    storm.call_ok(
        "final-limited-queued",
        "limited",
        json!({"ms": 1}),
        "a `limited` call that had to queue",
    );
    let running = storm.await_answer("final-limited-running");
    if running["result"]["isError"] != false {
        storm.problems.push(format!(
            "after the storm, the running `limited` call: {running}"
        ));
    }
    // A fresh idempotency key runs once, then replays.
    let order = json!({"request_id": "final-order", "item": "chair"});
    let first = storm.call_ok(
        "final-order-1",
        "place_order",
        order.clone(),
        "an order with a fresh key",
    );
    let again = storm.call_ok(
        "final-order-2",
        "place_order",
        order,
        "the same order again",
    );
    if first.is_some() && first != again {
        storm.problems.push(format!(
            "a fresh key did not replay: {first:?}, then {again:?}"
        ));
    }
    // The other tools answer as they should.
    storm.call_ok("final-work", "work", json!({"ms": 1}), "`work`");
    storm.call_ok(
        "final-flaky",
        "flaky",
        json!({"key": "final", "fail_times": 2}),
        "`flaky` after two failures",
    );
    storm.call_ok("final-blip", "blip", json!({"key": "final"}), "`blip`");
    for (id, tool) in [("final-explode", "explode"), ("final-stall", "stall")] {
        let answer = storm.call(id, tool, json!({}));
        if answer["result"]["isError"] != true {
            storm.problems.push(format!(
                "after the storm, `{tool}` did not fail as it should: {answer}"
            ));
        }
    }
    // Nothing is left running: cancelled calls finished unwinding.
    let mut in_flight = Value::Null;
    for attempt in 0..20 {
        in_flight = storm.call(
            &format!("final-in-flight-{attempt}"),
            "in_flight",
            json!({}),
        );
        if in_flight["result"]["structuredContent"]["total"] == 0 {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    if in_flight["result"]["structuredContent"]["total"] != 0 {
        storm.problems.push(format!(
            "calls still in flight after the storm: {in_flight}"
        ));
    }

    // Exactly one answer per call that was not cancelled, and one result per key.
    let unanswered: Vec<u64> = storm.outstanding.iter().copied().collect();
    if !unanswered.is_empty() {
        storm.problems.push(format!(
            "{} calls were never answered: {unanswered:?}",
            unanswered.len()
        ));
    }
    for (key, results) in &storm.orders {
        if results.len() > 1 {
            storm.problems.push(format!(
                "idempotency key {key:?} gave {} different results: {results:?}",
                results.len()
            ));
        }
    }
    println!(
        "cancel storm (seed {seed}): {CALLS} calls, {} cancels sent ({} calls cancelled before an answer, {} of those answered anyway) in {storm_time:.1?}; {:.1?} in all",
        storm.cancels_sent,
        storm.cancelled.len(),
        storm.answered_after_cancel,
        started.elapsed()
    );
    let problems = std::mem::take(&mut storm.problems);
    assert!(
        problems.is_empty(),
        "{} problem(s) (seed {seed}):\n  {}\n--- stderr (tail) ---\n{}",
        problems.len(),
        problems
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  "),
        storm.stderr_tail()
    );
}
