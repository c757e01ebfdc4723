//! Which server binary `cargo fusion` works on, as cargo chooses a target (`-p`, `--bin`,
//! `--example`), and its executable after `cargo build`.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::error::{CliError, CliResult};
use crate::process;

/// The server to build and run, chosen as `cargo build` would.
#[derive(Clone, Debug, Default, clap::Args)]
pub(crate) struct ServerSelection {
    /// The package of the server (as `cargo build -p`); by default the package in the
    /// current directory.
    #[arg(short = 'p', long = "package", value_name = "NAME")]
    package: Option<String>,
    /// The binary target of the server, when the package has several.
    #[arg(long, value_name = "NAME", conflicts_with = "example")]
    bin: Option<String>,
    /// An example of the package that is the server.
    #[arg(long, value_name = "NAME")]
    example: Option<String>,
    /// Build the server in release mode.
    #[arg(long)]
    release: bool,
}

/// A built server binary.
#[derive(Clone, Debug)]
pub(crate) struct BuiltServer {
    /// The target's name (the binary's or the example's).
    pub(crate) name: String,
    /// The executable's absolute path.
    pub(crate) executable: PathBuf,
    /// The directory of the package's `Cargo.toml`: where its lockfile goes.
    pub(crate) package_dir: PathBuf,
    /// Whether cargo found the executable up to date and did not link it again: `dev`
    /// then has nothing new to restart.
    pub(crate) fresh: bool,
}

/// The cargo that runs `cargo fusion`: cargo sets `CARGO` for its subcommands.
fn cargo() -> OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"))
}

impl ServerSelection {
    /// Whether the server is built in release mode.
    pub(crate) fn is_release(&self) -> bool {
        self.release
    }

    /// The directory of the chosen server's package (that of its `Cargo.toml`), read from
    /// cargo before anything is built: `cargo fusion dev` watches it even when the first
    /// build fails.
    ///
    /// # Errors
    /// When cargo cannot read the manifests, or `-p` names no package of the workspace.
    pub(crate) fn package_dir(&self) -> CliResult<PathBuf> {
        let manifest = match &self.package {
            None => {
                let located = cargo_output(&["locate-project", "--message-format", "plain"])?;
                PathBuf::from(located.trim())
            }
            Some(name) => {
                let metadata = cargo_output(&["metadata", "--no-deps", "--format-version", "1"])?;
                let metadata: Value = serde_json::from_str(&metadata).map_err(|error| {
                    CliError::new(format!("cannot read `cargo metadata`: {error}"))
                })?;
                metadata["packages"]
                    .as_array()
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .find(|package| package["name"] == name.as_str())
                    .and_then(|package| package["manifest_path"].as_str())
                    .map(PathBuf::from)
                    .ok_or_else(|| {
                        CliError::new(format!("the workspace has no package `{name}`"))
                    })?
            }
        };
        manifest
            .parent()
            .map(Path::to_path_buf)
            .ok_or_else(|| CliError::new(format!("{} has no directory", manifest.display())))
    }

    /// Builds the chosen server with `cargo build` (its progress shows on standard error)
    /// and returns its executable.
    ///
    /// # Errors
    /// When cargo fails, or the choice names no binary or more than one.
    pub(crate) fn build(&self) -> CliResult<BuiltServer> {
        let (package, bin) = match (&self.package, &self.bin, &self.example) {
            (None, None, None) => {
                let (package, bin) = current_package()?;
                (Some(package), Some(bin))
            }
            (package, bin, _) => (package.clone(), bin.clone()),
        };
        let mut command = Command::new(cargo());
        command.args(["build", "--message-format=json-render-diagnostics"]);
        if let Some(package) = &package {
            command.args(["--package", package]);
        }
        if let Some(bin) = &bin {
            command.args(["--bin", bin]);
        }
        if let Some(example) = &self.example {
            command.args(["--example", example]);
        }
        if self.release {
            command.arg("--release");
        }
        let built = run_cargo_build(command)?;
        let wanted = bin.as_deref().or(self.example.as_deref());
        choose(built, wanted, package.as_deref())
    }
}

