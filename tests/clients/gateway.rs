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
//!
//! Then the upstream's tools changing while the gateway runs, with a server written with the
//! Python SDK whose tools change on demand (`tests/python/changing_upstream.py`): listed again
//! on its `list_changed` (over stdio, and over Streamable HTTP where the SDK sends it on the
//! session's GET stream, with no `refresh_every`) and at the refresh interval; an upstream down at start added
//! when it comes; a required one that cannot be reached failing the start.

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
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(NOTES_UPSTREAM))
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

/// The official Python client, in a session with the gateway over Streamable HTTP, is sent
/// `notifications/tools/list_changed` when the Python SDK's server it mounts adds a tool and
/// when it removes it (`gateway_client.py grow`, against `python/changing_upstream.py`).
#[test]
fn the_python_client_is_told_when_an_upstreams_tools_change() {
    let Some(python) = support::python() else {
        return;
    };
    let mut command = Command::new(support::example_binary("gateway"));
    command
        .args(["--http", "0", "--python"])
        .arg(&python)
        .arg("--python-server")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(CHANGING_UPSTREAM));
    let gateway = HttpServer::start(command, TIMEOUT);
    phase(&python, "grow", gateway.url(), &[], &gateway);
}

/// The gateway with its app (a fusion server over HTTP) down: it starts,
/// `/readyz` says the app is down and the notes up; once the app is started on its port, the
/// gateway adds it and `/readyz` says it is up.
#[test]
fn a_fusion_upstream_down_at_start_is_down_for_readyz_until_it_comes() {
    let Some(python) = support::python() else {
        return;
    };
    let app_port = support::free_port();
    let mut command = Command::new(support::example_binary("gateway"));
    command
        .args(["--http", "0", "--python"])
        .arg(&python)
        .arg("--python-server")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(NOTES_UPSTREAM))
        .args(["--app-url", &format!("http://127.0.0.1:{app_port}/mcp")]);
    let gateway = HttpServer::start(command, TIMEOUT);
    let readyz = || {
        support::raw_http(
            gateway.addr(),
            "GET",
            "/readyz",
            &[],
            b"",
            Duration::from_secs(5),
        )
    };
    let ready = readyz();
    assert_eq!(ready.status, 200, "{ready:?}");
    assert!(
        ready.body.contains("upstream app down") && ready.body.contains("upstream notes up"),
        "{}",
        ready.body
    );

    let _app = quickstart(app_port);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let ready = readyz();
        if ready.body.contains("upstream app up") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the app was not added within {TIMEOUT:?}: {}\ngateway's stderr:\n{}",
            ready.body,
            gateway.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let port = support::free_port();
    let _python_server = python_http_upstream(&python, NOTES_UPSTREAM, port);

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

/// How long an answer of the changing upstream is cached: longer than the test.
const CACHE_TTL: Duration = Duration::from_secs(600);

/// How long a test waits for a change of an upstream's tools to show in `tools/list`.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(60);

/// Polls `tester`'s `tools/list` until `holds` says yes, or panics after [`CHANGE_TIMEOUT`]
/// with what was listed last.
async fn until_listed(
    tester: &fusion_runtime::testing::Tester,
    what: &str,
    holds: impl Fn(&[String]) -> bool,
) {
    listed_within(
        tester,
        what,
        tokio::time::Instant::now(),
        CHANGE_TIMEOUT,
        holds,
    )
    .await;
}

/// Calls `tool` through `tester`, bounded by [`TIMEOUT`].
async fn bounded(
    tester: &fusion_runtime::testing::Tester,
    tool: &str,
    args: serde_json::Value,
) -> fusion_runtime::testing::TestResult {
    tokio::time::timeout(TIMEOUT, tester.call(tool, args))
        .await
        .unwrap_or_else(|_| panic!("{tool} was not answered within {TIMEOUT:?}"))
}

/// The Python SDK's server whose tools change (`python/changing_upstream.py`), over stdio.
fn changing_upstream(python: &Path) -> fusion_runtime::upstream::Upstream {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(CHANGING_UPSTREAM);
    fusion_runtime::upstream::Upstream::stdio(
        python.to_string_lossy(),
        [script.to_string_lossy().into_owned()],
    )
    .env("PYTHONDONTWRITEBYTECODE", "1")
    .connect_timeout(Duration::from_secs(60))
}

