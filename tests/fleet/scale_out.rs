//! Scale-out for real: replicas of a server over Streamable HTTP behind nginx, on loopback.
//!
//! - The demo as two stateless replicas (`fusion-demo --http 0 --stateless`) behind nginx:
//!   the official Python MCP client lists the tools and calls `system` `health` and
//!   `db_user` `find_many` through nginx, and both replicas serve some of its requests.
//! - The official conformance suite through nginx: against two stateless replicas of the
//!   conformance example every scenario passes except those that need a session (sampling,
//!   elicitation: the server calls the client back in the middle of a call) or that rely
//!   on per-replica state (`logging/setLevel` then a call, which may reach the other
//!   replica); against one stateful replica behind the same proxy, every scenario passes.
//! - 200 `system` `health` calls (raw HTTP, four clients in parallel, no client retries)
//!   while one replica is killed with SIGKILL: the other answers; nginx re-sends the
//!   requests that hit the dead replica (`proxy_next_upstream error timeout http_502
//!   non_idempotent`), so at most the calls in flight at the kill may fail. The same run
//!   with nginx's default (a POST that reached a replica is never re-sent) loses exactly
//!   those, with `502`; a replica stopped with SIGTERM drains and loses none even then.
//!
//! nginx is the Debian package (`scripts/nginx-env`, or `FUSION_NGINX`), run by the test as
//! its own process (`daemon off`, one worker) with a config generated into a temp dir that
//! also holds its pid file and logs; it listens on a free loopback port. Without nginx the
//! tests skip with a note, except under `CI=true`, where they fail. Every process is killed
//! when its test ends, whatever the outcome; every wait has a timeout.
//!
//! Needs the built binaries (`cargo build --workspace --bins --examples`), the Python venv
//! (`scripts/python-env`) and Node ≥ 22 (`scripts/node-env`) for the parts that use them.

use crate::support;

use std::{
    net::SocketAddr,
    path::Path,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use support::{
    HttpServer,
    nginx_proxy::{Nginx, Resend, Routing},
};

/// How long a replica may take to report its URL.
const START: Duration = Duration::from_secs(30);
/// The limit of one HTTP exchange.
const REQUEST: Duration = Duration::from_secs(10);
/// The limit of the Python client's run.
const PYTHON: Duration = Duration::from_secs(120);
/// The limit of the conformance suite's run (a few seconds once npx has the package).
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);
/// The conformance suite, pinned as in tests/clients/conformance.rs.
const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";

/// The conformance scenarios that need a session: the server sends a request to the client
/// (sampling, elicitation) in the middle of a call, which stateless mode cannot do.
const NEED_A_SESSION: [&str; 4] = [
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
];
/// The scenario that sets the log level, then calls a tool that logs: the level is state of
/// the replica that received `logging/setLevel`, and round robin may send the call to the
/// other one. It passes or fails depending on which replica each request reaches.
const PER_REPLICA_STATE: [&str; 1] = ["tools-call-with-logging"];

/// A demo replica: `fusion-demo --http 0 --stateless`.
fn demo_replica() -> HttpServer {
    let mut command = Command::new(support::package_binary("fusion-demo"));
    command
        .args(["--http", "0", "--stateless"])
        .env("RUST_LOG", "warn");
    HttpServer::start(command, START)
}

/// A conformance example replica, stateless or with sessions.
fn conformance_replica(stateless: bool) -> HttpServer {
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]).env("RUST_LOG", "warn");
    if stateless {
        command.arg("--stateless");
    }
    HttpServer::start(command, START)
}

/// The replica (`upstream=` address) that gave the final answer of an access log line.
fn answered_by(line: &str) -> Option<&str> {
    let upstreams = line
        .split(" upstream=")
        .nth(1)?
        .split(" upstream_status=")
        .next()?;
    upstreams.rsplit(", ").next().map(str::trim)
}

