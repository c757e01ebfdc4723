//! `cargo fusion install` (issue 62) against a home directory an attacker, or an accident,
//! prepared (issue 57, item 5): a config that is a symbolic link elsewhere, a `.bak` or a
//! `.tmp` planted as a link to a file it would overwrite, a config that is not JSON, and
//! one of 17 MB. Each is refused with a reason, and nothing it points to is written.
//!
//! Runs the workspace's `cargo-fusion` binary under a temporary `HOME`, from the workspace
//! root with `-p fusion-demo`; the demo it builds goes to a target directory of its own
//! (as in `cargo-fusion/tests`), never the one the other tests' binaries are in.

use crate::support;

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

/// The first run builds the demo; later ones find it built.
const DEADLINE: Duration = Duration::from_secs(900);

/// A fresh temporary home directory for one case.
fn home(case: &str) -> PathBuf {
    let home = std::env::temp_dir().join(format!(
        "fusion-hostile-install-{case}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&home);
    std::fs::create_dir_all(home.join(".cursor")).expect("the home directory");
    home
}

/// `cargo fusion install cursor -p fusion-demo` under `home`.
fn install(home: &Path) -> support::RunOutput {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let real_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let kept = |name: &str, default: &str| {
        std::env::var_os(name).unwrap_or_else(|| real_home.join(default).into_os_string())
    };
    let mut command = Command::new(support::package_binary("cargo-fusion"));
    command
        .args(["install", "cursor", "-p", "fusion-demo"])
        .current_dir(root)
        .env("CARGO_HOME", kept("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", kept("RUSTUP_HOME", ".rustup"))
        .env("HOME", home)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fusion-builds"),
        );
    support::run_with_timeout(command, DEADLINE)
}

/// Refused with exit 2 and `reason` in its words.
fn assert_refused(run: &support::RunOutput, reason: &str) {
    assert_eq!(
        run.status.and_then(|status| status.code()),
        Some(2),
        "{}",
        run.report()
    );
    assert!(run.stderr.contains(reason), "{}", run.report());
}

#[cfg(unix)]
#[test]
fn links_are_refused_and_what_they_point_to_is_never_written() {
    let home = home("links");
    let config = home.join(".cursor/mcp.json");
    let victim = home.join("dotfiles-mcp.json");
    let kept = "{\"mcpServers\": {}}\n";

    // The config itself a link (into a dotfiles repository, or anywhere).
    std::fs::write(&victim, kept).expect("the linked file");
    std::os::unix::fs::symlink(&victim, &config).expect("the link");
    assert_refused(&install(&home), "is a symbolic link");
    assert!(
        std::fs::symlink_metadata(&config).is_ok_and(|meta| meta.file_type().is_symlink()),
        "the link is still a link"
    );
    assert_eq!(std::fs::read_to_string(&victim).ok().as_deref(), Some(kept));

    // A real config, with its backup or its staging file planted as a link to a victim.
    std::fs::remove_file(&config).expect("the link removed");
    std::fs::write(&config, kept).expect("the config");
    for planted in ["mcp.json.bak", "mcp.json.tmp"] {
        let victim = home.join(format!("victim-of-{planted}"));
        std::fs::write(&victim, "precious\n").expect("the victim");
        let link = home.join(".cursor").join(planted);
        std::os::unix::fs::symlink(&victim, &link).expect("the planted link");
        assert_refused(&install(&home), "is a symbolic link");
        assert_eq!(
            std::fs::read_to_string(&victim).ok().as_deref(),
            Some("precious\n"),
            "{planted}: the file it points to is untouched"
        );
        assert_eq!(std::fs::read_to_string(&config).ok().as_deref(), Some(kept));
        std::fs::remove_file(&link).expect("the link removed");
    }
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn a_config_that_is_not_json_or_too_large_is_left_as_it_is() {
    let home = home("garbage");
    let config = home.join(".cursor/mcp.json");
    let garbage = [0xff_u8, 0xfe, b'{', b'\n', 0x00, b'"'];
    std::fs::write(&config, garbage).expect("garbage");
    let run = install(&home);
    assert_eq!(
        run.status.and_then(|status| status.code()),
        Some(2),
        "{}",
        run.report()
    );
    assert_eq!(std::fs::read(&config).ok().as_deref(), Some(&garbage[..]));
    assert!(!home.join(".cursor/mcp.json.bak").exists());

    // 17 MB (sparse): refused by its size, before it is read.
    let file = std::fs::File::create(&config).expect("the large config");
    file.set_len(17 * 1024 * 1024).expect("its length");
    drop(file);
    assert_refused(&install(&home), "more than a client's config");
    assert_eq!(
        std::fs::metadata(&config).map(|meta| meta.len()).ok(),
        Some(17 * 1024 * 1024)
    );
    let _ = std::fs::remove_dir_all(&home);
}
