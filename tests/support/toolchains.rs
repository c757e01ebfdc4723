//! External toolchains the tests drive: the Python venv (`scripts/python-env`), Node.js 22
//! (`scripts/node-env`) and nginx (`scripts/nginx-env`), and the rule when one is missing:
//! skip with a loud note, except under `CI=true`, where the test fails.

use std::{
    ffi::OsStr,
    io::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use super::process::run_with_timeout;

/// Cargo's target directory: `$CARGO_TARGET_DIR` when set (a relative value is taken from the
/// workspace root, which is where `cargo test` runs test binaries), else `<workspace>/target`.
pub(crate) fn target_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// The Python interpreter of the test venv, if there is one.
///
/// Looks at `$FUSION_PYTHON` first (it must then exist, or this panics), then at
/// `<target>/fusion-venv/bin/python`, which `scripts/python-env` creates with the pinned MCP
/// Python SDK. When neither exists: if `$CI` is `true` this panics (CI must not skip silently);
/// otherwise it prints a loud skip note to stderr (uncaptured) and returns `None`, so a test can do
/// `let Some(python) = support::python() else { return };`.
pub(crate) fn python() -> Option<PathBuf> {
    if let Some(path) = explicit_file("FUSION_PYTHON") {
        return Some(path);
    }
    let venv = target_dir().join("fusion-venv");
    let path = if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    };
    if path.is_file() {
        return Some(path);
    }
    let hint = format!(
        "no Python venv at {} (and FUSION_PYTHON is unset): run `scripts/python-env` to create it",
        venv.display()
    );
    missing_tool(&hint)
}

/// The directory of a Node.js ≥ 22 with `npx` (the conformance suite and the MCP Inspector
/// CLI need it), if there is one.
///
/// Looks at `$FUSION_NODE_BIN` first (it must then hold `node`, or this panics), then at
/// `<target>/node22/bin`, which `scripts/node-env` creates, then at the `node` on `PATH` when
/// it is version 22 or later. When none fits: under `CI=true` this panics; otherwise it prints
/// a loud skip note and returns `None`. Put the directory first on `PATH` for the commands.
pub(crate) fn node_bin() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("FUSION_NODE_BIN").filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(explicit);
        assert!(
            dir.join("node").is_file(),
            "FUSION_NODE_BIN points at {}, which holds no `node`",
            dir.display()
        );
        return Some(dir);
    }
    let local = target_dir().join("node22").join("bin");
    if node_major(&local.join("node")).is_some_and(|major| major >= 22)
        && local.join("npx").exists()
    {
        return Some(local);
    }
    if let Some(dir) = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find(|dir| {
            node_major(&dir.join("node")).is_some_and(|major| major >= 22)
                && dir.join("npx").exists()
        })
    }) {
        return Some(dir);
    }
    let hint = format!(
        "no Node.js >= 22 with npx at {} (FUSION_NODE_BIN is unset, and none on PATH): run `scripts/node-env`",
        local.display()
    );
    missing_tool(&hint)
}

/// The major version of the `node` at `path`, if it runs.
fn node_major(path: &Path) -> Option<u32> {
    if !path.is_file() {
        return None;
    }
    let mut command = Command::new(path);
    command.arg("--version");
    let out = run_with_timeout(command, Duration::from_secs(20));
    let version = out.stdout.trim().strip_prefix('v')?.to_owned();
    version.split('.').next()?.parse().ok()
}

/// `PATH` with `dir` first.
pub(crate) fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

/// The nginx binary, if there is one (for `tests/fleet/scale_out.rs` and `tests/fleet/fleet.rs`).
///
/// Looks at `$FUSION_NGINX` first (it must then exist, or this panics), then at `nginx` on
/// `PATH`, then at `/usr/sbin/nginx` (where the Debian package puts it; `scripts/nginx-env`
/// installs it). When none is there: under `CI=true` this panics; otherwise it prints a loud
/// skip note and returns `None`.
pub(crate) fn nginx() -> Option<PathBuf> {
    system_tool(
        "FUSION_NGINX",
        "nginx",
        "/usr/sbin/nginx",
        "no nginx (FUSION_NGINX is unset, none on PATH or at /usr/sbin/nginx): run `scripts/nginx-env` (as root; installs the Debian package nginx)",
    )
}

/// The redis-server binary, if there is one (for `tests/fleet/fleet.rs`): `$FUSION_REDIS`, then
/// `redis-server` on `PATH`, then `/usr/bin/redis-server` (`scripts/redis-env` installs the
/// Debian package); missing, as for [`nginx`].
pub(crate) fn redis_server() -> Option<PathBuf> {
    system_tool(
        "FUSION_REDIS",
        "redis-server",
        "/usr/bin/redis-server",
        "no redis-server (FUSION_REDIS is unset, none on PATH or at /usr/bin/redis-server): run `scripts/redis-env` (as root; installs the Debian package redis-server)",
    )
}

/// redis-cli, for the Redis Cluster and Sentinel tests (`tests/fleet/cluster.rs`):
/// `$FUSION_REDIS_CLI`, then `redis-cli` on `PATH`, then `/usr/bin/redis-cli` (the Debian
/// package redis-server brings it, as Homebrew's redis does); missing, as for [`nginx`].
pub(crate) fn redis_cli() -> Option<PathBuf> {
    system_tool(
        "FUSION_REDIS_CLI",
        "redis-cli",
        "/usr/bin/redis-cli",
        "no redis-cli (FUSION_REDIS_CLI is unset, none on PATH or at /usr/bin/redis-cli): run `scripts/redis-env` (as root; installs the Debian package redis-server, which brings redis-tools)",
    )
}

/// A tool installed on the system: the file `$var` names, else `name` on `PATH`, else
/// `fallback`; missing, [`missing_tool`] with `hint`.
fn system_tool(var: &str, name: &str, fallback: &str, hint: &str) -> Option<PathBuf> {
    if let Some(path) = explicit_file(var) {
        return Some(path);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|candidate| candidate.is_file())
    });
    if let Some(path) = on_path.or_else(|| {
        let fallback = PathBuf::from(fallback);
        fallback.is_file().then_some(fallback)
    }) {
        return Some(path);
    }
    missing_tool(hint)
}

/// The file that the environment variable `var` names, if it is set and not empty; panics
/// when it names nothing (an explicit choice that is wrong is not a reason to skip).
fn explicit_file(var: &str) -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(var).filter(|v| !v.is_empty())?);
    assert!(
        path.is_file(),
        "{var} points at {}, which does not exist",
        path.display()
    );
    Some(path)
}

/// What a test does when an external tool it drives is missing: under `CI=true` it fails
/// (CI must not skip silently); otherwise it prints a loud skip note and returns `None`.
fn missing_tool<T>(hint: &str) -> Option<T> {
    if std::env::var_os("CI").is_some_and(|v| v == OsStr::new("true")) {
        panic!("{hint} (CI=true, so this test fails instead of skipping)");
    }
    // Written to the stderr handle rather than with eprintln!, which libtest captures: the
    // note shows even without --nocapture.
    let bar = "=".repeat(78);
    let _ = writeln!(
        std::io::stderr().lock(),
        "\n{bar}\nSKIPPED: {hint}\n{bar}\n"
    );
    None
}
