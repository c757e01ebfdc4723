//! The Streamable HTTP driver of `compare --http` against the HTTP floor (JSON answers)
//! and rmcp's service (SSE answers, sessions and none): every call counted, every answer
//! checked, the server killed when the test ends.

use std::time::Duration;

use fusion_bench::http_load::{self, HttpServer, Mode};

const START: Duration = Duration::from_secs(30);

fn server(program: &str, args: &[&str], name: &str) -> HttpServer {
    let mut command = vec![program.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    let log = std::env::temp_dir().join(format!(
        "fusion-bench-http-{name}-{}.log",
        std::process::id()
    ));
    match HttpServer::start(&command, &log, START) {
        Ok(server) => server,
        Err(error) => panic!("{program} did not start: {error}"),
    }
}

fn clean_run(server: &HttpServer, mode: Mode, concurrency: usize) {
    let report = match http_load::run(
        server,
        mode,
        concurrency,
        Duration::from_millis(100),
        Duration::from_millis(400),
    ) {
        Ok(report) => report,
        Err(error) => panic!("the run should report, not stop: {error}"),
    };
    assert_eq!(report.failures, 0, "{:?}", report.example_failure);
    assert!(report.calls > 0, "no call measured: {report:?}");
    assert!(report.p99 >= report.p50, "{report:?}");
}

#[test]
fn the_floor_answers_every_call_as_json() {
    let floor = server(env!("CARGO_BIN_EXE_floor-http-echo"), &[], "floor");
    clean_run(&floor, Mode::Sessions, 4);
}

#[test]
fn rmcps_sse_answers_are_read_with_and_without_sessions() {
    let sessions = server(env!("CARGO_BIN_EXE_rmcp-http-echo"), &[], "rmcp");
    clean_run(&sessions, Mode::Sessions, 4);
    // Twenty more sessions, each initialized: every one must open.
    if let Err(error) = http_load::rss_per_thousand_sessions(&sessions, 20) {
        panic!("opening sessions: {error}");
    }
    let stateless = server(
        env!("CARGO_BIN_EXE_rmcp-http-echo"),
        &["--stateless"],
        "rmcp-stateless",
    );
    clean_run(&stateless, Mode::Stateless, 4);
    clean_run(&stateless, Mode::Stateless2026, 4);
}

#[test]
fn a_server_that_never_prints_its_address_is_reported() {
    let command = vec!["sleep".to_owned(), "5".to_owned()];
    let log = std::env::temp_dir().join(format!(
        "fusion-bench-http-silent-{}.log",
        std::process::id()
    ));
    let started = HttpServer::start(&command, &log, Duration::from_millis(300));
    assert!(
        started.is_err_and(|error| error.contains("no http:// address")),
        "a silent server must be an error"
    );
}
