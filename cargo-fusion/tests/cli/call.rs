//! `cargo fusion call`: one call to the demo over stdio.

use crate::support::cargo_fusion;

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
