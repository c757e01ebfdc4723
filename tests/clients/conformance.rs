//! The official MCP conformance suite against `examples/conformance.rs` over Streamable
//! HTTP, in two pinned versions: `@modelcontextprotocol/conformance@0.1.16` (its active
//! server scenarios, the 2025-11-25 revision) and `0.2.0-alpha.12 --suite all` (every
//! server scenario: the 2025-11-25 and 2026-07-28 revisions, the tasks and skills
//! extensions).
//!
//! Needs Node ≥ 22 with npx (`scripts/node-env`, or `FUSION_NODE_BIN`) and the built example
//! (`cargo build --examples`); without Node the test is skipped with a note, except under
//! `CI=true`, where it fails. Every scenario must pass: the baseline of expected failures
//! (`tests/conformance-baseline.yml`, `tests/conformance-baseline-all.yml`) is used only
//! when the file exists and lists scenarios, each with its reason; neither does today.

use crate::support;

use std::{path::Path, process::Command, time::Duration};

/// The suite, pinned.
const SUITE: &str = "@modelcontextprotocol/conformance@0.1.16";

/// The newest suite, pinned: every server scenario with `--suite all`.
const SUITE_ALL: &str = "@modelcontextprotocol/conformance@0.2.0-alpha.12";

/// Hard limit for the whole suite (it takes a few seconds once npx has the package; the
/// first run downloads it).
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the example may take to report its URL.
const START_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn the_official_conformance_suite_passes_every_scenario() {
    // 30 active scenarios, 39 checks in 0.1.16: a suite that ran nothing is not a pass.
    // (`server-sse-multiple-streams` counts its streams check only when `tools/list` is
    // answered as SSE; answered as JSON, which it accepts, the check is informational.)
    run_suite(SUITE, &[], "conformance-baseline.yml", 39);
}

#[test]
fn the_newest_conformance_suite_passes_every_scenario_of_every_revision() {
    // 65 scenarios, about 230 checks in 0.2.0-alpha.12 with `--suite all`.
    run_suite(
        SUITE_ALL,
        &["--suite", "all"],
        "conformance-baseline-all.yml",
        200,
    );
}

/// Runs `suite` with `args` against the conformance example: every scenario passes but
/// those the baseline file (under `tests/`) lists, and at least `min_passed` checks ran.
fn run_suite(suite_name: &str, args: &[&str], baseline_file: &str, min_passed: u32) {
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let example = support::example_binary("conformance");
    let mut command = Command::new(&example);
    command.args(["--port", "0"]).env("RUST_LOG", "warn");
    let server = support::HttpServer::start(command, START_TIMEOUT);

    let mut suite = Command::new(node_bin.join("npx"));
    suite
        .args(["-y", suite_name, "server", "--url", server.url()])
        .args(args)
        .env("PATH", support::path_with(&node_bin))
        .env("NO_COLOR", "1")
        .env("npm_config_update_notifier", "false");
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(baseline_file);
    let expected_failures = baseline_entries(&baseline);
    if !expected_failures.is_empty() {
        suite.arg("--expected-failures").arg(&baseline);
    }
    let out = support::run_with_timeout(suite, SUITE_TIMEOUT);
    let report = format!(
        "{}\n--- server stderr ---\n{}",
        out.report(),
        server.stderr()
    );

    assert!(
        !out.timed_out,
        "the suite did not finish in {SUITE_TIMEOUT:?}\n{report}"
    );
    let total = out
        .stdout
        .lines()
        .find(|line| line.starts_with("Total: "))
        .unwrap_or_else(|| panic!("the suite printed no `Total:` line\n{report}"));
    let (passed, failed) =
        parse_total(total).unwrap_or_else(|| panic!("unexpected total line {total:?}\n{report}"));
    // A line the test harnesses recognise, whatever happens next.
    println!("conformance ({suite_name}): {passed} passed, {failed} failed");
    for line in out
        .stdout
        .lines()
        .filter(|line| line.starts_with(['✓', '✗']))
    {
        println!("  {line}");
    }
    if expected_failures.is_empty() {
        assert!(
            out.success() && failed == 0,
            "conformance scenarios failed\n{report}"
        );
    } else {
        assert!(
            out.success(),
            "scenarios failed beyond the baseline {expected_failures:?}\n{report}"
        );
    }
    assert!(
        passed >= min_passed,
        "only {passed} checks passed; expected at least {min_passed}\n{report}"
    );
}

/// `Total: N passed, M failed` (possibly followed by more) → (N, M).
fn parse_total(line: &str) -> Option<(u32, u32)> {
    let rest = line.strip_prefix("Total: ")?;
    let mut parts = rest.split(',');
    let passed = parts.next()?.trim().strip_suffix(" passed")?.parse().ok()?;
    let failed = parts.next()?.trim().strip_suffix(" failed")?.parse().ok()?;
    Some((passed, failed))
}

/// The scenario names in the baseline (`server:` list items); none when the file is
/// absent or empty. Each entry must carry its reason as a comment.
fn baseline_entries(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let entries: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("- "))
        .collect();
    for entry in &entries {
        assert!(
            entry.contains('#'),
            "{}: every expected failure needs its reason as a `# comment`: {entry}",
            path.display()
        );
    }
    entries
        .iter()
        .filter_map(|entry| {
            entry
                .trim_start_matches("- ")
                .split('#')
                .next()
                .map(|name| name.trim().to_owned())
        })
        .collect()
}

#[test]
fn total_lines_parse() {
    assert_eq!(parse_total("Total: 40 passed, 0 failed"), Some((40, 0)));
    assert_eq!(
        parse_total("Total: 38 passed, 2 failed, 1 warnings"),
        Some((38, 2))
    );
    assert_eq!(parse_total("Total: x"), None);
}