/// An upstream's tools are listed again when it sends `notifications/tools/list_changed`: a
/// tool it adds appears and answers; a tool it removes disappears, and a call to it is
/// answered with a clear error (one it had at start: it no longer offers it; one it added:
/// an unknown tool). The tools that stay keep answering.
#[tokio::test]
async fn an_upstreams_tools_follow_its_list_changed() {
    use fusion_runtime::prelude::*;
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    // Its read-only tools' answers cached: a withdrawn tool's are not served.
    let cache = fusion_runtime::cache::CachePolicy {
        ttl: CACHE_TTL,
        stale_if_error: Duration::from_secs(600),
        scope: fusion_runtime::cache::CacheScope::Public,
    };
    let server = Server::builder("gateway", "1")
        .upstream("chg", changing_upstream(&python).cache(cache))
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = fusion_runtime::testing::Tester::new(server);
    let mut names = tester.tools().await;
    names.sort();
    assert_eq!(names, ["chg_grow", "chg_shrink", "chg_steady"]);
    assert_eq!(
        bounded(&tester, "chg_steady", json!({})).await.text(),
        "steady",
        "answered, and cached"
    );

    let grown = bounded(&tester, "chg_grow", json!({"name": "fresh"})).await;
    assert!(!grown.is_error, "{}", grown.text());
    until_listed(&tester, "the added tool is listed", |names| {
        names.iter().any(|name| name == "chg_fresh")
    })
    .await;
    let fresh = bounded(&tester, "chg_fresh", json!({})).await;
    assert_eq!(fresh.text(), "fresh here", "the added tool answers");

    // Removed: the added tool, and one the upstream had at start.
    for name in ["fresh", "steady"] {
        let shrunk = bounded(&tester, "chg_shrink", json!({"name": name})).await;
        assert!(!shrunk.is_error, "{}", shrunk.text());
    }
    until_listed(&tester, "the removed tools leave the list", |names| {
        !names
            .iter()
            .any(|name| name == "chg_fresh" || name == "chg_steady")
    })
    .await;
    let gone = bounded(&tester, "chg_fresh", json!({})).await;
    assert!(
        gone.is_error && gone.text().contains("chg_fresh"),
        "a call to a removed added tool is an unknown tool's: {}",
        gone.text()
    );
    let gone = bounded(&tester, "chg_steady", json!({})).await;
    assert!(
        gone.is_error
            && gone
                .text()
                .contains("no longer offers the tool `chg_steady`"),
        "a call to a removed tool says the upstream no longer offers it (its cached answer is not served): {}",
        gone.text()
    );

    // A tool it had at start, offered again with another description: listed as it is
    // now, and called.
    let grown = bounded(&tester, "chg_grow", json!({"name": "steady"})).await;
    assert!(!grown.is_error, "{}", grown.text());
    until_listed(&tester, "the tool offered again is listed", |names| {
        names.iter().any(|name| name == "chg_steady")
    })
    .await;
    let steady = tester
        .list_tools()
        .await
        .into_iter()
        .find(|tool| tool.name == "chg_steady")
        .expect("listed");
    assert_eq!(
        steady.description.as_deref(),
        Some("The tool steady."),
        "its description as the upstream gives it now"
    );
    // Called again: the same tool (its hints unchanged), so its record and cached answer
    // (still within its time to live) stay.
    let steady = bounded(&tester, "chg_steady", json!({})).await;
    assert!(
        !steady.is_error && steady.text() == "steady",
        "{}",
        steady.text()
    );
    // Offered again as destructive: not called under the retries and cache of a read-only
    // tool; left out, and its calls refused.
    let shrunk = bounded(&tester, "chg_shrink", json!({"name": "steady"})).await;
    assert!(!shrunk.is_error, "{}", shrunk.text());
    let grown = bounded(
        &tester,
        "chg_grow",
        json!({"name": "steady", "read_only": false}),
    )
    .await;
    assert!(!grown.is_error, "{}", grown.text());
    until_listed(
        &tester,
        "the tool whose hints changed leaves the list",
        |names| !names.iter().any(|name| name == "chg_steady"),
    )
    .await;
    let refused = bounded(&tester, "chg_steady", json!({})).await;
    assert!(
        refused.is_error && refused.text().contains("changed whether `chg_steady`"),
        "{}",
        refused.text()
    );

    // Added again, it comes back, with the same record.
    let grown = bounded(&tester, "chg_grow", json!({"name": "fresh"})).await;
    assert!(!grown.is_error, "{}", grown.text());
    until_listed(&tester, "the tool added again is listed", |names| {
        names.iter().any(|name| name == "chg_fresh")
    })
    .await;
    assert_eq!(
        bounded(&tester, "chg_fresh", json!({})).await.text(),
        "fresh here"
    );
}

