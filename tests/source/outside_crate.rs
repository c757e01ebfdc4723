//! The examples build the way a user's crate does: each is copied into a crate of its own in a
//! temp dir, outside this workspace, whose only dependencies are `fusion-runtime` (by path),
//! `tokio` and, for error enums, `thiserror` — what README's install line gives a user. Inside
//! the workspace, the root package's dev-dependencies (serde, schemars, serde_json) are in
//! scope for the examples too, and would hide a derive that names `::serde` or an import of
//! `serde_json`; out here they are not.
//!
//! Every crate is built with `cargo build --offline` (the workspace's `Cargo.lock` is copied
//! in, so the same versions are picked and nothing is fetched) into one target dir under
//! this workspace's, kept between runs, so the dependencies are compiled once, not once a
//! crate. Each build has a deadline; a crate's failure is reported with cargo's output.
//!
//! Files an example includes with `#[path = "..."]` (`examples/support/cli.rs`) come along,
//! into `support/` beside the file that includes them.

use crate::support;

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

/// How long one crate's build may take. The first build compiles fusion-runtime's
/// dependencies once more (with features unified for a user's crate, not the workspace's
/// dev-dependencies), which on a shared two-core machine takes minutes; later builds reuse it.
const BUILD_TIMEOUT: Duration = Duration::from_secs(25 * 60);

/// The tokio features of README's install line.
const TOKIO_README: &[&str] = &["macros", "rt"];
/// The tokio features of examples that also sleep or listen themselves.
const TOKIO_TIME_NET: &[&str] = &["macros", "rt", "time", "net"];

/// One user crate made from examples.
struct UserCrate {
    /// The package name.
    name: &'static str,
    /// `(file in the workspace, file in the crate)`.
    files: &'static [(&'static str, &'static str)],
    /// Features of fusion-runtime beyond the defaults.
    features: &'static [&'static str],
    tokio: &'static [&'static str],
    thiserror: bool,
    /// Other dependency lines, as in `[dependencies]`.
    extra: &'static str,
}

const CRATES: &[UserCrate] = &[
    // README's claim, exactly: `cargo add fusion-runtime tokio --features tokio/macros,tokio/rt`
    // (and thiserror for the error enum).
    UserCrate {
        name: "quickstart",
        files: &[("examples/quickstart.rs", "src/main.rs")],
        features: &[],
        tokio: TOKIO_README,
        thiserror: true,
        extra: "",
    },
    UserCrate {
        name: "conformance",
        files: &[("examples/conformance.rs", "src/main.rs")],
        features: &[],
        tokio: TOKIO_TIME_NET,
        thiserror: true,
        extra: "",
    },
    UserCrate {
        name: "report_task",
        files: &[("examples/report_task.rs", "src/main.rs")],
        features: &[],
        tokio: TOKIO_TIME_NET,
        thiserror: false,
        extra: "",
    },
    UserCrate {
        name: "axum_mount",
        files: &[("examples/axum_mount.rs", "src/main.rs")],
        features: &[],
        tokio: TOKIO_TIME_NET,
        thiserror: false,
        extra: "",
    },
    UserCrate {
        name: "fleet",
        files: &[("examples/fleet.rs", "src/main.rs")],
        features: &["redis"],
        tokio: TOKIO_TIME_NET,
        thiserror: true,
        extra: "",
    },
    // A handler that fences its own database writes needs that database's crate.
    UserCrate {
        name: "fencing",
        files: &[("examples/fencing.rs", "src/main.rs")],
        features: &["redis"],
        tokio: TOKIO_TIME_NET,
        thiserror: true,
        extra: r#"rusqlite = { version = "0.43", default-features = false, features = ["bundled"] }"#,
    },
    // A team with an rmcp server of its own has rmcp as a dependency already, with the
    // features its own `#[tool_router]` needs.
    UserCrate {
        name: "rmcp_existing",
        files: &[("examples/rmcp_existing.rs", "src/main.rs")],
        features: &[],
        tokio: TOKIO_README,
        thiserror: true,
        extra: r#"rmcp = { version = "3.11", default-features = false, features = ["server", "macros", "transport-io"] }"#,
    },
    // The demo is a package of its own already (a library and a binary).
    UserCrate {
        name: "fusion-demo",
        files: &[
            ("examples/demo/src/lib.rs", "src/lib.rs"),
            ("examples/demo/src/main.rs", "src/main.rs"),
            // The MCP Apps view `lib.rs` embeds with `include_str!`.
            ("examples/demo/src/users_view.html", "src/users_view.html"),
        ],
        features: &["oauth"],
        tokio: TOKIO_README,
        thiserror: true,
        extra: "",
    },
    // The examples that serve the servers of this workspace's library (src/): the library
    // comes along as the user crate's own, under the same name.
    UserCrate {
        name: "fusion-tests",
        files: &[
            ("src/lib.rs", "src/lib.rs"),
            ("src/cancel_safety.rs", "src/cancel_safety.rs"),
            ("src/faults.rs", "src/faults.rs"),
            ("src/inventory.rs", "src/inventory.rs"),
            ("examples/cancel_safety.rs", "examples/cancel_safety.rs"),
            ("examples/faults.rs", "examples/faults.rs"),
            ("examples/inventory.rs", "examples/inventory.rs"),
        ],
        features: &[],
        tokio: TOKIO_TIME_NET,
        thiserror: true,
        extra: "",
    },
];

