//! Started from a terminal, a server says what it is and how to connect, instead of
//! waiting silently for JSON-RPC. `script` (util-linux) gives the server a terminal.

use crate::support;

use std::{process::Command, time::Duration};

#[test]
fn a_terminal_gets_the_banner() {
    let binary = support::example_binary("quickstart");
    let mut command = Command::new("script");
    // `script` copies its (empty) stdin into the terminal: the server reads end-of-input
    // right after printing the banner, and exits.
    command
        .args(["-qec", &binary.display().to_string(), "/dev/null"])
        .env("RUST_LOG", "off");
    let out = support::run_with_timeout(command, Duration::from_secs(30));
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(!out.timed_out, "{}", out.report());
    for expected in [
        "quickstart",
        "an MCP server",
        "echo",
        "get_weather",
        "--method tools/list",
        "mcpServers",
    ] {
        assert!(
            text.contains(expected),
            "missing `{expected}` in:\n{}",
            out.report()
        );
    }
}

/// The snippets name the variables the server requires (issue 36, item 7): pasted without
/// them, the server would exit 78 at once.
#[test]
fn the_banner_snippets_carry_the_required_variables() {
    let binary = support::example_binary("faults");
    let mut command = Command::new("script");
    let line = format!("{} --require-env FUSION_BANNER_TOKEN", binary.display());
    command
        .args(["-qec", &line, "/dev/null"])
        .env("FUSION_BANNER_TOKEN", "set")
        .env("RUST_LOG", "off");
    let out = support::run_with_timeout(command, Duration::from_secs(30));
    assert!(!out.timed_out, "{}", out.report());
    let text = format!("{}{}", out.stdout, out.stderr);
    for expected in [
        "--cli -e FUSION_BANNER_TOKEN='<your FUSION_BANNER_TOKEN>' ",
        "\"env\": {",
        "\"FUSION_BANNER_TOKEN\": \"<your FUSION_BANNER_TOKEN>\"",
    ] {
        assert!(
            text.contains(expected),
            "missing `{expected}` in:\n{}",
            out.report()
        );
    }
}
