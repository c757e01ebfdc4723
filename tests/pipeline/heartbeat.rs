//! The heartbeat (issue 60, item 1): a call whose client asked for progress, and whose
//! handler sends none for the interval, gets a progress notification from fusion, saying
//! the tool is still working, each value greater than the last. The handler's own progress
//! resets the interval; a tool's `heartbeat` wins over the server's; `"0s"` sends none.
//! The tester's calls carry a progress token, as a client's that asks for progress do; in
//! the tester only an interval that is set applies (as for `timeout`), so the server here
//! sets the default's 10 s itself. The clock is paused: minutes pass at once.

use std::time::Duration;

use fusion_runtime::{Call, Server, prelude::*, testing::Tester};
use serde_json::{Value, json};

/// Works for `seconds` without a word.
#[mcp_tool(timeout = "10m")]
async fn silent(seconds: u64) -> &'static str {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    "done"
}

/// Works for 25 s, reporting progress every 4 s.
#[mcp_tool(timeout = "10m")]
async fn chatty(#[call] call: &Call) -> &'static str {
    for step in 0..6 {
        call.progress(f64::from(step), Some(6.0), None).await;
        tokio::time::sleep(Duration::from_secs(4)).await;
    }
    "done"
}

/// Reports 5 of 10 at once, then works for 25 s.
#[mcp_tool(timeout = "10m")]
async fn halfway(#[call] call: &Call) -> &'static str {
    call.progress(5.0, Some(10.0), Some("half".into())).await;
    tokio::time::sleep(Duration::from_secs(25)).await;
    "done"
}

/// Beats every 3 s, whatever the server says.
#[mcp_tool(timeout = "10m", heartbeat = "3s")]
async fn eager(seconds: u64) -> &'static str {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    "done"
}

/// Never beats.
#[mcp_tool(timeout = "10m", heartbeat = "0s")]
async fn quiet(seconds: u64) -> &'static str {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    "done"
}

fn tester() -> Tester {
    Tester::new(
        Server::builder("long", "1")
            .heartbeat(fusion_runtime::policy::DEFAULT_HEARTBEAT)
            .tool(silent)
            .tool(chatty)
            .tool(halfway)
            .tool(eager)
            .tool(quiet)
            .build(),
    )
}

/// The progress notifications of a call: (progress, total, message).
fn progress(notifications: &[Value]) -> Vec<(f64, Option<f64>, Option<String>)> {
    notifications
        .iter()
        .filter(|sent| sent["method"] == "notifications/progress")
        .map(|sent| {
            let params = &sent["params"];
            (
                params["progress"].as_f64().unwrap_or(f64::NAN),
                params["total"].as_f64(),
                params["message"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_silent_call_beats_every_ten_seconds_and_never_after_its_answer() {
    let result = tester().call("silent", json!({"seconds": 35})).await;
    assert!(!result.is_error, "{}", result.text());
    let beats = progress(result.notifications());
    assert_eq!(beats.len(), 3, "at 10, 20 and 30 s: {beats:?}");
    assert!(
        beats
            .iter()
            .all(|beat| beat.2.as_deref() == Some("still working"))
    );
    assert!(
        beats.windows(2).all(|pair| pair[1].0 > pair[0].0),
        "each value greater than the last: {beats:?}"
    );
    assert_eq!(beats[0].0, 0.0);

    // A call that ends before the interval sends nothing.
    let short = tester().call("silent", json!({"seconds": 9})).await;
    assert!(progress(short.notifications()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_handlers_own_progress_leaves_the_heartbeat_silent() {
    let result = tester().call("chatty", json!({})).await;
    let sent = progress(result.notifications());
    assert_eq!(sent.len(), 6, "{sent:?}");
    assert!(sent.iter().all(|sent| sent.2.is_none()), "{sent:?}");
}

#[tokio::test(start_paused = true)]
async fn a_heartbeat_repeats_the_last_progress_raised_by_the_least_step() {
    let result = tester().call("halfway", json!({})).await;
    let sent = progress(result.notifications());
    assert_eq!(sent.len(), 3, "its own, then at 10 and 20 s: {sent:?}");
    assert_eq!(sent[0], (5.0, Some(10.0), Some("half".to_owned())));
    assert_eq!(sent[1].0, 5.0_f64.next_up());
    assert_eq!(sent[1].1, Some(10.0), "the total is kept");
    assert_eq!(sent[2].0, 5.0_f64.next_up().next_up());
    // Read as a person reads it, the progress is unchanged.
    assert_eq!(format!("{:.6}", sent[2].0), "5.000000");
}

#[tokio::test(start_paused = true)]
async fn a_tools_heartbeat_wins_over_the_servers_and_zero_sends_none() {
    let eagerly = tester().call("eager", json!({"seconds": 10})).await;
    assert_eq!(
        progress(eagerly.notifications()).len(),
        3,
        "at 3, 6 and 9 s"
    );
    let quietly = tester().call("quiet", json!({"seconds": 60})).await;
    assert!(progress(quietly.notifications()).is_empty());

    let server_wide = Tester::new(
        Server::builder("long", "1")
            .heartbeat(Duration::from_secs(4))
            .tool(silent)
            .build(),
    )
    .call("silent", json!({"seconds": 10}))
    .await;
    assert_eq!(
        progress(server_wide.notifications()).len(),
        2,
        "at 4 and 8 s"
    );
    let off = Tester::new(
        Server::builder("long", "1")
            .heartbeat(Duration::ZERO)
            .tool(silent)
            .build(),
    )
    .call("silent", json!({"seconds": 60}))
    .await;
    assert!(progress(off.notifications()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn in_the_tester_only_a_heartbeat_that_is_set_applies() {
    // No interval set: the tester's call gets none (its runtime may have no timers).
    let unset = Tester::new(Server::builder("long", "1").tool(silent).build())
        .call("silent", json!({"seconds": 35}))
        .await;
    assert!(progress(unset.notifications()).is_empty());
}
