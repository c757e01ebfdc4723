//! Stores a client can grow, sprayed until they would outgrow the process: each stays
//! under the memory bound the hostile-input section of the README promises, whatever the
//! request rate, and forgets its oldest finished entries first.

use std::{
    collections::HashMap,
    io::Write as _,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use crate::support::{self, stdio_peer::StdioPeer};

/// The most a sprayed server may hold (issue 35's bound): its store's bounds, plus what
/// the runtime and the answers in flight take, plus allocator slack.
const SPRAY_RSS_BOUND_KIB: u64 = 100 * 1024;

/// What a spray of idempotency keys saw.
struct KeySpray {
    /// The highest RSS sampled while the calls were answered.
    peak_kib: u64,
    /// The answer's text by id, for the first key, the last, and the two repeats sent
    /// after them (`"oldest"`: the first key again; `"newest"`: the last key again).
    texts: HashMap<String, String>,
}

/// The idempotency key of call `id`: `key_bytes` long, distinct per id.
fn key_of(id: usize, key_bytes: usize) -> String {
    format!("{id:012}{}", "k".repeat(key_bytes.saturating_sub(12)))
}

/// `place_order` calls with `keys` distinct idempotency keys of `key_bytes` bytes each,
/// written by a thread as fast as the server takes them, against `cancel_safety` over
/// stdio, then the first and the last key once more. Every call must be answered with
/// `isError: false`.
fn spray_idempotency_keys(keys: usize, key_bytes: usize) -> KeySpray {
    let mut server = StdioPeer::spawn(&support::example_binary("cancel_safety"), &[], &[])
        .kill_after(Duration::from_secs(240));
    server.initialize();
    let mut stdin = server.take_stdin().expect("stdin");
    let writer = thread::spawn(move || {
        let mut out = std::io::BufWriter::new(&mut stdin);
        let call = |id: Value, key: usize| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "place_order",
                    "arguments": {"request_id": key_of(key, key_bytes), "item": "spray"}}})
        };
        let mut written = 0;
        for id in 0..keys {
            if writeln!(out, "{}", call(json!(id), id)).is_err() {
                return written;
            }
            written += 1;
        }
        for (id, key) in [("oldest", 0), ("newest", keys - 1)] {
            if writeln!(out, "{}", call(json!(id), key)).is_err() {
                return written;
            }
            written += 1;
        }
        let _ = out.flush();
        written
    });
    let kept = [
        "0".to_owned(),
        (keys - 1).to_string(),
        "\"oldest\"".to_owned(),
        "\"newest\"".to_owned(),
    ];
    let mut texts = HashMap::new();
    let mut peak_kib = 0_u64;
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(200);
    let mut sampled = Instant::now();
    while answered < keys + 2 {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(answer) = server.next(left.min(Duration::from_secs(30))) else {
            panic!(
                "{answered} of {} answered when the answers stopped\n{}",
                keys + 2,
                server.stderr_tail(4_000)
            );
        };
        assert_eq!(answer["result"]["isError"], false, "{}", cut(&answer));
        let id = answer["id"].to_string();
        if kept.contains(&id) {
            let text = answer["result"]["content"][0]["text"].as_str();
            texts.insert(
                id.trim_matches('"').to_owned(),
                text.unwrap_or("").to_owned(),
            );
        }
        answered += 1;
        if sampled.elapsed() >= Duration::from_millis(20) {
            peak_kib = peak_kib.max(server.rss_kib().unwrap_or_default());
            sampled = Instant::now();
        }
    }
    peak_kib = peak_kib.max(server.rss_kib().unwrap_or_default());
    let written = writer.join().expect("the writer thread");
    assert_eq!(written, keys + 2, "every call was written");
    KeySpray { peak_kib, texts }
}

/// At most the first 300 characters of an answer, for a failure's message.
fn cut(answer: &Value) -> String {
    answer.to_string().chars().take(300).collect()
}

/// The order number in `place_order`'s text (`order #12 for …`).
fn order_number(text: &str) -> Option<u64> {
    let rest = text.strip_prefix("order #")?;
    rest.split_whitespace().next()?.parse().ok()
}

/// Holds a spray to the bound, and to eviction of the oldest: the last key replays its
/// order, the first (evicted) runs again as a new one.
fn assert_bounded_and_oldest_evicted(spray: &KeySpray, keys: usize, what: &str) {
    eprintln!("{what}: peak RSS {} KiB", spray.peak_kib);
    assert!(
        spray.peak_kib < SPRAY_RSS_BOUND_KIB,
        "RSS peaked at {} KiB under {what} (bound {SPRAY_RSS_BOUND_KIB} KiB)",
        spray.peak_kib
    );
    let order = |id: &str| {
        let text = spray.texts.get(id).map_or("", String::as_str);
        order_number(text).unwrap_or_else(|| panic!("no order number in {id}'s answer: {text:?}"))
    };
    assert_eq!(
        order("newest"),
        order(&(keys - 1).to_string()),
        "the newest key is still kept: its repeat replays the first order"
    );
    assert_ne!(
        order("oldest"),
        order("0"),
        "the oldest key was evicted: its repeat ran as a new order"
    );
}

#[test]
fn two_hundred_thousand_idempotency_keys_keep_the_server_under_100_mb() {
    const KEYS: usize = 200_000;
    let spray = spray_idempotency_keys(KEYS, 12);
    assert_bounded_and_oldest_evicted(&spray, KEYS, "200,000 idempotency keys");
}

#[test]
fn three_hundred_keys_of_256_kib_keep_the_server_under_100_mb() {
    const KEYS: usize = 300;
    let spray = spray_idempotency_keys(KEYS, 256 * 1024);
    assert_bounded_and_oldest_evicted(&spray, KEYS, "300 idempotency keys of 256 KiB");
}
