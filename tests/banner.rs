//! Started from a terminal, a server says what it is and how to connect, instead of
//! waiting silently for JSON-RPC. `script` (util-linux) gives the server a terminal.

mod support;

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
