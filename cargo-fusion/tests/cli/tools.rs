//! `cargo fusion tools`: the demo's tools with their costs, read from its binary.

use serde_json::Value;

use crate::support::{cargo_fusion, cargo_fusion_with, workspace_root};

#[test]
fn the_json_lists_each_tool_with_its_tokens() {
    let run = cargo_fusion(&["tools", "--json", "-p", "fusion-demo"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let listed: Value = serde_json::from_str(&run.stdout).expect("the output is JSON");
    let tools = listed["tools"].as_array().expect("a list of tools");
    for name in ["db_user", "system"] {
        let tool = tools
            .iter()
            .find(|tool| tool["name"] == name)
            .unwrap_or_else(|| panic!("`{name}` is listed: {listed:#}"));
        assert!(tool["cost"]["tokens"].as_u64() > Some(0), "{tool:#}");
        assert!(tool["cost"]["bytes"].as_u64() > Some(0), "{tool:#}");
    }
    assert!(listed["total"]["tokens"].as_u64() > Some(0), "{listed:#}");
    let find_many = &tools[0]["actions"]
        .as_array()
        .expect("db_user's actions")
        .iter()
        .find(|action| action["name"] == "find_many")
        .cloned()
        .expect("find_many is an action of db_user");
    assert_eq!(find_many["annotations"]["read_only"], true);
    assert!(find_many["policy"]["timeout_ms"].as_u64() > Some(0));
}

#[test]
fn the_table_reads_as_cargo_runs_it() {
    // Cargo runs `cargo-fusion fusion tools ..` for `cargo fusion tools ..`.
    let run = cargo_fusion(&["fusion", "tools", "-p", "fusion-demo"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("TOOL"), "{}", run.stdout);
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("db_user.find_many ")),
        "{}",
        run.stdout
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("tools/list in all ")),
        "{}",
        run.stdout
    );
}

#[test]
fn the_package_of_the_current_directory_is_the_default() {
    let demo = workspace_root().join("examples/demo/src");
    let run = cargo_fusion_with(&["tools", "--json"], &demo, &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("\"db_user\""), "{run:?}");
}

#[test]
fn a_package_without_a_binary_is_refused_before_building() {
    // The workspace root is the package `fusion-tests`: examples and tests, no binary.
    let run = cargo_fusion(&["tools"]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("has no binary"), "{run:?}");
    assert!(
        !run.stderr.contains("Compiling"),
        "nothing is built: {run:?}"
    );
}
