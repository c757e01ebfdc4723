//! `cargo fusion new`: the crate it creates passes its own tests and lists its tool, built
//! outside this workspace as a user's crate is; the `--http` and `--redis` crates build, the
//! latter's tests without a Redis; a name that exists or cannot be a package's is refused
//! with exit code 2, and nothing is written.
//!
//! The crates are built as `tests/source/outside_crate.rs` builds the examples: the
//! workspace's `Cargo.lock` copied in (the same versions, nothing fetched: `--offline`), in
//! one target directory under this workspace's, kept between runs, so that the
//! dependencies are compiled once, not once a crate or a run. Every process has a deadline.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::support::{Run, run_within, try_run_within, workspace_root};

/// How long one cargo run in a new crate may take. The first compiles fusion-runtime and
/// its dependencies into the shared target directory, which on a shared two-core machine
/// takes minutes (and the tests here wait for each other on its lock); later runs reuse it.
pub(crate) const BUILD_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// How long `cargo fusion new` itself may take: it writes five files.
const NEW_TIMEOUT: Duration = Duration::from_secs(60);

/// The target directory the new crates are built in: `tests/source/outside_crate.rs`'s,
/// whose crates depend on fusion-runtime with the same features (its defaults, or
/// `redis`) and are built with the same settings ([`in_crate`]), so that both tests
/// compile the dependencies once.
pub(crate) fn shared_target() -> PathBuf {
    // `<target>/tmp`: its parent is the workspace's target directory, wherever it is.
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| workspace_root().join("target"), Path::to_path_buf)
        .join("outside-crate")
}

/// A temporary directory to create crates in, removed with them at the end of the test.
pub(crate) fn scratch() -> TempDir {
    tempfile::Builder::new()
        .prefix("fusion-new-")
        .tempdir()
        .expect("a temporary directory")
}

/// `cargo-fusion` with `args`, run in `dir`.
fn cargo_fusion_in(dir: &Path, args: &[&str]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-fusion"));
    command.args(args).current_dir(dir);
    run_within(command, NEW_TIMEOUT)
}

/// `program` run in the new crate at `dir` as a user's build there runs: none of this
/// workspace's build settings, the shared target directory, and cargo offline.
pub(crate) fn in_crate(program: impl AsRef<OsStr>, dir: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", shared_target())
        .env("CARGO_NET_OFFLINE", "true")
        // The crate is not in this workspace: none of the outer build's settings apply.
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("RUSTFLAGS")
        // The lockfile is checked as CI checks it, never rewritten by the test run.
        .env_remove("FUSION_LOCK")
        .env_remove("FUSION_CONTRACT")
        .env_remove("REDIS_URL")
        // As outside_crate.rs builds, so that the artifacts are shared: whether it builds
        // is the question, and without debug info the target directory is a fraction of
        // the size.
        .env("CARGO_INCREMENTAL", "0")
        .env("CARGO_PROFILE_DEV_DEBUG", "0");
    command
}

/// `cargo ARGS` in the crate at `dir`, which must succeed.
fn cargo_in(dir: &Path, args: &[&str]) -> Run {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = in_crate(cargo, dir);
    command.args(args);
    let started = Instant::now();
    let run = run_within(command, BUILD_TIMEOUT);
    eprintln!(
        "new: cargo {} in {} took {:.1?}",
        args.join(" "),
        dir.display(),
        started.elapsed()
    );
    assert_eq!(
        run.code,
        Some(0),
        "cargo {args:?} in {}: {run:?}",
        dir.display()
    );
    run
}

/// Creates the crate `name` in `parent` with `flags`, depending on this workspace's
/// fusion-runtime, and copies the workspace's `Cargo.lock` into it.
pub(crate) fn new_crate(parent: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let runtime = workspace_root().join("fusion-runtime");
    let runtime = runtime.to_str().expect("the workspace's path is UTF-8");
    let mut args = vec!["new", name, "--fusion-path", runtime];
    args.extend_from_slice(flags);
    let run = cargo_fusion_in(parent, &args);
    assert_eq!(run.code, Some(0), "{run:?}");
    let dir = parent.join(name);
    for file in [
        "Cargo.toml",
        "src/main.rs",
        "fusion.lock",
        "README.md",
        ".gitignore",
    ] {
        assert!(dir.join(file).is_file(), "{file} is created: {run:?}");
    }
    std::fs::copy(workspace_root().join("Cargo.lock"), dir.join("Cargo.lock"))
        .expect("the workspace's Cargo.lock is copied");
    dir
}

