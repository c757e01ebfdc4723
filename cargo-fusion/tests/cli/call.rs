//! `cargo fusion call`: one call to the demo over stdio.

use crate::support::{DemoOverHttp, cargo_fusion};

#[test]
fn a_call_prints_its_result() {
    let run = cargo_fusion(&[
        "call",
        "-p",
        "fusion-demo",
        "db_user",
        "action=find_many",
        "take=2",
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    for user in ["\"id\": 1", "\"id\": 2"] {
        assert!(run.stdout.contains(user), "{user} in {run:?}");
    }
    assert!(!run.stdout.contains("\"id\": 3"), "two users only: {run:?}");
}

#[test]
fn a_failed_call_shows_its_class_and_exits_1() {
    let run = cargo_fusion(&[
        "call",
        "-p",
        "fusion-demo",
        "db_user",
        "action=find_many",
        "take=abc",
    ]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("class: invalid_input"), "{run:?}");
    assert!(run.stdout.contains("code: invalid_arguments"), "{run:?}");
}

#[test]
fn arguments_can_come_as_json() {
    let run = cargo_fusion(&[
        "call",
        "-p",
        "fusion-demo",
        "db_user",
        "--json",
        r#"{"action": "find_by_id", "id": 2}"#,
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Grace 2"), "{run:?}");
}

#[test]
fn a_call_goes_over_streamable_http_with_url() {
    let demo = DemoOverHttp::start();
    let run = cargo_fusion(&[
        "call",
        "--url",
        &demo.url,
        "--timeout-secs",
        "60",
        "db_user",
        "action=find_many",
        "take=2",
    ]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("\"id\": 2"), "{run:?}");
    let failed = cargo_fusion(&["call", "--url", &demo.url, "db_user", "action=nope"]);
    assert_eq!(failed.code, Some(1), "{failed:?}");
    assert!(failed.stdout.contains("class: invalid_input"), "{failed:?}");
}

#[test]
fn an_unreachable_url_says_so() {
    // Port 9 (discard) on the loopback: nothing listens there in a test environment.
    let run = cargo_fusion(&[
        "call",
        "--url",
        "http://127.0.0.1:9/mcp",
        "system",
        "action=health",
    ]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("cannot reach http://127.0.0.1:9/mcp"),
        "{run:?}"
    );
}
