//! The official MCP Python SDK (mcp==2.3.0) drives the quickstart example over stdio.
//!
//! Needs the venv from `scripts/python-env` (or `FUSION_PYTHON`) and the built example
//! (`cargo build --examples`). Without the venv the test is skipped with a note, except when
//! `CI=true`, where it fails. The checks themselves live in `tests/python/stdio_client.py`.

mod support;

use std::{path::Path, process::Command, time::Duration};

/// Hard limit for the whole Python run (the script bounds each of its own waits at 20 s).
const TIMEOUT: Duration = Duration::from_secs(120);

#[test]
fn python_sdk_drives_quickstart_over_stdio() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::example_binary("quickstart");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join("stdio_client.py");

    let mut command = Command::new(&python);
    command
        .arg(&script)
        .arg(&server)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = support::run_with_timeout(command, TIMEOUT);

    assert!(
        out.success(),
        "{} {} {} failed\n{}",
        python.display(),
        script.display(),
        server.display(),
        out.report()
    );
    assert!(
        out.stdout.contains("ok: all checks passed"),
        "the script exited 0 without finishing its checks\n{}",
        out.report()
    );
    // Shown with `--nocapture`.
    println!("{}", out.stdout.trim_end());
}

#[test]
fn python_sdk_runs_the_seed_checks_against_the_demo() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::package_binary("fusion-demo");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join("seed_client.py");
    let mut command = Command::new(&python);
    command
        .arg(&script)
        .arg(&server)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = support::run_with_timeout(command, TIMEOUT);
    assert!(out.success(), "the seed checks failed\n{}", out.report());
    assert!(
        out.stdout.contains("ok: all checks passed"),
        "the script exited 0 without finishing its checks\n{}",
        out.report()
    );
    println!("{}", out.stdout.trim_end());
}

/// Runs `tests/python/http_client.py KIND URL` against `server`.
fn run_http_client(python: &Path, kind: &str, server: &support::HttpServer) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join("http_client.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .arg(kind)
        .arg(server.url())
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = support::run_with_timeout(command, TIMEOUT);
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "the Python client over HTTP ({kind}) failed\n{}\n--- server stderr ---\n{}",
        out.report(),
        server.stderr()
    );
    println!("{}", out.stdout.trim_end());
}

#[test]
fn python_sdk_drives_quickstart_over_http() {
    let Some(python) = support::python() else {
        return;
    };
    let mut command = Command::new(support::example_binary("quickstart"));
    command.args(["--http", "0"]);
    let server = support::HttpServer::start(command, Duration::from_secs(30));
    run_http_client(&python, "quickstart", &server);
}

#[test]
fn python_sdk_uses_resources_prompts_and_client_requests_over_http() {
    let Some(python) = support::python() else {
        return;
    };
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]);
    let server = support::HttpServer::start(command, Duration::from_secs(30));
    run_http_client(&python, "conformance", &server);
}
