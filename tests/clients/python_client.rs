//! The official MCP Python SDK (mcp==2.3.0) drives the example servers: the quickstart over
//! stdio and over Streamable HTTP, the conformance example's resources, prompts, completion
//! and client requests over HTTP, the seed's checks against the demo over stdio, and tool
//! search (`search_tools`, `call_tool`) against the demo with `--tool-search`, and a long
//! call of the faults example kept alive by the heartbeat past the client's read timeout.
//!
//! Needs the venv from `scripts/python-env` (or `FUSION_PYTHON`) and the built examples and
//! binaries (`cargo build --workspace --bins --examples`). Without the venv the tests are
//! skipped with a note, except when `CI=true`, where they fail. The checks themselves live in
//! `tests/python/stdio_client.py`, `http_client.py`, `seed_client.py`,
//! `tool_search_client.py` and `heartbeat_client.py`.

use crate::support;

use std::{path::Path, process::Command, time::Duration};

/// Hard limit for the whole Python run (the script bounds each of its own waits at 20 s).
const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `tests/python/<script> ARGS..` with the venv's Python for at most [`TIMEOUT`] and
/// asserts it passed every check; `context` goes into the failure message.
fn run_script(
    python: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
    context: &dyn Fn() -> String,
) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join(script);
    let mut command = Command::new(python);
    command
        .arg(&path)
        .args(args)
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = support::run_with_timeout(command, TIMEOUT);
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "{} {script} failed (or exited 0 without finishing its checks)\n{}{}",
        python.display(),
        out.report(),
        context()
    );
    // Shown with `--nocapture`.
    println!("{}", out.stdout.trim_end());
}

#[test]
fn python_sdk_drives_quickstart_over_stdio() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::example_binary("quickstart");
    run_script(
        &python,
        "stdio_client.py",
        &[server.as_os_str()],
        &String::new,
    );
}

#[test]
fn python_sdk_runs_the_seed_checks_against_the_demo() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::package_binary("fusion-demo");
    run_script(
        &python,
        "seed_client.py",
        &[server.as_os_str()],
        &String::new,
    );
}

#[test]
fn python_sdk_searches_and_calls_tools_of_the_demo_with_tool_search() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::package_binary("fusion-demo");
    run_script(
        &python,
        "tool_search_client.py",
        &[server.as_os_str()],
        &String::new,
    );
}

/// Runs `tests/python/http_client.py KIND URL` against `server`.
fn run_http_client(python: &Path, kind: &str, server: &support::HttpServer) {
    let url = server.url();
    run_script(
        python,
        "http_client.py",
        &[std::ffi::OsStr::new(kind), std::ffi::OsStr::new(url)],
        &|| format!("\n--- server stderr ---\n{}", server.stderr()),
    );
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

#[test]
fn python_sdk_answers_a_tools_questions_over_stdio() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::example_binary("conformance");
    run_script(
        &python,
        "stdio_questions.py",
        &[server.as_os_str()],
        &String::new,
    );
}

#[test]
fn python_sdk_keys_a_request_by_its_meta() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::example_binary("faults");
    run_script(
        &python,
        "idempotency_key.py",
        &[server.as_os_str()],
        &String::new,
    );
}

/// The `_meta.ui` objects `app_view.py` printed on a `name: {json}` line.
fn printed_json(stdout: &str, name: &str) -> serde_json::Value {
    let prefix = format!("{name}: ");
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no `{name}` line in:\n{stdout}"));
    serde_json::from_str(line).unwrap_or_else(|error| panic!("{name}: {error}: {line}"))
}

#[test]
fn python_sdk_reads_the_demos_app_view_and_it_meets_the_extensions_schema() {
    let Some(python) = support::python() else {
        return;
    };
    let server = support::package_binary("fusion-demo");
    let out = {
        let mut command = Command::new(&python);
        command
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/app_view.py"))
            .arg(&server);
        support::run_with_timeout(command, Duration::from_secs(120))
    };
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "app_view.py failed\n{}",
        out.report()
    );
    // The extension's own JSON Schema, as its npm package publishes it.
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let dir = super::typescript_client::installed_client(&node_bin);
    let schema_path =
        dir.join("node_modules/@modelcontextprotocol/ext-apps/dist/src/generated/schema.json");
    let text = std::fs::read_to_string(&schema_path)
        .unwrap_or_else(|error| panic!("{}: {error}", schema_path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    for (definition, printed) in [
        ("McpUiToolMeta", "tool-ui"),
        ("McpUiResourceMeta", "resource-ui"),
    ] {
        let mut part = schema["$defs"][definition].clone();
        assert!(part.is_object(), "the schema defines {definition}");
        // The definition refers to its siblings through `#/$defs/..`: keep them reachable.
        part["$defs"] = schema["$defs"].clone();
        let validator = jsonschema::options()
            .build(&part)
            .unwrap_or_else(|error| panic!("{definition}: {error}"));
        let value = printed_json(&out.stdout, printed);
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .map(|error| error.to_string())
            .collect();
        assert!(
            problems.is_empty(),
            "{printed} {value} against {definition}: {problems:#?}"
        );
    }
}

/// The heartbeat (issue 60, item 5): the faults example's `slow` tool runs 3 s, asked for
/// progress over an HTTP client whose read timeout is 1.5 s (the longest it waits for the
/// next bytes). With a heartbeat every 300 ms the call is answered; with none the client
/// gives up at its read timeout.
#[test]
fn a_heartbeat_keeps_the_python_clients_long_call_alive() {
    let Some(python) = support::python() else {
        return;
    };
    for (heartbeat_ms, expect) in [("300", "answered"), ("0", "timed-out")] {
        let mut command = Command::new(support::example_binary("faults"));
        command.args(["--http", "0", "--heartbeat-ms", heartbeat_ms]);
        let server = support::HttpServer::start(command, Duration::from_secs(30));
        run_script(
            &python,
            "heartbeat_client.py",
            &[
                std::ffi::OsStr::new(server.url()),
                std::ffi::OsStr::new(expect),
            ],
            &|| format!("\n--- server stderr ---\n{}", server.stderr()),
        );
    }
}
