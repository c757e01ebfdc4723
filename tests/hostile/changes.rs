//! A subscriber that never reads its notifications (issue 57, item 5; `changes/`): a session
//! of `examples/fleet.rs` subscribes to `stock://apples`, opens its event stream and never
//! reads it, while 60,000 changes are made. The change is answered at once, the notifications
//! that wait for it stop at a bound (the oldest dropped, and counted in
//! `fusion_notifications_dropped_total`), another subscriber that reads hears of the next
//! change as soon as it is made, and every notification is either delivered or counted.
//!
//! Needs redis-server (the fleet example's store); without it the test skips loudly, except
//! under `CI=true`, where it fails.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::json;

use super::streams::{open_session, open_stream};
use crate::support::{fleet::Fleet, post_mcp, raw_http};

const REQUEST: Duration = Duration::from_secs(60);
const FLOOD: u32 = 60_000;
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

fn send(
    addr: SocketAddr,
    session: &str,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    let answer = post_mcp(addr, &[("Mcp-Session-Id", session)], &body, REQUEST);
    assert_eq!(answer.status, 200, "{method}: {answer:?}");
    answer.message()
}

fn subscribe(addr: SocketAddr, session: &str) {
    let answer = send(
        addr,
        session,
        2,
        "resources/subscribe",
        json!({"uri": "stock://apples"}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
}

fn restock(addr: SocketAddr, session: &str, times: u32) {
    let params = json!({"name": "restock", "arguments": {"item": "apples", "times": times}});
    let answer = send(addr, session, 3, "tools/call", params);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}

/// A `GET /mcp` event stream of `session` on a socket with a 4 KiB receive buffer, never
/// read: the kernel holds little of what the server sends it, so the rest waits in the
/// server, where the bound is.
fn open_unread_stream(addr: SocketAddr, session: &str) -> std::net::TcpStream {
    let stream = super::budgets::small_window(LOOPBACK, addr);
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\n\r\n"
    );
    (&stream)
        .write_all(head.as_bytes())
        .expect("the stream's request is sent");
    stream
}

/// The value of `fusion_notifications_dropped_total` on `/metrics`.
fn dropped(addr: SocketAddr) -> u64 {
    let metrics = raw_http(addr, "GET", "/metrics", &[], b"", REQUEST);
    metrics
        .body
        .lines()
        .find_map(|line| line.strip_prefix("fusion_notifications_dropped_total "))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no dropped count in {}", metrics.body))
}

/// The `resources/updated` notifications `stream` delivers until it is quiet for `quiet`.
fn count_notifications(stream: &std::net::TcpStream, quiet: Duration) -> usize {
    stream
        .set_read_timeout(Some(quiet))
        .expect("a read timeout");
    let mut lines = BufReader::new(stream);
    let mut line = String::new();
    let mut count = 0;
    loop {
        line.clear();
        match lines.read_line(&mut line) {
            Ok(0) | Err(_) => return count,
            Ok(_) if line.contains("notifications/resources/updated") => count += 1,
            Ok(_) => {}
        }
    }
}

/// Waits (at most `limit`) until `count` holds still for half a second; its value then.
fn settled(count: &AtomicUsize, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    let mut last = count.load(Ordering::SeqCst);
    while Instant::now() < deadline {
        thread::sleep(Duration::from_millis(500));
        let now = count.load(Ordering::SeqCst);
        if now == last {
            return now;
        }
        last = now;
    }
    panic!("the notifications did not stop within {limit:?} ({last} so far)");
}

#[test]
fn a_subscriber_that_never_reads_is_capped_and_counted_and_holds_up_nobody() {
    let Some(fleet) = Fleet::start("never-reads") else {
        return;
    };
    let replica = fleet.replica_with_sessions(&[]);
    let addr = replica.addr();

    let stuck = open_session(addr);
    subscribe(addr, &stuck);
    let never_read = open_unread_stream(addr, &stuck);

    let reader = open_session(addr);
    subscribe(addr, &reader);
    let heard = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let stream = open_stream(LOOPBACK, addr, &reader).expect("the reader's stream opens");
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("a read timeout");
    let listening = {
        let (heard, done) = (Arc::clone(&heard), Arc::clone(&done));
        thread::spawn(move || {
            let mut lines = BufReader::new(stream);
            let mut line = String::new();
            while !done.load(Ordering::SeqCst) {
                line.clear();
                match lines.read_line(&mut line) {
                    Ok(0) => return,
                    Ok(_) if line.contains("notifications/resources/updated") => {
                        heard.fetch_add(1, Ordering::SeqCst);
                    }
                    _ => {}
                }
            }
        })
    };

    let changer = open_session(addr);
    let started = Instant::now();
    restock(addr, &changer, FLOOD);
    println!("{FLOOD} changes made in {:?}", started.elapsed());
    let before = settled(&heard, REQUEST);
    assert!(before > 0, "the reader heard nothing of the flood");
    restock(addr, &changer, 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while heard.load(Ordering::SeqCst) <= before {
        assert!(
            Instant::now() < deadline,
            "the reader did not hear of the change after the flood"
        );
        thread::sleep(Duration::from_millis(10));
    }
    // Read at last, the stuck stream gives what its queue and the sockets kept.
    let kept = count_notifications(&never_read, Duration::from_secs(2));
    let heard_in_all = settled(&heard, REQUEST);
    done.store(true, Ordering::SeqCst);
    listening.join().expect("the reader's thread");
    let dropped = dropped(addr);
    println!(
        "the reader heard {heard_in_all} (of the flood: {before}), the stuck subscriber had \
         {kept} waiting, {dropped} were dropped"
    );
    // Nothing is lost unseen: each of the two subscribers was sent every change, or the
    // change was counted as dropped.
    let sent = 2 * (u64::from(FLOOD) + 1);
    assert_eq!(
        heard_in_all as u64 + kept as u64 + dropped,
        sent,
        "every notification delivered or counted\n{}",
        replica.stderr()
    );
    // The stuck subscriber's queue holds 256, the sockets between it and the server at
    // most a few megabytes (some 30,000 notifications): the rest were dropped, not kept.
    assert!(
        dropped >= u64::from(FLOOD) / 4,
        "only {dropped} of {FLOOD} dropped: the stuck subscriber's notifications were kept\n{}",
        replica.stderr()
    );
}
