//! `cargo fusion lock --check`: the demo against its committed lockfile, and against
//! lockfiles it no longer matches.

use serde_json::{Value, json};

use crate::support::{cargo_fusion, workspace_root};

/// The demo's committed lockfile, as JSON to change.
fn committed_lockfile() -> Value {
    let path = workspace_root().join("examples/demo/fusion.lock");
    let text = std::fs::read_to_string(path).expect("the demo's lockfile");
    serde_json::from_str(&text).expect("the lockfile is JSON")
}

/// `lock --check` of the demo against `lockfile`, written into a temporary directory.
fn check_against(lockfile: &Value, extra: &[&str]) -> crate::support::Run {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("fusion.lock");
    std::fs::write(&path, serde_json::to_string_pretty(lockfile).expect("JSON")).expect("written");
    let path = path.to_str().expect("a UTF-8 path");
    let mut args = vec!["lock", "--check", "-p", "fusion-demo", "--lockfile", path];
    args.extend_from_slice(extra);
    cargo_fusion(&args)
}

#[test]
fn the_demo_is_its_committed_lockfile() {
    let run = cargo_fusion(&["lock", "--check", "-p", "fusion-demo"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("the surface is the locked one"),
        "{run:?}"
    );
}

#[test]
fn a_tool_gone_from_the_binary_is_breaking() {
    let mut locked = committed_lockfile();
    // The lockfile promises a tool the binary does not have: callers of it would fail.
    locked["tools"]["legacy_report"] = json!({ "description": "The old report." });
    let run = check_against(&locked, &[]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let breaking = run
        .stdout
        .lines()
        .find(|line| line.starts_with("BREAKING"))
        .unwrap_or_else(|| panic!("a BREAKING line: {run:?}"));
    assert!(breaking.contains("legacy_report"), "{breaking}");
    assert!(breaking.contains("the tool was removed"), "{breaking}");
}

#[test]
fn a_risky_change_fails_only_when_strict() {
    let mut locked = committed_lockfile();
    locked["tools"]["system"]["description"] = json!("The service, as it was described.");
    let lenient = check_against(&locked, &[]);
    assert_eq!(lenient.code, Some(0), "{lenient:?}");
    assert!(
        lenient.stdout.lines().any(|line| line.starts_with("RISKY")),
        "{lenient:?}"
    );
    let strict = check_against(&locked, &["--strict"]);
    assert_eq!(strict.code, Some(1), "{strict:?}");
}

#[test]
fn writing_the_lockfile_gives_the_committed_text() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("fusion.lock");
    let path_text = path.to_str().expect("a UTF-8 path");
    let run = cargo_fusion(&["lock", "-p", "fusion-demo", "--lockfile", path_text]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let committed = std::fs::read_to_string(workspace_root().join("examples/demo/fusion.lock"))
        .expect("the demo's lockfile");
    assert_eq!(std::fs::read_to_string(&path).expect("written"), committed);
    let again = cargo_fusion(&["lock", "-p", "fusion-demo", "--lockfile", path_text]);
    assert!(again.stdout.contains("is up to date"), "{again:?}");
}