/// The workspace's root (where this package's manifest is).
fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A directory removed with everything in it when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "fusion-outside-{name}-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        Self(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `features = ["a", "b"]` as TOML.
fn toml_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("{item:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

/// The user crate's manifest: its own workspace (so cargo does not take it for a member of
/// one above it), the dependencies, and this workspace's dev-profile overrides (they only
/// make the RSA crates fast; with them, their compiled artifacts are shared).
fn manifest(krate: &UserCrate) -> String {
    let runtime = workspace().join("fusion-runtime");
    let mut text = format!(
        "[package]\nname = {:?}\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\n",
        krate.name
    );
    let _ = writeln!(
        text,
        "fusion-runtime = {{ path = {:?}, features = {} }}",
        runtime.display().to_string(),
        toml_list(krate.features)
    );
    let _ = writeln!(
        text,
        "tokio = {{ version = \"1\", features = {} }}",
        toml_list(krate.tokio)
    );
    if krate.thiserror {
        text.push_str("thiserror = \"2\"\n");
    }
    if !krate.extra.is_empty() {
        let _ = writeln!(text, "{}", krate.extra);
    }
    text.push_str(
        "\n[profile.dev.package.crypto-bigint]\nopt-level = 3\n\
         [profile.dev.package.crypto-primes]\nopt-level = 3\n\
         [profile.dev.package.rsa]\nopt-level = 3\n",
    );
    text
}

fn copy(from: &Path, to: &Path) {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    std::fs::copy(from, to)
        .unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", from.display(), to.display()));
}

/// Lays out `krate` in `dir`: the manifest, the workspace's lock file and its files. A file
/// an example includes with `#[path = "..."]` (the examples' shared `support/cli.rs`) is
/// copied into `support/` beside the file that includes it, and the attribute rewritten to
/// point there, as a user who copies the example would: the demo's `../../support/cli.rs`
/// would lie outside the crate.
fn lay_out(krate: &UserCrate, dir: &Path) {
    std::fs::write(dir.join("Cargo.toml"), manifest(krate))
        .unwrap_or_else(|e| panic!("cannot write the manifest in {}: {e}", dir.display()));
    copy(&workspace().join("Cargo.lock"), &dir.join("Cargo.lock"));
    for (from, to) in krate.files {
        let from = workspace().join(from);
        let to = dir.join(to);
        let text = std::fs::read_to_string(&from)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
        let mut rewritten = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            let included = line
                .trim()
                .strip_prefix("#[path = \"")
                .and_then(|rest| rest.strip_suffix("\"]"));
            match included {
                Some(relative) => {
                    let source = from.parent().unwrap_or(Path::new(".")).join(relative);
                    let name = source
                        .file_name()
                        .unwrap_or_else(|| panic!("{}: no file name", source.display()))
                        .to_string_lossy()
                        .into_owned();
                    let parent = to.parent().unwrap_or(dir);
                    copy(&source, &parent.join("support").join(&name));
                    let _ = writeln!(rewritten, "#[path = \"support/{name}\"]");
                }
                None => rewritten.push_str(line),
            }
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        std::fs::write(&to, rewritten)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", to.display()));
    }
}

/// Builds every example as a user's crate; one failure report lists every crate that failed.
#[test]
fn every_example_builds_as_a_user_crate_outside_the_workspace() {
    let target = support::target_dir().join("outside-crate");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut failures = String::new();
    for krate in CRATES {
        let dir = TempDir::new(krate.name);
        lay_out(krate, &dir.0);
        let mut command = Command::new(&cargo);
        command
            .args(["build", "--offline", "--all-targets", "--quiet"])
            .current_dir(&dir.0)
            .env("CARGO_TARGET_DIR", &target)
            // The crate is not in this workspace: none of the outer build's settings apply.
            .env_remove("CARGO_MANIFEST_DIR")
            .env_remove("RUSTFLAGS")
            .env("CARGO_INCREMENTAL", "0")
            // Whether it builds is the question: without debug info the shared target dir
            // is a fraction of the size, and the build quicker.
            .env("CARGO_PROFILE_DEV_DEBUG", "0");
        let out = support::run_with_timeout(command, BUILD_TIMEOUT);
        eprintln!(
            "outside_crate: {} built in {:.1?}: {}",
            krate.name,
            out.elapsed,
            if out.success() { "ok" } else { "FAILED" }
        );
        if !out.success() {
            let _ = writeln!(
                failures,
                "\n=== {} (Cargo.toml:\n{})\n{}",
                krate.name,
                manifest(krate),
                out.report()
            );
        }
    }
    assert!(
        failures.is_empty(),
        "examples that do not build as a user's crate (with fusion-runtime, tokio and thiserror only):{failures}"
    );
}
