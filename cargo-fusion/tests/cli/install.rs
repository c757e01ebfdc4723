//! `cargo fusion install`: the demo added to Cursor's config under a temporary `HOME`.

use serde_json::{Value, json};

use crate::support::{cargo_fusion_with, home_env, workspace_root};

fn install_cursor(home: &std::path::Path, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["install", "cursor", "-p", "fusion-demo"];
    args.extend_from_slice(extra);
    cargo_fusion_with(&args, &workspace_root(), &home_env(home))
}

#[test]
fn a_dry_run_writes_nothing() {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let run = install_cursor(home.path(), &["--dry-run"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("would add `fusion-demo`"), "{run:?}");
    assert!(run.stdout.contains("\"command\""), "{run:?}");
    assert!(!home.path().join(".cursor").exists(), "nothing is written");
}

#[test]
fn the_entry_holds_the_arguments_and_variables_given() {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let run = install_cursor(
        home.path(),
        &["--dry-run", "--env", "DEMO_ROLE=GUEST", "--", "--stdio"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let printed = &run.stdout;
    let entry: Value = serde_json::from_str(
        &printed[printed.find('{').expect("the entry")..=printed.rfind('}').expect("its end")],
    )
    .expect("the entry is JSON");
    assert_eq!(entry["args"], json!(["--stdio"]), "{run:?}");
    assert_eq!(entry["env"], json!({"DEMO_ROLE": "GUEST"}), "{run:?}");

    let malformed = install_cursor(home.path(), &["--dry-run", "--env", "DEMO_ROLE"]);
    assert_eq!(malformed.code, Some(2), "{malformed:?}");
    assert!(
        malformed.stderr.contains("expected NAME=VALUE"),
        "{malformed:?}"
    );
}

#[test]
fn installing_keeps_the_other_entries_and_a_backup() {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let config = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(config.parent().expect("a directory")).expect("created");
    let before =
        "{\"mcpServers\": {\"other\": {\"command\": \"/bin/other\"}}, \"theme\": \"dark\"}\n";
    std::fs::write(&config, before).expect("written");

    let run = install_cursor(home.path(), &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let after: Value =
        serde_json::from_str(&std::fs::read_to_string(&config).expect("the config")).expect("JSON");
    assert_eq!(
        after["mcpServers"]["other"],
        json!({"command": "/bin/other"})
    );
    assert_eq!(after["theme"], "dark");
    let command = after["mcpServers"]["fusion-demo"]["command"]
        .as_str()
        .expect("the demo's command");
    assert!(std::path::Path::new(command).is_absolute(), "{command}");
    assert!(std::path::Path::new(command).exists(), "{command}");
    let backup = home.path().join(".cursor/mcp.json.bak");
    assert_eq!(std::fs::read_to_string(backup).expect("the backup"), before);

    let again = install_cursor(home.path(), &[]);
    assert!(again.stdout.contains("nothing to change"), "{again:?}");
}

#[test]
fn a_new_config_is_made_without_a_backup() {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let run = install_cursor(home.path(), &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(home.path().join(".cursor/mcp.json").exists());
    assert!(!home.path().join(".cursor/mcp.json.bak").exists());
}

#[test]
fn a_malformed_config_is_left_as_it_is() {
    let home = tempfile::tempdir().expect("a temporary HOME");
    let config = home.path().join(".cursor/mcp.json");
    std::fs::create_dir_all(config.parent().expect("a directory")).expect("created");
    std::fs::write(&config, "{ not json").expect("written");
    let run = install_cursor(home.path(), &[]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("malformed"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(&config).expect("the config"),
        "{ not json"
    );
}