/// The Python SDK's servers the gateway mounts, by their paths in the repository.
const NOTES_UPSTREAM: &str = "examples/support/notes_upstream.py";
const CHANGING_UPSTREAM: &str = "tests/python/changing_upstream.py";

/// The Python server `script` (one of the above) over Streamable HTTP on `port`, killed
/// with the test.
fn python_http_upstream(python: &Path, script: &str, port: u16) -> Child {
    let mut command = Command::new(python);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(script))
        .args(["--http", &port.to_string()])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    Child(support::process::spawn_in_group(&mut command))
}

/// Polls `tester`'s `tools/list` until `holds` says yes, or panics after `within` (from
/// `since`) with what was listed last.
async fn listed_within(
    tester: &fusion_runtime::testing::Tester,
    what: &str,
    since: tokio::time::Instant,
    within: Duration,
    holds: impl Fn(&[String]) -> bool,
) {
    loop {
        let names = tester.tools().await;
        if holds(&names) {
            return;
        }
        assert!(
            since.elapsed() < within,
            "{what} within {within:?}; listed: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Over Streamable HTTP, the Python SDK sends `notifications/tools/list_changed` on the
/// session's GET stream (its own `send_tool_list_changed()`, outside any call's answer): the
/// gateway holds that stream, so a tool the upstream adds is listed within seconds, without
/// `refresh_every`.
///
/// Then the upstream restarts on its port, and forgets the session: the GET the gateway
/// opens again is answered `404`. With no call to find that out, the gateway makes a new
/// session itself (its ping on the old one is answered `404` too) and lists the tools once
/// its new stream opens: the tool the old process added leaves the list. A tool added by the
/// new process is heard on the new session's stream.
#[tokio::test]
async fn an_http_upstreams_list_changed_on_its_get_stream_is_heard_across_a_restart() {
    use fusion_runtime::{prelude::*, upstream::Upstream};
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    let port = support::free_port();
    let python_server = python_http_upstream(&python, CHANGING_UPSTREAM, port);
    let server = Server::builder("gateway", "1")
        .upstream(
            "chg",
            // No `refresh_every`: only the notification, or a new stream, can tell.
            Upstream::http(format!("http://127.0.0.1:{port}/mcp"))
                .connect_timeout(Duration::from_secs(60)),
        )
        .start()
        .await
        .expect("the Python SDK's server over HTTP is mounted");
    let tester = fusion_runtime::testing::Tester::new(server);
    // The stream is opened once the server runs; what is sent before it is open is lost
    // (and made up for by one listing when it opens): give it a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let grown = bounded(&tester, "chg_grow", json!({"name": "fresh"})).await;
    assert_eq!(grown.text(), "fresh added", "{}", grown.text());
    let within = Duration::from_secs(10);
    listed_within(
        &tester,
        "the added tool is listed after its list_changed",
        tokio::time::Instant::now(),
        within,
        |names| names.iter().any(|name| name == "chg_fresh"),
    )
    .await;
    let fresh = bounded(&tester, "chg_fresh", json!({})).await;
    assert_eq!(fresh.text(), "fresh here", "{}", fresh.text());

    // The restart: the new process knows neither the session nor `fresh`.
    drop(python_server);
    let _python_server = python_http_upstream(&python, CHANGING_UPSTREAM, port);
    let restarted = tokio::time::Instant::now();
    // The stream is opened again after 1 s, 2 s, 4 s, … while the process starts; no call
    // is made meanwhile, so only the stream's own 404 can renew the session.
    listed_within(
        &tester,
        "the tool of the process before the restart leaves the list once the new session's stream opens",
        restarted,
        CHANGE_TIMEOUT,
        |names| names.iter().any(|name| name == "chg_steady") && !names.iter().any(|name| name == "chg_fresh"),
    )
    .await;
    // Heard on the new session's stream.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let grown = bounded(&tester, "chg_grow", json!({"name": "again"})).await;
    assert_eq!(grown.text(), "again added", "{}", grown.text());
    listed_within(
        &tester,
        "a tool the restarted upstream adds is listed after its list_changed",
        tokio::time::Instant::now(),
        within,
        |names| names.iter().any(|name| name == "chg_again"),
    )
    .await;
}

/// With tool search, a tool the upstream adds since start is found by `search_tools` (by
/// its name and by its upstream's prefix) and called through `call_tool`; once the upstream
/// removes it, it is found no more.
#[tokio::test]
async fn tool_search_finds_the_tools_an_upstream_adds_and_not_those_it_removes() {
    use fusion_runtime::{prelude::*, search::ToolSearch};
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    let server = Server::builder("gateway", "1")
        .tool_search(ToolSearch::always())
        .upstream("chg", changing_upstream(&python))
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = fusion_runtime::testing::Tester::new(server);
    let search = |query: &'static str| {
        let tester = &tester;
        async move {
            let found = bounded(tester, "search_tools", json!({"query": query, "limit": 50})).await;
            assert!(!found.is_error, "{}", found.text());
            found.text()
        }
    };
    // Searched before the tool is added: the index of the tools at start is built.
    assert!(!search("zebra").await.contains("chg_zebra"));
    let grown = bounded(&tester, "chg_grow", json!({"name": "zebra"})).await;
    assert!(!grown.is_error, "{}", grown.text());
    let deadline = tokio::time::Instant::now() + CHANGE_TIMEOUT;
    loop {
        if search("zebra").await.contains("chg_zebra") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the added tool is not found within {CHANGE_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its upstream's prefix is one of its words, as for the tools it had at start.
    let by_prefix = search("chg").await;
    assert!(
        by_prefix.contains("chg_zebra") && by_prefix.contains("chg_steady"),
        "{by_prefix}"
    );
    let called = bounded(
        &tester,
        "call_tool",
        json!({"name": "chg_zebra", "arguments": {}}),
    )
    .await;
    assert_eq!(called.text(), "zebra here", "{}", called.text());

    let shrunk = bounded(&tester, "chg_shrink", json!({"name": "zebra"})).await;
    assert!(!shrunk.is_error, "{}", shrunk.text());
    let deadline = tokio::time::Instant::now() + CHANGE_TIMEOUT;
    loop {
        if !search("zebra").await.contains("chg_zebra") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the removed tool is still found after {CHANGE_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(search("steady").await.contains("chg_steady"));
}

/// A tool the upstream adds since start keeps the upstream's `task_after`, as the tools it
/// had at start do: served over Streamable HTTP, a 2026-07-28 client that declared the
/// tasks extension is answered with a task at the deadline, and the task completes with the
/// upstream's answer.
#[tokio::test]
async fn a_tool_an_upstream_adds_becomes_a_task_at_its_task_after() {
    use fusion_runtime::{HttpOptions, policy::Policy, prelude::*};
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    let policy = Policy {
        task_after: Some(Duration::from_millis(500)),
        ..Default::default()
    };
    let server = Server::builder("gateway", "1")
        .upstream("chg", changing_upstream(&python).policy(policy))
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = fusion_runtime::testing::Tester::new(server.clone());
    let router = server
        .router(HttpOptions::default())
        .expect("the gateway's router");
    let http = support::axum_thread::AxumThread::start("gateway-http", move |_| router);
    let addr: std::net::SocketAddr = http
        .url()
        .trim_start_matches("http://")
        .parse()
        .expect("a loopback address");

    // The tool takes 15 s, the deadline is 500 ms: a task well before the answer, also on
    // a machine many times slower.
    let grown = bounded(&tester, "chg_grow", json!({"name": "slow", "seconds": 15})).await;
    assert!(!grown.is_error, "{}", grown.text());
    until_listed(&tester, "the added tool is listed", |names| {
        names.iter().any(|name| name == "chg_slow")
    })
    .await;
    let asked = Instant::now();
    let created = tokio::task::spawn_blocking(move || {
        support::task_client::create(addr, "chg_slow", json!({}))
    })
    .await
    .expect("the request's thread");
    let id = created.unwrap_or_else(|answer| panic!("not a task: {answer}"));
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "a task at the deadline, before the tool's answer: {:?}",
        asked.elapsed()
    );
    let done = tokio::task::spawn_blocking(move || {
        support::task_client::poll_end(addr, &id, Duration::from_secs(60))
    })
    .await
    .expect("the polling thread");
    assert_eq!(support::task_client::status(&done), "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "slow here",
        "{done}"
    );
}

/// With `refresh_every`, a tool the upstream adds without telling anyone (no
/// `list_changed`) is listed at the next refresh.
#[tokio::test]
async fn an_upstreams_tools_are_listed_again_at_its_refresh_interval() {
    use fusion_runtime::prelude::*;
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    let server = Server::builder("gateway", "1")
        .upstream(
            "chg",
            changing_upstream(&python).refresh_every(Duration::from_millis(500)),
        )
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = fusion_runtime::testing::Tester::new(server);
    let grown = bounded(
        &tester,
        "chg_grow",
        json!({"name": "quiet", "notify": false}),
    )
    .await;
    assert!(!grown.is_error, "{}", grown.text());
    until_listed(&tester, "the quietly added tool is listed", |names| {
        names.iter().any(|name| name == "chg_quiet")
    })
    .await;
    assert_eq!(
        bounded(&tester, "chg_quiet", json!({})).await.text(),
        "quiet here"
    );
}

/// An upstream that cannot be reached at start: the server starts without its
/// tools (the local ones answer), and lists them once the upstream comes (the Python SDK's
/// server over Streamable HTTP, started after the gateway).
#[tokio::test]
async fn an_upstream_down_at_start_is_added_when_it_comes() {
    use fusion_runtime::{prelude::*, upstream::Upstream};
    use serde_json::json;

    let Some(python) = support::python() else {
        return;
    };
    let port = support::free_port();
    let server = Server::builder("gateway", "1")
        .upstream(
            "late",
            Upstream::http(format!("http://127.0.0.1:{port}/mcp"))
                .connect_timeout(Duration::from_millis(500)),
        )
        .start()
        .await
        .expect("an upstream down at start does not stop the start");
    let tester = fusion_runtime::testing::Tester::new(server);
    assert!(tester.tools().await.is_empty(), "no tool before it comes");
    // Its tools are not known yet, but its prefix is: a call is told it is transient, which
    // upstream, and when it is tried again (not "unknown tool").
    let early = bounded(&tester, "late_shout", json!({"text": "early"})).await;
    let failure = early.failure().expect("a failure's entry");
    assert!(
        early.is_error
            && failure.code.as_deref() == Some("upstream_unreachable")
            && failure.class == "transient"
            && failure.retry_after_ms.is_some_and(|after| after >= 1000)
            && early.text().contains("upstream server `late`"),
        "not there yet: {} ({failure:?})",
        early.text()
    );
    let unknown = bounded(&tester, "lately", json!({})).await;
    assert!(
        unknown.is_error && unknown.text().starts_with("Unknown tool `lately`"),
        "a name outside the prefix is an unknown tool: {}",
        unknown.text()
    );

    let _python_server = python_http_upstream(&python, NOTES_UPSTREAM, port);
    // Tried after 1 s, 2 s, 4 s, …: well within the wait.
    until_listed(&tester, "the late upstream's tools are listed", |names| {
        names.iter().any(|name| name == "late_shout")
    })
    .await;
    let shouted = bounded(&tester, "late_shout", json!({"text": "late"})).await;
    assert_eq!(shouted.text(), "LATE", "{}", shouted.text());
}

/// A required upstream (`--app-required`) that cannot be reached stops the start: the
/// gateway exits with 78 (`EX_CONFIG`) after its connect timeout, naming the upstream.
#[test]
fn a_required_upstream_that_cannot_be_reached_fails_the_start() {
    let port = support::free_port();
    let mut command = Command::new(support::example_binary("gateway"));
    command
        .args(["--http", "0", "--app-required", "--app-url"])
        .arg(format!("http://127.0.0.1:{port}/mcp"))
        .stderr(std::process::Stdio::piped());
    let out = support::run_with_timeout(command, TIMEOUT);
    assert_eq!(
        out.status.and_then(|status| status.code()),
        Some(i32::from(fusion_runtime::exit::EXIT_CONFIG)),
        "{}",
        out.report()
    );
    assert!(out.stderr.contains("app"), "{}", out.report());
}

/// Whether the process `pid` is gone (or a zombie waiting to be reaped).
fn is_gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// The refresh of an upstream's tools ends when the server is dropped: nothing keeps the
/// stdio upstream's process alive after it (the process ends with its link).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_refresh_ends_with_the_server() {
    use fusion_runtime::{prelude::*, upstream::Upstream};

    let Some(python) = support::python() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("fusion-refresh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let pid_file = dir.join("notes.pid");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(NOTES_UPSTREAM);
    let server = Server::builder("gateway", "1")
        .upstream(
            "notes",
            Upstream::stdio(
                python.to_string_lossy(),
                [script.to_string_lossy().into_owned()],
            )
            .env("NOTES_PID_FILE", pid_file.to_string_lossy())
            .refresh_every(Duration::from_millis(100))
            .connect_timeout(Duration::from_secs(60)),
        )
        .start()
        .await
        .expect("the upstream lists its tools");
    let pid = std::fs::read_to_string(&pid_file).expect("the upstream wrote its pid");
    let pid = pid.trim().to_owned();
    // A few refreshes run.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!is_gone(&pid), "the upstream runs while the server does");
    drop(server);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !is_gone(&pid) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the upstream process {pid} outlived the server by 10 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