#[test]
fn the_python_client_works_through_nginx_across_two_stateless_replicas() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let Some(python) = support::python() else {
        return;
    };
    let (a, b) = (demo_replica(), demo_replica());
    let nginx = Nginx::start(&nginx_binary, &[a.addr(), b.addr()]);

    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("python")
        .join("http_client.py");
    let mut command = Command::new(&python);
    command
        .arg(&script)
        .arg("demo")
        .arg(nginx.url())
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let out = support::run_with_timeout(command, PYTHON);
    let report = || {
        format!(
            "{}\n{}\n--- replica A stderr ---\n{}\n--- replica B stderr ---\n{}",
            out.report(),
            nginx.report(),
            a.stderr(),
            b.stderr()
        )
    };
    assert!(
        out.success() && out.stdout.contains("ok: all checks passed"),
        "the Python client through nginx failed\n{}",
        report()
    );
    println!("{}", out.stdout.trim_end());

    // Round robin: each replica served part of the session's requests.
    let posts = nginx.mcp_posts();
    let (a_addr, b_addr) = (a.addr().to_string(), b.addr().to_string());
    let by_a = posts
        .iter()
        .filter(|line| answered_by(line) == Some(&a_addr))
        .count();
    let by_b = posts
        .iter()
        .filter(|line| answered_by(line) == Some(&b_addr))
        .count();
    println!(
        "scale-out python: {} POSTs through nginx, {by_a} answered by replica A, {by_b} by replica B",
        posts.len()
    );
    assert!(
        by_a > 0 && by_b > 0,
        "both replicas should serve requests of the client\n{}",
        report()
    );
}

/// Runs the conformance suite against `url` (with `node_bin` first on PATH); its output.
fn run_suite(node_bin: &Path, url: &str) -> support::RunOutput {
    let mut suite = Command::new(node_bin.join("npx"));
    suite
        .args(["-y", SUITE, "server", "--url", url])
        .env("PATH", support::path_with(node_bin))
        .env("NO_COLOR", "1")
        .env("npm_config_update_notifier", "false");
    support::run_with_timeout(suite, SUITE_TIMEOUT)
}

/// The summary lines of the suite: (scenario, passed).
fn scenario_results(stdout: &str) -> Vec<(String, bool)> {
    stdout
        .lines()
        .filter_map(|line| {
            let (passed, rest) = if let Some(rest) = line.strip_prefix("✓ ") {
                (true, rest)
            } else {
                (false, line.strip_prefix("✗ ")?)
            };
            let name = rest.split(':').next()?.trim().to_owned();
            Some((name, passed))
        })
        .collect()
}

#[test]
fn the_conformance_suite_passes_through_nginx_to_two_stateless_replicas() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let (a, b) = (conformance_replica(true), conformance_replica(true));
    let nginx = Nginx::start(&nginx_binary, &[a.addr(), b.addr()]);
    let out = run_suite(&node_bin, &nginx.url());
    let report = format!("{}\n{}", out.report(), nginx.report());
    assert!(
        !out.timed_out,
        "the suite did not finish in {SUITE_TIMEOUT:?}\n{report}"
    );
    let results = scenario_results(&out.stdout);
    assert!(
        results.len() >= 30,
        "expected the 30 scenarios of the active suite, got {}\n{report}",
        results.len()
    );
    let exempt = |name: &str| NEED_A_SESSION.contains(&name) || PER_REPLICA_STATE.contains(&name);
    let unexpected: Vec<&str> = results
        .iter()
        .filter(|(name, passed)| !passed && !exempt(name))
        .map(|(name, _)| name.as_str())
        .collect();
    let passed = results.iter().filter(|(_, passed)| *passed).count();
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, passed)| !passed)
        .map(|(name, _)| name.as_str())
        .collect();
    println!(
        "conformance through nginx, two stateless replicas: {passed} of {} scenarios passed; failed (need a session or per-replica state): {failed:?}",
        results.len()
    );
    assert!(
        unexpected.is_empty(),
        "scenarios that stateless replicas support failed through nginx: {unexpected:?}\n{report}"
    );
    assert!(
        passed + NEED_A_SESSION.len() + PER_REPLICA_STATE.len() >= results.len(),
        "{report}"
    );
}

/// Stateful replica `prefix` of the conformance example: its session ids start with it.
fn stateful_replica(prefix: &str) -> HttpServer {
    let mut command = Command::new(support::example_binary("conformance"));
    command
        .args(["--port", "0", "--session-prefix", prefix])
        .env("RUST_LOG", "warn");
    HttpServer::start(command, START)
}

