//! Crates generated and built the way a user's would be: outside the workspace (each its own
//! workspace and target directory), with the workspace's `Cargo.lock` copied in so the
//! dependencies are the versions fusion locks, and a path dependency on fusion's crates.
//!
//! The benchmarks measure fusion as a user gets it. An example of this workspace is not
//! that: examples see the dev-dependencies, so the quickstart built with `cargo build
//! --example quickstart` carries the features the tests turn on (OpenTelemetry's
//! exporters, Redis, OAuth): five times rmcp's code, and peak RSS that grows with it.
//! [`quickstart`] builds the same source with `fusion-runtime`'s default features only.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

/// The workspace this package belongs to.
pub fn workspace() -> PathBuf {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
    bench.parent().unwrap_or(bench).to_path_buf()
}

/// The workspace's target directory (`CARGO_TARGET_DIR` when set).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target"))
}

/// Builds this package's `bins` in release with `cargo` (the comparisons' baselines), so a
/// stale binary is never measured; `who` names the caller in what it prints.
pub fn build_baselines(cargo: &std::ffi::OsStr, who: &str, bins: &[&str]) -> Result<(), String> {
    let mut args = vec!["build", "--release", "-p", "fusion-bench"];
    for bin in bins {
        args.extend(["--bin", bin]);
    }
    eprintln!("{who}: cargo {}", args.join(" "));
    let mut command = Command::new(cargo);
    command.args(&args);
    // `cargo run` gives this program its package's variables (`CARGO_PKG_NAME`,
    // `CARGO_MANIFEST_DIR`, ...). Build scripts that read them (ring's, under the gateway's
    // TLS) would be rerun by this build and again by the next `cargo run`, and everything
    // above them rebuilt both times: they are left out, as the shell had them.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let from_cargo_run = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                &*name,
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            );
        if from_cargo_run {
            command.env_remove(&*name);
        }
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "`cargo {}` failed ({status}); fix the build, or pass --no-build to measure \
             the binaries already built",
            args.join(" ")
        ));
    }
    Ok(())
}

/// One generated crate: `<root>/<name>/`, with `src/` and its own `target/`.
pub struct UserCrate {
    /// The package's (and its binary's) name.
    pub name: &'static str,
    /// The crate's directory.
    pub dir: PathBuf,
}

impl UserCrate {
    /// Writes the crate: `Cargo.toml` with `deps` (the lines of `[dependencies]`), then each
    /// `(path under src/, text)` of `sources`, and the workspace's `Cargo.lock` if the crate
    /// has none yet. Unchanged files are not rewritten, so what is built stays built.
    pub fn write(
        name: &'static str,
        root: &Path,
        deps: &str,
        sources: &[(&str, &str)],
    ) -> Result<Self, String> {
        let dir = root.join(name);
        let write = |path: PathBuf, text: &str| {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .map_err(|e| format!("creating {}: {e}", parent.display()))?;
            }
            if fs::read_to_string(&path).ok().as_deref() != Some(text) {
                fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
            }
            Ok::<_, String>(())
        };
        write(dir.join("Cargo.toml"), &manifest(name, deps))?;
        for (path, text) in sources {
            write(dir.join("src").join(path), text)?;
        }
        if !dir.join("Cargo.lock").exists() {
            fs::copy(workspace().join("Cargo.lock"), dir.join("Cargo.lock"))
                .map_err(|e| format!("copying Cargo.lock: {e}"))?;
        }
        Ok(UserCrate { name, dir })
    }

    /// `cargo <args>` in the crate, in its own target directory; its output shown only when
    /// it fails. The wall time.
    pub fn cargo(&self, args: &[&str]) -> Result<Duration, String> {
        let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        command.args(args).arg("--quiet").current_dir(&self.dir);
        // `cargo run` exports its own target directory and wrapper; the generated crates
        // build in theirs, as a user's would.
        for var in [
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET_DIR",
            "RUSTC_WRAPPER",
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
        ] {
            command.env_remove(var);
        }
        command.env("CARGO_TARGET_DIR", self.dir.join("target"));
        let start = Instant::now();
        let output = command
            .output()
            .map_err(|e| format!("running cargo {}: {e}", args.join(" ")))?;
        let took = start.elapsed();
        if !output.status.success() {
            return Err(format!(
                "`cargo {}` failed in {}:\n{}",
                args.join(" "),
                self.dir.display(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(took)
    }

    /// The binary a build in `profile` (`debug`, `release`) made.
    pub fn binary(&self, profile: &str) -> PathBuf {
        self.dir.join("target").join(profile).join(self.name)
    }
}

/// `Cargo.toml` of a generated crate: its own workspace, so the enclosing one ignores it.
fn manifest(name: &str, deps: &str) -> String {
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\npublish = false\n\n[dependencies]\n{deps}\n[workspace]\n"
    )
}

/// Where [`quickstart`] writes its crate for `features`.
fn quickstart_root(features: &[&str]) -> PathBuf {
    let mut name = String::from("user-quickstart");
    for feature in features {
        name.push('-');
        name.push_str(feature);
    }
    target_dir().join(name)
}

/// Where [`quickstart`] builds its binary for `features` (whether or not it is built yet).
pub fn quickstart_binary(features: &[&str]) -> PathBuf {
    quickstart_root(features).join("quickstart/target/release/quickstart")
}

/// Writes `examples/quickstart.rs` (with its `support/cli.rs`) as a user's crate on
/// `fusion-runtime` with its default features and `features` (`otel` for `compare
/// --otel`), tokio and thiserror (what the example's own manifest gives it), builds it in
/// release, and returns the binary: the fusion server the comparisons measure.
pub fn quickstart(features: &[&str]) -> Result<PathBuf, String> {
    let workspace = workspace();
    let read = |path: &str| {
        fs::read_to_string(workspace.join(path)).map_err(|e| format!("reading {path}: {e}"))
    };
    let main = read("examples/quickstart.rs")?;
    let cli = read("examples/support/cli.rs")?;
    let deps = format!(
        "fusion-runtime = {{ path = {:?}, features = {features:?} }}\ntokio = {{ version = \"1\", features = [\"macros\", \"rt\", \"time\", \"net\"] }}\nthiserror = \"2\"\n",
        workspace.join("fusion-runtime").display().to_string()
    );
    let krate = UserCrate::write(
        "quickstart",
        &quickstart_root(features),
        &deps,
        &[("main.rs", &main), ("support/cli.rs", &cli)],
    )?;
    krate.cargo(&["build", "--release"])?;
    Ok(krate.binary("release"))
}
