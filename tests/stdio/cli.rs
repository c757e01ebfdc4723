//! The example servers' command lines, as real processes: `--help` and `-h` print the usage
//! (the transport flags and the environment variables) on stdout and exit 0, `--version`
//! prints the name and version, and an unknown flag (or a flag missing its value, or a stray
//! argument) gets a usage error on stderr and exit 64 (`EX_USAGE`) without serving. Every
//! run has a deadline, and its process group is killed at it.

use crate::support;

use std::{path::PathBuf, process::Command, time::Duration};

/// Far more than printing a line takes; a server that started serving instead would wait
/// on its stdin (null: it ends at once) or on a socket (killed here).
const DEADLINE: Duration = Duration::from_secs(20);

/// Every example binary, with a flag it takes with a value and the words its help must
/// show (a transport flag where it has one).
fn binaries() -> Vec<(
    &'static str,
    PathBuf,
    Option<&'static str>,
    &'static [&'static str],
)> {
    vec![
        (
            "quickstart",
            support::example_binary("quickstart"),
            Some("--http"),
            &["--http PORT", "--stateless"],
        ),
        ("inventory", support::example_binary("inventory"), None, &[]),
        (
            "faults",
            support::example_binary("faults"),
            Some("--http"),
            &["--http PORT", "--bearer-token TOKEN"],
        ),
        (
            "conformance",
            support::example_binary("conformance"),
            Some("--port"),
            &["--port PORT", "--stateless"],
        ),
        (
            "axum_mount",
            support::example_binary("axum_mount"),
            Some("--port"),
            &["--port PORT"],
        ),
        (
            "report_task",
            support::example_binary("report_task"),
            Some("--port"),
            &["--port PORT"],
        ),
        (
            "fleet",
            support::example_binary("fleet"),
            Some("--redis"),
            &["--http PORT", "--redis URL"],
        ),
        (
            "fencing",
            support::example_binary("fencing"),
            Some("--db"),
            &["--http PORT", "--redis URL", "--db PATH"],
        ),
        (
            "cancel_safety",
            support::example_binary("cancel_safety"),
            None,
            &[],
        ),
        (
            "rmcp_existing",
            support::example_binary("rmcp_existing"),
            None,
            &[],
        ),
        (
            "fusion-demo",
            support::package_binary("fusion-demo"),
            Some("--http"),
            &["--http PORT", "--flat", "--oauth-issuer URL", "DEMO_ROLE"],
        ),
    ]
}

fn run(binary: &PathBuf, args: &[&str]) -> support::RunOutput {
    let mut command = Command::new(binary);
    command.args(args);
    // A log line on stderr would not disturb these checks, but keep stderr to what `check` says.
    command.env("RUST_LOG", "off");
    support::run_with_timeout(command, DEADLINE)
}

#[test]
fn help_prints_the_usage_and_exits_zero() {
    for (name, binary, _, shown) in binaries() {
        for flag in ["--help", "-h"] {
            let out = run(&binary, &[flag]);
            assert!(out.success(), "{name} {flag}:\n{}", out.report());
            assert!(
                out.stdout.starts_with(&format!("{name}: ")),
                "{name} {flag}:\n{}",
                out.report()
            );
            for words in shown
                .iter()
                .chain(&["Usage:", "-h, --help", "--version", "RUST_LOG"])
            {
                assert!(
                    out.stdout.contains(words),
                    "{name} {flag} does not mention {words:?}:\n{}",
                    out.report()
                );
            }
            assert!(out.stderr.is_empty(), "{name} {flag}:\n{}", out.report());
        }
        // `--help` wins wherever it stands, even after other flags.
        if let Some(flag) = binaries_value_flag(name) {
            let out = run(&binary, &[flag, "1", "--help"]);
            assert!(out.success(), "{name}:\n{}", out.report());
            assert!(out.stdout.contains("Usage:"), "{name}:\n{}", out.report());
        }
    }
}

fn binaries_value_flag(name: &str) -> Option<&'static str> {
    binaries()
        .into_iter()
        .find(|(known, ..)| *known == name)
        .and_then(|(_, _, flag, _)| flag)
}