#[test]
fn the_conformance_suite_passes_through_nginx_to_two_stateful_replicas() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let replicas = [stateful_replica("a."), stateful_replica("b.")];
    let addrs: Vec<SocketAddr> = replicas.iter().map(HttpServer::addr).collect();
    let nginx = Nginx::start_routed(
        &nginx_binary,
        &addrs,
        Resend::NotPosts,
        &Routing::BySessionPrefix(vec!["a.".into(), "b.".into()]),
    );
    let out = run_suite(&node_bin, &nginx.url());
    let report = format!(
        "{}\n{}\n--- replica a stderr ---\n{}\n--- replica b stderr ---\n{}",
        out.report(),
        nginx.report(),
        replicas[0].stderr(),
        replicas[1].stderr()
    );
    let total = out
        .stdout
        .lines()
        .find(|line| line.starts_with("Total: "))
        .unwrap_or_else(|| panic!("the suite printed no `Total:` line\n{report}"));
    println!("conformance through nginx, two stateful replicas: {total}");
    assert!(
        out.success() && total.contains(" 0 failed"),
        "the suite failed through nginx\n{report}"
    );
    let results = scenario_results(&out.stdout);
    assert!(
        results.len() >= 30 && results.iter().all(|(_, passed)| *passed),
        "{report}"
    );
    // Sessions were opened on both replicas, and every request of a session reached its own.
    let posts = nginx.mcp_posts();
    for replica in &addrs {
        assert!(
            posts
                .iter()
                .any(|line| answered_by(line) == Some(&replica.to_string())),
            "{replica} served no request\n{report}"
        );
    }
    assert!(
        !posts.iter().any(|line| line.starts_with("POST /mcp 404 ")),
        "no request reached a replica without its session\n{report}"
    );
}

#[test]
fn a_session_whose_replica_is_gone_gets_404_through_nginx() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let mut replicas = vec![stateful_replica("a."), stateful_replica("b.")];
    let addrs: Vec<SocketAddr> = replicas.iter().map(HttpServer::addr).collect();
    let nginx = Nginx::start_routed(
        &nginx_binary,
        &addrs,
        Resend::NotPosts,
        &Routing::BySessionPrefix(vec!["a.".into(), "b.".into()]),
    );
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    let init = support::post_mcp(nginx.addr(), &[], initialize, REQUEST);
    assert_eq!(init.status, 200, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session: {init:?}"))
        .to_owned();
    let holder = if session.starts_with("a.") { 0 } else { 1 };
    assert!(session.starts_with(["a.", "b."][holder]), "{session}");
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    for _ in 0..4 {
        let answer = support::post_mcp(nginx.addr(), &headers, ping, REQUEST);
        assert_eq!(
            answer.status, 200,
            "the session's replica answers: {answer:?}"
        );
    }
    drop(replicas.remove(holder));
    let gone = support::post_mcp(nginx.addr(), &headers, ping, REQUEST);
    assert_eq!(
        gone.status,
        404,
        "the other replica does not know the session: the client starts a new one\n{gone:?}\n{}",
        nginx.report()
    );
    let again = support::post_mcp(nginx.addr(), &[], initialize, REQUEST);
    assert_eq!(
        again.status, 200,
        "a new session opens on the survivor: {again:?}"
    );
}

/// One `tools/call` of `system` `health`, as a client without retries sends it.
fn health_call(id: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"system","arguments":{{"action":"health"}}}}}}"#
    )
}

/// What a run of calls across a replica's stop observed.
struct KillRun {
    total: usize,
    answered_at_kill: usize,
    /// Calls answered when replica A's process had ended, and how long after the signal.
    answered_at_exit: usize,
    stop_took: Duration,
    answered: usize,
    failures: Vec<String>,
    /// Calls whose final answer came from replica A, from B.
    by_a: usize,
    by_b: usize,
    /// Calls nginx sent to A, then (A failing) to B.
    resent: usize,
    /// Requests A had received but not answered when it died (from nginx's error log).
    in_flight: usize,
    report: String,
}

/// Calls per client in a run, clients in parallel, and the answers after which replica A
/// is stopped.
const CLIENTS: usize = 4;
const CALLS_EACH: usize = 50;
const KILL_AFTER: usize = 60;

