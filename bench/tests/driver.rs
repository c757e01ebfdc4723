//! The load driver against well-behaved and misbehaving servers: every broken promise
//! is counted and reported, a dead or silent server ends the run with a clear error
//! within the timeout, and nothing panics.

use std::time::Duration;

use fusion_bench::load::{self, LoadConfig, RunError, RunReport, StoppedRun};

fn config(program: &str, args: &[&str], concurrency: usize, calls: u64) -> LoadConfig {
    let mut command = vec![program.to_owned()];
    command.extend(args.iter().map(|arg| (*arg).to_owned()));
    let mut config = LoadConfig::new(command);
    config.concurrency = concurrency;
    config.calls = calls;
    config.warmup = 50;
    config.timeout = Duration::from_secs(20);
    config
}

fn faulty(args: &[&str], concurrency: usize, calls: u64) -> LoadConfig {
    config(env!("CARGO_BIN_EXE_faulty-echo"), args, concurrency, calls)
}

fn report(config: &LoadConfig) -> RunReport {
    match load::run(config) {
        Ok(report) => report,
        Err(error) => panic!("the run should report, not stop: {error}"),
    }
}

fn stopped(config: &LoadConfig) -> StoppedRun {
    match load::run(config) {
        Err(RunError::Stopped(stopped)) => *stopped,
        Err(other) => panic!("expected a stopped run, got: {other}"),
        Ok(report) => panic!("expected a stopped run, got a report:\n{report}"),
    }
}

#[test]
fn the_floor_is_clean_at_both_concurrencies() {
    for concurrency in [1, 32] {
        let report = report(&config(
            env!("CARGO_BIN_EXE_floor-echo"),
            &[],
            concurrency,
            2_000,
        ));
        assert!(report.is_clean(), "{report}");
        assert_eq!(report.server.name, "floor-echo");
        assert!(report.calls_per_sec() > 0.0);
        assert!(report.p50 <= report.p99 && report.p99 <= report.max);
        assert!(report.peak_rss_kib > 0);
        assert!(matches!(report.shutdown, load::Shutdown::Exited(status) if status.success()));
    }
}

#[test]
fn duplicates_errors_and_garbage_are_counted() {
    let report = report(&faulty(
        &[
            "--duplicate-every",
            "7",
            "--error-every",
            "11",
            "--is-error-every",
            "13",
            "--garbage-every",
            "17",
        ],
        8,
        950,
    ));
    let v = &report.violations;
    // Calls are numbered over warm-up and measured calls alike: 1000 in all.
    assert_eq!(v.duplicates, 1000 / 7, "{report}");
    assert_eq!(v.rpc_errors, 1000 / 11, "{report}");
    // Every 13th, except those already answered with a JSON-RPC error (every 143rd).
    assert_eq!(v.tool_errors, 1000 / 13 - 1000 / 143, "{report}");
    assert_eq!(v.unparseable_lines, 1000 / 17, "{report}");
    assert_eq!(
        v.missing + v.unknown_ids + v.malformed_answers,
        0,
        "{report}"
    );
    assert!(!report.is_clean());
    assert!(!v.examples.is_empty());
}

#[test]
fn dropped_answers_stop_the_run_once_nothing_moves() {
    let mut config = faulty(&["--drop-every", "100"], 4, 950);
    config.idle_timeout = Duration::from_millis(500);
    let stopped = stopped(&config);
    assert!(
        stopped.reason.contains("no answer for 0.5 s"),
        "{}",
        stopped.reason
    );
    // Calls 100, 200, 300 and 400 hold all four slots.
    assert_eq!(stopped.violations.missing, 4, "{:?}", stopped.violations);
    assert_eq!(stopped.sent, 400);
    assert_eq!(stopped.phase, "measured calls");
}

#[test]
fn an_answer_to_an_id_never_sent_is_counted_and_its_call_is_missing() {
    let mut config = faulty(&["--wrong-id-every", "500"], 2, 950);
    config.idle_timeout = Duration::from_millis(500);
    let stopped = stopped(&config);
    // Calls 500 and 1000 are answered with a wrong id, so both stay unanswered.
    let v = &stopped.violations;
    assert_eq!((v.unknown_ids, v.missing), (2, 2), "{v:?}");
    assert_eq!(stopped.sent, 1000);
}

#[test]
fn a_server_that_exits_mid_run_is_reported_with_its_status() {
    let stopped = stopped(&faulty(&["--exit-after", "300"], 16, 1_000));
    assert_eq!(stopped.phase, "measured calls");
    // Whichever the driver notices first: the closed stdout or a failed write.
    assert!(
        stopped.reason.contains("closed its stdout") || stopped.reason.contains("Broken pipe"),
        "{}",
        stopped.reason
    );
    assert_eq!(stopped.status.and_then(|s| s.code()), Some(3));
    assert_eq!(stopped.answered, 299);
}

#[test]
fn a_server_that_hangs_is_killed_at_the_timeout() {
    let mut config = faulty(&["--hang-after", "10"], 1, 100);
    config.timeout = Duration::from_secs(2);
    config.idle_timeout = Duration::from_secs(30);
    let started = std::time::Instant::now();
    let stopped = stopped(&config);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        stopped.reason.contains("hard timeout"),
        "{}",
        stopped.reason
    );
    assert_eq!(stopped.answered, 9);
}

#[test]
fn a_missing_tool_or_program_is_a_clear_error() {
    let mut config = faulty(&[], 1, 10);
    config.tool = "nope".into();
    let stopped = stopped(&config);
    assert_eq!(stopped.phase, "handshake");
    assert!(
        stopped.reason.contains("no tool `nope`"),
        "{}",
        stopped.reason
    );

    let missing = config_missing();
    assert!(matches!(load::run(&missing), Err(RunError::Spawn { .. })));
}

fn config_missing() -> LoadConfig {
    config("/nonexistent/server", &[], 1, 10)
}
