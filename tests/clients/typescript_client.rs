//! The official MCP TypeScript SDK client (`@modelcontextprotocol/sdk`, pinned in
//! `tests/typescript/package.json`) against the conformance example over Streamable HTTP,
//! as a client that declares roots, sampling and elicitation (as Claude Desktop, VS Code
//! and Cursor do): a tool asks it mid-call (sampling, elicitation, roots) and gets the
//! answer, progress reaches it, eight calls asking at once each get their own answer, and
//! its refusal is the tool's error (`tests/typescript/http_client.mjs`); and against the
//! faults example, a long call kept alive by the heartbeat (`tests/typescript/heartbeat.mjs`).
//!
//! Needs Node ≥ 22 with npm (`scripts/node-env`, or `FUSION_NODE_BIN`) and the built
//! examples; the SDK is installed once into `<target>/typescript-client` (npm's cache makes
//! later installs offline). Without Node the test is skipped with a note, except under
//! `CI=true`, where it fails.

use crate::support;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

/// The install of the pinned SDK (the first downloads it).
const INSTALL_TIMEOUT: Duration = Duration::from_secs(300);

/// The whole client run (the script bounds each of its own waits at 20 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The directory holding the script and the pinned SDK, installed when its `package.json`
/// differs from the one in `tests/typescript/` (a new pin installs anew). The MCP Apps
/// extension's package is installed beside it, for its JSON Schema.
pub(crate) fn installed_client(node_bin: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("typescript");
    let dir = support::target_dir().join("typescript-client");
    std::fs::create_dir_all(&dir).expect("the client's directory");
    // One install at a time: tests in threads (`cargo test`) and in processes (nextest)
    // both come here, and one must not run the script while another installs. Released
    // when `_install` is dropped, on every exit path.
    let _install = std::fs::File::create(dir.join(".install.lock"))
        .and_then(|lock| lock.lock().map(|()| lock))
        .expect("the install lock");
    let wanted = std::fs::read(source.join("package.json")).expect("tests/typescript/package.json");
    let installed = std::fs::read(dir.join("package.json")).ok();
    let sdk = dir
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join("sdk");
    if installed.as_deref() != Some(&wanted[..]) || !sdk.is_dir() {
        std::fs::write(dir.join("package.json"), &wanted).expect("package.json copied");
        let mut npm = Command::new(node_bin.join("npm"));
        npm.current_dir(&dir)
            .args(["install", "--no-audit", "--no-fund", "--no-package-lock"])
            .env("PATH", support::path_with(node_bin))
            .env("npm_config_update_notifier", "false");
        let out = support::run_with_timeout(npm, INSTALL_TIMEOUT);
        assert!(
            out.success(),
            "npm install of the TypeScript SDK failed\n{}",
            out.report()
        );
    }
    // The script runs from beside `node_modules`, where ES modules resolve the SDK.
    for script in ["checks.mjs", "http_client.mjs", "heartbeat.mjs"] {
        std::fs::copy(source.join(script), dir.join(script)).expect("the script copied");
    }
    dir
}

#[test]
fn typescript_sdk_answers_a_tools_questions_over_http() {
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let dir = installed_client(&node_bin);
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]);
    let server = support::HttpServer::start(command, Duration::from_secs(30));

    let mut client = Command::new(node_bin.join("node"));
    client
        .current_dir(&dir)
        .arg("http_client.mjs")
        .arg(server.url())
        .env("PATH", support::path_with(&node_bin));
    let out = support::run_with_timeout(client, RUN_TIMEOUT);
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "the TypeScript client failed (or exited 0 without finishing its checks)\n{}\n--- server stderr ---\n{}",
        out.report(),
        server.stderr()
    );
    // Shown with `--nocapture`.
    println!("{}", out.stdout.trim_end());
}

/// The heartbeat (issue 60): the faults example's `slow` tool runs 3 s; the client's
/// request timeout is 1.5 s, reset by progress. With a heartbeat every 300 ms the call is
/// answered; with none the client gives up at its timeout, as hosts do today.
#[test]
fn a_heartbeat_keeps_the_typescript_clients_long_call_alive() {
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let dir = installed_client(&node_bin);
    for (heartbeat_ms, expect) in [("300", "answered"), ("0", "timed-out")] {
        let mut command = Command::new(support::example_binary("faults"));
        command.args(["--http", "0", "--heartbeat-ms", heartbeat_ms]);
        let server = support::HttpServer::start(command, Duration::from_secs(30));
        let mut client = Command::new(node_bin.join("node"));
        client
            .current_dir(&dir)
            .args(["heartbeat.mjs", server.url(), expect])
            .env("PATH", support::path_with(&node_bin));
        let out = support::run_with_timeout(client, RUN_TIMEOUT);
        assert!(
            out.success() && out.stdout.contains("ok: all checks passed"),
            "heartbeat {heartbeat_ms} ms, expected {expect}\n{}\n--- server stderr ---\n{}",
            out.report(),
            server.stderr()
        );
    }
}