/// How replica A goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// SIGKILL: a crash, no drain.
    Crash,
    /// SIGTERM: a planned stop; it drains, then exits 0.
    Drain,
}

/// What the clients of a run count.
#[derive(Default)]
struct Tally {
    answered: AtomicUsize,
    failures: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn fail(&self, failure: String) {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(failure);
    }

    fn failures(&self) -> Vec<String> {
        self.failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// One client: `CALLS_EACH` sequential `system` `health` calls through `proxy`, raw HTTP,
/// no retries, `pause` after each.
fn client(proxy: SocketAddr, client: usize, pause: Duration, tally: &Tally) {
    for call in 0..CALLS_EACH {
        let id = client * CALLS_EACH + call + 1;
        let headers = [
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        let body = health_call(id);
        match support::try_raw_http(proxy, "POST", "/mcp", &headers, body.as_bytes(), REQUEST) {
            Ok(response)
                if response.status == 200
                    && response.body.contains(&format!(r#""id":{id}"#))
                    && response.body.contains(r#""status":"ok""#)
                    && response.body.contains(r#""isError":false"#) =>
            {
                tally.answered.fetch_add(1, Ordering::SeqCst);
            }
            Ok(response) => tally.fail(format!(
                "call {id}: {} {}",
                response.status,
                response.body.trim()
            )),
            Err(error) => tally.fail(format!("call {id}: {error}")),
        }
        thread::sleep(pause);
    }
}

/// Two demo replicas behind nginx; `CLIENTS` clients (see [`client`]); replica A is
/// stopped once `KILL_AFTER` calls were answered.
fn kill_run(nginx_binary: &Path, resend: Resend, stop: Stop, pause: Duration) -> KillRun {
    let (mut a, b) = (demo_replica(), demo_replica());
    let nginx = Nginx::start_with(nginx_binary, &[a.addr(), b.addr()], resend);
    let proxy = nginx.addr();

    let tally = Arc::new(Tally::default());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|index| {
            let tally = Arc::clone(&tally);
            thread::spawn(move || client(proxy, index, pause, &tally))
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(30);
    while tally.answered.load(Ordering::SeqCst) < KILL_AFTER {
        assert!(
            Instant::now() < deadline,
            "the calls did not get going: {} answered, failures {:?}\n{}",
            tally.answered.load(Ordering::SeqCst),
            tally.failures(),
            nginx.report()
        );
        thread::sleep(Duration::from_millis(1));
    }
    let answered_at_kill = tally.answered.load(Ordering::SeqCst);
    let stopped_at = Instant::now();
    a.signal(match stop {
        Stop::Crash => "KILL",
        Stop::Drain => "TERM",
    });
    let exit = a
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|| panic!("replica A did not stop\n{}", a.stderr()));
    let stop_took = stopped_at.elapsed();
    let answered_at_exit = tally.answered.load(Ordering::SeqCst);
    if stop == Stop::Drain {
        assert_eq!(
            exit.code(),
            Some(0),
            "a drained replica exits 0\n{}",
            a.stderr()
        );
    }
    // Each client's calls are bounded by REQUEST each, so the joins are too.
    for client in clients {
        client
            .join()
            .unwrap_or_else(|_| panic!("a client thread panicked"));
    }

    let total = CLIENTS * CALLS_EACH;
    // nginx writes an access log line after the response went out: wait for the last.
    let deadline = Instant::now() + Duration::from_secs(5);
    while nginx.mcp_posts().len() < total && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    let posts = nginx.mcp_posts();
    let (a_addr, b_addr) = (a.addr().to_string(), b.addr().to_string());
    let count = |addr: &str| {
        posts
            .iter()
            .filter(|line| answered_by(line) == Some(addr))
            .count()
    };
    let errors = nginx.read("error.log");
    let upstream_errors: Vec<&str> = errors
        .lines()
        .filter(|line| line.contains("[error]"))
        .collect();
    let failures = tally.failures();
    let report = format!(
        "failures: {failures:#?}\nnginx's upstream errors:\n{}\n{}\n--- replica A stderr ---\n{}\n--- replica B stderr ---\n{}",
        upstream_errors.join("\n"),
        nginx.report(),
        a.stderr(),
        b.stderr()
    );
    KillRun {
        total,
        answered_at_kill,
        answered_at_exit,
        stop_took,
        answered: tally.answered.load(Ordering::SeqCst),
        failures,
        by_a: count(&a_addr),
        by_b: count(&b_addr),
        resent: posts
            .iter()
            .filter(|line| line.contains(&format!("upstream={a_addr}, ")))
            .count(),
        // A request already sent to A when it died: nginx saw a reset or a close while
        // waiting for the response header.
        in_flight: upstream_errors
            .iter()
            .filter(|line| line.contains("while reading response header"))
            .count(),
        report,
    }
}

impl KillRun {
    fn summary(&self, what: &str) -> String {
        format!(
            "scale-out ({what}): {} calls from {CLIENTS} clients, replica A stopped after {} answers \
             (gone {:.0?} later, at {} answers) with {} requests in flight on it: {} answered, {} failed; \
             replica A answered {}, replica B {}; {} requests re-sent by nginx from A to B",
            self.total,
            self.answered_at_kill,
            self.stop_took,
            self.answered_at_exit,
            self.in_flight,
            self.answered,
            self.failures.len(),
            self.by_a,
            self.by_b,
            self.resent
        )
    }
}

#[test]
fn calls_keep_being_answered_when_a_replica_is_killed_mid_run() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let run = kill_run(&nginx_binary, Resend::Posts, Stop::Crash, Duration::ZERO);
    println!("{}", run.summary("SIGKILL, non_idempotent"));
    let report = &run.report;
    assert_eq!(run.answered + run.failures.len(), run.total, "{report}");
    // Sequential calls per client: at most one call per client was in flight on A at the
    // kill. nginx re-sends those too (non_idempotent), so none should fail; never more.
    assert!(
        run.failures.len() <= CLIENTS,
        "more calls failed than were in flight at the kill\n{report}"
    );
    assert!(
        run.by_a >= 1 && run.by_b >= run.total - run.answered_at_kill - CLIENTS,
        "replica B should have answered the calls after the kill\n{report}"
    );
}

/// The trade-off the guide's "Deployment" chapter describes, measured: without `non_idempotent`, the calls in
/// flight on the killed replica fail (`502` from nginx) instead of running again on the
/// other; every other call is still answered.
#[test]
fn without_non_idempotent_only_the_calls_in_flight_at_the_kill_fail() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let run = kill_run(&nginx_binary, Resend::NotPosts, Stop::Crash, Duration::ZERO);
    println!(
        "{}",
        run.summary("SIGKILL, nginx default: POST not re-sent")
    );
    let report = &run.report;
    assert_eq!(run.answered + run.failures.len(), run.total, "{report}");
    assert!(
        run.failures.len() <= CLIENTS,
        "more calls failed than were in flight at the kill\n{report}"
    );
    assert!(
        run.failures
            .iter()
            .all(|failure| failure.contains(": 502 ")),
        "a call in flight at the kill gets nginx's 502\n{report}"
    );
}

/// A planned stop: SIGTERM makes replica A drain (`/readyz` 503, calls in flight finish,
/// answers close their connections), stop listening, then exit 0. New connections are
/// refused, which nginx re-sends to B even for a POST (it never reached A), so no call is
/// lost even with nginx's default, which never re-sends a POST that reached a replica.
/// (The one loss left is a request sent on a pooled connection at the instant A closes
/// it: nginx's `502`, which `non_idempotent` would re-send; never an error from A.)
#[test]
fn a_replica_stopped_with_sigterm_drains_and_the_calls_go_to_the_other() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    // Paced, so that the run goes on for a while after A is gone.
    let run = kill_run(
        &nginx_binary,
        Resend::NotPosts,
        Stop::Drain,
        Duration::from_millis(10),
    );
    println!(
        "{}",
        run.summary("SIGTERM, nginx default: POST not re-sent")
    );
    let report = &run.report;
    assert_eq!(run.answered + run.failures.len(), run.total, "{report}");
    assert!(
        run.answered_at_exit < run.total,
        "the run should outlast replica A\n{report}"
    );
    assert!(
        run.failures
            .iter()
            .all(|failure| failure.contains(": 502 ")),
        "a drained replica never answers a call with an error\n{report}"
    );
    assert!(run.failures.len() <= CLIENTS, "{report}");
}