/// The one server among what cargo `built`: the target named `wanted`, if one is.
fn choose(
    built: Vec<BuiltServer>,
    wanted: Option<&str>,
    package: Option<&str>,
) -> CliResult<BuiltServer> {
    let mut candidates: Vec<BuiltServer> = built
        .into_iter()
        .filter(|server| wanted.is_none_or(|name| server.name == name))
        .collect();
    let what = package.map_or_else(String::new, |package| format!(" of package `{package}`"));
    match candidates.len() {
        1 => Ok(candidates.remove(0)),
        0 => Err(CliError::new(format!(
            "cargo built no binary{what}: choose a package with a binary with -p, or an example with --example"
        ))),
        _ => {
            let names: Vec<String> = candidates
                .iter()
                .map(|server| format!("`{}`", server.name))
                .collect();
            Err(CliError::new(format!(
                "cargo built {} binaries{what} ({}): choose one with --bin",
                names.len(),
                names.join(", ")
            )))
        }
    }
}

/// Runs a `cargo build --message-format=json..` and gathers the executables it reports.
fn run_cargo_build(mut command: Command) -> CliResult<Vec<BuiltServer>> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command
        .spawn()
        .map_err(|error| CliError::new(format!("cannot run cargo: {error}")))?;
    let mut built = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines() {
            let line = line
                .map_err(|error| CliError::new(format!("cannot read cargo's output: {error}")))?;
            if let Some(server) = executable_of(&line) {
                built.push(server);
            }
        }
    }
    // No deadline here: a build takes as long as it takes, and its progress is on screen.
    let status = child
        .wait()
        .map_err(|error| CliError::new(format!("cannot wait for cargo: {error}")))?;
    if !status.success() {
        return Err(CliError::new("cargo build failed (its errors are above)"));
    }
    Ok(built)
}

/// The executable a `compiler-artifact` message of `cargo build` reports, if it is one.
fn executable_of(line: &str) -> Option<BuiltServer> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message["reason"] != "compiler-artifact" {
        return None;
    }
    let executable = message["executable"].as_str()?;
    let kinds = message["target"]["kind"].as_array()?;
    if !kinds.iter().any(|kind| kind == "bin" || kind == "example") {
        return None;
    }
    let manifest = Path::new(message["manifest_path"].as_str()?);
    Some(BuiltServer {
        name: message["target"]["name"].as_str()?.to_owned(),
        executable: PathBuf::from(executable),
        package_dir: manifest.parent()?.to_path_buf(),
        fresh: message["fresh"].as_bool().unwrap_or(false),
    })
}

/// The package whose directory `cargo fusion` runs in (the one whose manifest `cargo
/// locate-project` finds) and its binary, read from `cargo metadata` before anything is
/// built: a package without exactly one binary is refused at once.
fn current_package() -> CliResult<(String, String)> {
    let located = cargo_output(&["locate-project", "--message-format", "plain"])?;
    let manifest = PathBuf::from(located.trim());
    let metadata = cargo_output(&["metadata", "--no-deps", "--format-version", "1"])?;
    let metadata: Value = serde_json::from_str(&metadata)
        .map_err(|error| CliError::new(format!("cannot read `cargo metadata`: {error}")))?;
    let packages = metadata["packages"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let package = packages
        .iter()
        .find(|package| {
            package["manifest_path"].as_str().map(Path::new) == Some(manifest.as_path())
        })
        .ok_or_else(|| {
            CliError::new(format!(
                "{} is a workspace without a package of its own: choose the server with -p NAME",
                manifest.display()
            ))
        })?;
    let name = package["name"].as_str().unwrap_or_default().to_owned();
    let bins: Vec<&str> = package["targets"]
        .as_array()
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter(|target| {
            target["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "bin"))
        })
        .filter_map(|target| target["name"].as_str())
        .collect();
    match bins.as_slice() {
        [bin] => Ok((name, (*bin).to_owned())),
        [] => Err(CliError::new(format!(
            "the package `{name}` here has no binary: choose the server with -p NAME, or --example NAME"
        ))),
        several => Err(CliError::new(format!(
            "the package `{name}` here has {} binaries ({}): choose one with --bin",
            several.len(),
            several.join(", ")
        ))),
    }
}

/// What a quick cargo command (`locate-project`, `metadata`) prints.
fn cargo_output(args: &[&str]) -> CliResult<String> {
    /// Reading the manifests takes well under a second; a minute is a hung cargo.
    const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
    let mut command = Command::new(cargo());
    command.args(args);
    let what = format!("`cargo {}`", args.join(" "));
    let finished = process::run_to_end(command, TIMEOUT, &what)?;
    if !finished.status.success() {
        return Err(CliError::new(format!(
            "{what} failed: {}",
            process::tail(&finished.stderr)
        )));
    }
    String::from_utf8(finished.stdout)
        .map_err(|_| CliError::new(format!("{what} printed something that is not UTF-8")))
}
