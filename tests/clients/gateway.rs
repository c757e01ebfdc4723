//! The gateway (`examples/gateway.rs`) driven by the official Python SDK client over
//! Streamable HTTP while its upstreams die: a notes server written with the Python SDK's own
//! `MCPServer` (a child process over stdio, killed three times mid-load by the client script)
//! and the quickstart, a fusion server over Streamable HTTP (killed, then started again on its
//! port by this test). The checks live in `tests/python/gateway_client.py`:
//! - no read-only call is lost while the notes process restarts (retried, or a cached answer);
//! - no `add_note` reaches the notes server twice (its own log counts them);
//! - the dead fusion upstream's tools leave `tools/list`, its calls say when to retry, and
//!   its tools come back when it does; each time the session is told
//!   (`notifications/tools/list_changed`).

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

    // The last phase runs while the upstream is started again, on the same port, once the
    // script has seen it gone (and said so with the file).
    let waiting = dir.join("waiting");
    let mut env = env.to_vec();
    env.push(("GATEWAY_WAITING", waiting.as_path()));
    let marker = waiting.clone();
    let restart = std::thread::spawn(move || {
        let deadline = Instant::now() + TIMEOUT;
        while !marker.exists() {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        while std::net::TcpListener::bind(("127.0.0.1", app_port)).is_err() {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(quickstart(app_port))
    });
    phase(&python, "app-up", gateway.url(), &env, &gateway);
    let _app = restart
        .join()
        .ok()
        .flatten()
        .expect("the upstream was started again");

    drop(gateway);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A child process killed (with its group) when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        support::process::kill_tree(&mut self.0);
    }
}

/// Servers that no one here wrote the serving loop of, mounted in memory: the Python SDK's
/// `MCPServer` over Streamable HTTP (SSE answers, sessions), and an rmcp server over stdio
/// (`examples/rmcp_existing.rs`: rmcp's service loop and stdio transport, with a tool of its
/// own beside fusion's).
#[tokio::test]
async fn the_python_sdks_http_server_and_an_rmcp_server_are_mounted_and_called() {
    use fusion_runtime::{prelude::*, testing::Tester, upstream::Upstream};
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let mut command = Command::new(&python);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/support/notes_upstream.py"))
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _python_server = Child(support::process::spawn_in_group(&mut command));

    // The start waits for the Python server to listen (within the connect timeout).
    let server = Server::builder("gateway", "1")
        .upstream(
            "py",
            Upstream::http(format!("http://127.0.0.1:{port}/mcp"))
                .connect_timeout(Duration::from_secs(60)),
        )
        .upstream(
            "rmcp",
            Upstream::stdio(
                support::example_binary("rmcp_existing").to_string_lossy(),
                Vec::<String>::new(),
            ),
        )
        .start()
        .await
        .expect("both upstreams list their tools");
    let tester = Tester::new(server);
    let mut names = tester.tools().await;
    names.sort();
    assert_eq!(
        names,
        [
            "py_add_note",
            "py_read_note",
            "py_shout",
            "rmcp_divide",
            "rmcp_version"
        ],
        "every tool of both upstreams, under its prefix"
    );
    let call = |tool: &'static str, args| {
        let tester = &tester;
        async move {
            tokio::time::timeout(TIMEOUT, tester.call(tool, args))
                .await
                .unwrap_or_else(|_| panic!("{tool} was not answered within {TIMEOUT:?}"))
        }
    };
    let shouted = call("py_shout", json!({"text": "over http"})).await;
    assert_eq!(
        shouted.text(),
        "OVER HTTP",
        "the Python server over HTTP answers"
    );
    let missing = call("py_read_note", json!({"id": 99})).await;
    assert!(
        // The SDK's own words for a tool that raised ("Error executing tool read_note"),
        // passed on as they came.
        missing.is_error && missing.text().contains("Error executing tool read_note"),
        "the Python tool's own error is the tool's error: {}",
        missing.text()
    );
    let version = call("rmcp_version", json!({})).await;
    assert_eq!(version.text(), "existing 2.4.1", "rmcp's own tool answers");
    let divided = call("rmcp_divide", json!({"dividend": 1, "divisor": 0})).await;
    assert!(
        divided.is_error,
        "a fusion tool inside rmcp keeps its error through two hops: {}",
        divided.text()
    );
}