#[test]
fn version_prints_the_name_and_version() {
    for (name, binary, _, _) in binaries() {
        let out = run(&binary, &["--version"]);
        assert!(out.success(), "{name}:\n{}", out.report());
        assert_eq!(
            out.stdout,
            format!("{name} {}\n", env!("CARGO_PKG_VERSION")),
            "{name}:\n{}",
            out.report()
        );
    }
}

#[test]
fn an_unknown_flag_is_a_usage_error_with_exit_64() {
    for (name, binary, value_flag, _) in binaries() {
        let mut cases: Vec<Vec<&str>> = vec![
            vec!["--bogus"],
            vec!["-x"],
            vec!["stray"],
            vec!["--http=8000"],
        ];
        if let Some(flag) = value_flag {
            // A flag the example takes, but without its value.
            cases.push(vec![flag]);
            // A known flag with its value, then an unknown one: still refused.
            cases.push(vec![flag, "1", "--bogus"]);
        }
        for args in cases {
            let out = run(&binary, &args);
            assert!(
                !out.timed_out,
                "{name} {args:?} served instead:\n{}",
                out.report()
            );
            assert_eq!(
                out.status.and_then(|status| status.code()),
                Some(64),
                "{name} {args:?}:\n{}",
                out.report()
            );
            assert!(out.stdout.is_empty(), "{name} {args:?}:\n{}", out.report());
            assert!(
                out.stderr.starts_with(&format!("{name}: ")) && out.stderr.contains("--help"),
                "{name} {args:?}:\n{}",
                out.report()
            );
        }
        let out = run(&binary, &["--bogus"]);
        assert!(
            out.stderr.contains("unknown flag `--bogus`"),
            "{name}:\n{}",
            out.report()
        );
    }
}

/// `ServerBuilder::serve` picks the transport from the command line (issue 36, item 8); a
/// value it cannot read is a usage error (64) that says what it expected, and nothing is
/// served.
#[test]
fn serve_refuses_a_transport_it_cannot_read() {
    let binary = support::example_binary("quickstart");
    for (args, expected) in [
        (
            &["--http", "eighty"][..],
            "expected a port (0 to 65535) or an address",
        ),
        (
            &["--stateless"][..],
            "`--stateless` goes with `--http PORT`",
        ),
    ] {
        let out = run(&binary, args);
        assert!(!out.timed_out, "{args:?} served instead:\n{}", out.report());
        assert_eq!(
            out.status.and_then(|status| status.code()),
            Some(64),
            "{args:?}:\n{}",
            out.report()
        );
        assert!(
            out.stderr.starts_with("quickstart: ") && out.stderr.contains(expected),
            "{args:?}:\n{}",
            out.report()
        );
    }
}

#[test]
fn fusion_contract_print_writes_the_binarys_lockfile_instead_of_serving() {
    // The demo as `serve_stdio` runs it: its lockfile is committed beside it.
    let demo = support::package_binary("fusion-demo");
    let mut command = Command::new(&demo);
    command
        .env(fusion_runtime::contract::CONTRACT_ENV, "print")
        .env("RUST_LOG", "off");
    let out = support::run_with_timeout(command, DEADLINE);
    assert!(out.success(), "{}", out.report());
    let locked = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/fusion.lock"),
    )
    .expect("the demo's lockfile");
    assert_eq!(out.stdout, locked, "{}", out.report());

    // A server that needs an environment variable to serve still shows its surface.
    let faults = support::example_binary("faults");
    let mut command = Command::new(&faults);
    command
        .args(["--require-env", "FUSION_TEST_NEVER_SET"])
        .env(fusion_runtime::contract::CONTRACT_ENV, "print")
        .env("RUST_LOG", "off");
    let out = support::run_with_timeout(command, DEADLINE);
    assert!(out.success(), "{}", out.report());
    let contract = fusion_runtime::contract::Contract::from_lockfile(&out.stdout)
        .unwrap_or_else(|error| panic!("{error}\n{}", out.report()));
    assert!(contract.tools.contains_key("tally"), "{}", out.report());
    assert!(contract.cost.is_some_and(|cost| cost.tokens > 0));
}
