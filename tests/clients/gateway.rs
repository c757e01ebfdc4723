//! The gateway (`examples/gateway.rs`) driven by the official Python SDK client over
//! Streamable HTTP while its upstreams die: a notes server written with the Python SDK's own
//! `MCPServer` (a child process over stdio, killed three times mid-load by the client script)
//! and the quickstart, a fusion server over Streamable HTTP (killed, then started again on its
//! port by this test). The checks live in `tests/python/gateway_client.py`:
//! - no read-only call is lost while the notes process restarts (retried, or a cached answer);
//! - no `add_note` reaches the notes server twice (its own log counts them);
//! - the dead fusion upstream's tools leave `tools/list`, its calls say when to retry, and
//!   its tools come back when it does.

use std::{
    path::Path,
    process::Command,
    time::{Duration, Instant},
};

use crate::support::{self, HttpServer};

/// The most a start, or one phase of the client script, may take.
const TIMEOUT: Duration = Duration::from_secs(120);

fn quickstart(port: u16) -> HttpServer {
    let mut command = Command::new(support::example_binary("quickstart"));
    command.args(["--http", &port.to_string()]);
    HttpServer::start(command, TIMEOUT)
}

/// Runs one phase of `gateway_client.py` against `url`, and asserts it passed every check.
fn phase(python: &Path, name: &str, url: &str, env: &[(&str, &Path)], gateway: &HttpServer) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/gateway_client.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .args([name, url])
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for (key, value) in env {
        command.env(key, value);
    }
    let out = support::run_with_timeout(command, TIMEOUT);
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "gateway_client.py {name} failed\n{}\ngateway's stderr:\n{}",
        out.report(),
        gateway.stderr()
    );
    println!("{}", out.stdout.trim_end());
}

#[test]
fn the_gateway_loses_no_read_and_repeats_no_write_while_its_upstreams_die() {
    let Some(python) = support::python() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("fusion-gateway-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let notes_log = dir.join("notes.log");
    let notes_pid = dir.join("notes.pid");
    std::fs::write(&notes_log, "").expect("the notes log");

    let app = quickstart(0);
    let app_port = app.addr().port();
    let mut command = Command::new(support::example_binary("gateway"));
    command
        .args(["--http", "0", "--cooldown-ms", "500", "--python"])
        .arg(&python)
        .arg("--python-server")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/support/notes_upstream.py"))
        .args(["--app-url", app.url()])
        .env("NOTES_LOG", &notes_log)
        .env("NOTES_PID_FILE", &notes_pid);
    let gateway = HttpServer::start(command, TIMEOUT);
    let env = [
        ("NOTES_LOG", notes_log.as_path()),
        ("NOTES_PID_FILE", notes_pid.as_path()),
    ];

    phase(&python, "load", gateway.url(), &env, &gateway);

    drop(app);
    phase(&python, "app-down", gateway.url(), &env, &gateway);

    // The same port again, once the old listener is gone.
    let deadline = Instant::now() + TIMEOUT;
    while std::net::TcpListener::bind(("127.0.0.1", app_port)).is_err() {
        assert!(Instant::now() < deadline, "port {app_port} stayed taken");
        std::thread::sleep(Duration::from_millis(50));
    }
    let _app = quickstart(app_port);
    phase(&python, "app-up", gateway.url(), &env, &gateway);

    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}