#[test]
fn a_new_crate_passes_its_tests_and_lists_its_tool() {
    let scratch = scratch();
    let dir = new_crate(scratch.path(), "demo-x", &[]);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("name = \"demo-x\""), "{manifest}");
    assert!(!manifest.contains("redis"), "{manifest}");
    let lockfile = std::fs::read_to_string(dir.join("fusion.lock")).expect("fusion.lock");

    let tested = cargo_in(&dir, &["test", "--offline"]);
    assert!(
        tested.stdout.contains("test result: ok. 2 passed"),
        "the call and the contract are tested: {tested:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("fusion.lock")).expect("fusion.lock"),
        lockfile,
        "the lockfile was right as written, not rewritten"
    );

    // The crate of the current directory, built in the shared target directory.
    let mut tools = in_crate(env!("CARGO_BIN_EXE_cargo-fusion"), &dir);
    tools.args(["tools", "--json"]);
    let listed = run_within(tools, BUILD_TIMEOUT);
    assert_eq!(listed.code, Some(0), "{listed:?}");
    let listed: Value = serde_json::from_str(&listed.stdout).expect("the output is JSON");
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("a list of tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert_eq!(names, ["greet"], "{listed:#}");
}

#[test]
fn an_http_crate_builds() {
    let scratch = scratch();
    let dir = new_crate(scratch.path(), "demo-http", &["--http"]);
    let main = std::fs::read_to_string(dir.join("src/main.rs")).expect("src/main.rs");
    assert!(main.contains("const PORT: u16 = 8931;"), "{main}");
    cargo_in(&dir, &["build", "--offline", "--all-targets"]);
}

#[test]
fn a_redis_crate_passes_its_tests_without_redis_and_refuses_to_start_without_it() {
    let scratch = scratch();
    let dir = new_crate(scratch.path(), "demo-redis", &["--redis"]);
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains(r#"features = ["redis"]"#), "{manifest}");
    // The server and its tests in one build; `cargo test` then runs them.
    cargo_in(&dir, &["build", "--offline", "--all-targets"]);
    let tested = cargo_in(&dir, &["test", "--offline"]);
    assert!(
        tested.stdout.contains("test result: ok. 2 passed"),
        "{tested:?}"
    );

    let server = shared_target()
        .join("debug")
        .join(format!("demo-redis{}", std::env::consts::EXE_SUFFIX));
    let unset = run_within(in_crate(&server, &dir), Duration::from_secs(60));
    assert_eq!(unset.code, Some(78), "EX_CONFIG: {unset:?}");
    assert!(unset.stderr.contains("REDIS_URL"), "{unset:?}");
    // Port 1 on the loopback: nothing listens there, and the refusal is immediate.
    let mut unreachable = in_crate(&server, &dir);
    unreachable.env("REDIS_URL", "redis://:secret@127.0.0.1:1");
    let unreachable = run_within(unreachable, Duration::from_secs(60));
    assert_eq!(unreachable.code, Some(78), "EX_CONFIG: {unreachable:?}");
    assert!(
        unreachable
            .stderr
            .contains("cannot reach the Redis at $REDIS_URL"),
        "{unreachable:?}"
    );
    assert!(
        !unreachable.stderr.contains("secret"),
        "the URL's password is not printed: {unreachable:?}"
    );

    // Run by `cargo fusion`, it prints and serves nothing: the Redis is not needed.
    let mut listing = in_crate(&server, &dir);
    listing
        .env("REDIS_URL", "redis://127.0.0.1:1")
        .env("FUSION_CONTRACT", "print");
    let listing = run_within(listing, Duration::from_secs(60));
    assert_eq!(listing.code, Some(0), "{listing:?}");
    let contract: Value = serde_json::from_str(&listing.stdout).expect("the contract");
    assert!(contract["tools"]["greet"].is_object(), "{listing:?}");
    let mut requirements = in_crate(&server, &dir);
    requirements.env("FUSION_CONTRACT", "requirements");
    let requirements = run_within(requirements, Duration::from_secs(60));
    assert_eq!(requirements.code, Some(0), "{requirements:?}");
    let requirements: Value = serde_json::from_str(&requirements.stdout).expect("JSON");
    assert_eq!(
        requirements,
        serde_json::json!({"required_env": ["REDIS_URL"]})
    );

    // `install` writes the variable into the client's entry: the value given, else a
    // placeholder and a note to fill it in.
    let home = tempfile::tempdir().expect("a temporary HOME");
    let install = |extra: &[&str]| {
        let mut command = in_crate(env!("CARGO_BIN_EXE_cargo-fusion"), &dir);
        command
            .args(["install", "cursor", "--dry-run"])
            .args(extra)
            .envs(crate::support::home_env(home.path()));
        run_within(command, BUILD_TIMEOUT)
    };
    let given = install(&["--env", "REDIS_URL=redis://127.0.0.1:6379"]);
    assert_eq!(given.code, Some(0), "{given:?}");
    assert!(
        given
            .stdout
            .contains(r#""REDIS_URL": "redis://127.0.0.1:6379""#),
        "{given:?}"
    );
    let placeheld = install(&[]);
    assert_eq!(placeheld.code, Some(0), "{placeheld:?}");
    assert!(
        placeheld
            .stdout
            .contains(r#""REDIS_URL": "<your REDIS_URL>""#),
        "{placeheld:?}"
    );
    assert!(
        placeheld
            .stdout
            .contains("refuses to start without REDIS_URL"),
        "{placeheld:?}"
    );
}

#[test]
fn an_http_redis_crate_builds() {
    let scratch = scratch();
    let dir = new_crate(scratch.path(), "demo-both", &["--http", "--redis"]);
    cargo_in(&dir, &["build", "--offline", "--all-targets"]);
}

#[test]
fn every_variant_is_formatted_as_rustfmt_formats_it() {
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    let mut probe = Command::new(&rustfmt);
    probe.arg("--version");
    if let Err(error) = try_run_within(probe, Duration::from_secs(60)) {
        assert!(
            !std::env::var("CI").is_ok_and(|ci| ci == "true"),
            "rustfmt cannot be run, and CI=true does not skip: {error}"
        );
        eprintln!("warning: skipped: rustfmt cannot be run ({error})");
        return;
    }
    let scratch = scratch();
    let variants: [(&str, &[&str]); 4] = [
        ("plain", &[]),
        ("http", &["--http"]),
        ("redis", &["--redis"]),
        ("both", &["--http", "--redis"]),
    ];
    for (name, flags) in variants {
        let mut args = vec!["new", name];
        args.extend_from_slice(flags);
        let created = cargo_fusion_in(scratch.path(), &args);
        assert_eq!(created.code, Some(0), "{created:?}");
        let mut check = Command::new(&rustfmt);
        check
            .args(["--check", "--edition", "2024", "src/main.rs"])
            .current_dir(scratch.path().join(name));
        let checked = run_within(check, Duration::from_secs(60));
        assert_eq!(checked.code, Some(0), "{name} {flags:?}: {checked:?}");
    }
}

#[test]
fn a_name_that_exists_is_refused_and_nothing_is_overwritten() {
    let scratch = scratch();
    let existing = scratch.path().join("demo-x");
    std::fs::create_dir(&existing).expect("a directory");
    std::fs::write(existing.join("Cargo.toml"), "mine").expect("a file");
    std::fs::write(scratch.path().join("a-file"), "mine too").expect("a file");
    for name in ["demo-x", "a-file"] {
        let run = cargo_fusion_in(scratch.path(), &["new", name]);
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(run.stderr.contains("already exists"), "{run:?}");
        assert!(run.stderr.contains(name), "the path is named: {run:?}");
    }
    assert_eq!(
        std::fs::read_to_string(existing.join("Cargo.toml")).expect("the file is kept"),
        "mine"
    );
    let entries = std::fs::read_dir(&existing).expect("the directory").count();
    assert_eq!(entries, 1, "nothing is added");
    assert_eq!(
        std::fs::read_to_string(scratch.path().join("a-file")).expect("the file is kept"),
        "mine too"
    );
}

#[test]
fn a_name_that_cannot_be_a_package_is_refused() {
    let scratch = scratch();
    for name in ["1calc", "my server", "../calc", "fn", "test", "tokio", ""] {
        let run = cargo_fusion_in(scratch.path(), &["new", name]);
        assert_eq!(run.code, Some(2), "{name:?}: {run:?}");
        assert!(
            run.stderr
                .contains(&format!("`{name}` cannot be a package's name")),
            "{name:?}: {run:?}"
        );
    }
    let created = std::fs::read_dir(scratch.path())
        .expect("the directory")
        .count();
    assert_eq!(created, 0, "nothing is created");
}

#[test]
fn a_fusion_path_that_is_not_the_runtime_is_refused() {
    let scratch = scratch();
    let elsewhere = scratch.path().to_str().expect("a UTF-8 temp dir");
    let run = cargo_fusion_in(scratch.path(), &["new", "calc", "--fusion-path", elsewhere]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("--fusion-path"), "{run:?}");
    assert!(!scratch.path().join("calc").exists(), "nothing is created");
}

#[test]
fn the_help_shows_examples() {
    let run = cargo_fusion_in(&workspace_root(), &["new", "--help"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    for text in [
        "Examples:",
        "cargo fusion new calc --http",
        "--fusion-path",
        "--redis",
    ] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
}
