//! Helpers shared by the integration tests that drive built binaries and external clients.
//!
//! Use from a test file with `mod support;`. Not every test uses every helper, hence the
//! `dead_code` allowance.
//!
//! - [`target_dir`]: cargo's target directory (where `scripts/python-env` puts its venv).
//! - [`example_binary`]: path of a built example, e.g. `examples/quickstart`.
//! - [`python`]: the venv's Python, or `None` (skip) outside CI when it is missing.
//! - [`run_with_timeout`]: run a command to completion with a hard deadline, capturing output.

#![allow(dead_code)]

use std::{
    ffi::OsStr,
    fmt::Write as _,
    io::{Read, Write as _},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

/// Cargo's target directory: `$CARGO_TARGET_DIR` when set (a relative value is taken from the
/// workspace root, which is where `cargo test` runs test binaries), else `<workspace>/target`.
pub(crate) fn target_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

/// Path of the example binary `name`, built in the same profile as the running test.
///
/// Test executables live in `<target>/<profile>/deps/`; examples in
/// `<target>/<profile>/examples/`. `cargo test --test X` does not build examples, so this
/// panics with a hint to run `cargo build --examples` when the binary is missing.
pub(crate) fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable location: {}", exe.display()));
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let path = profile_dir.join("examples").join(file);
    assert!(
        path.is_file(),
        "example binary `{name}` not found at {}: run `cargo build --examples` \
         (same profile as the tests) first",
        path.display()
    );
    path
}

/// A workspace package's binary (such as `fusion-demo`), built in the tests' profile by
/// `cargo build --workspace --bins`. Panics with what to run when it is missing.
#[allow(dead_code)]
pub(crate) fn package_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's own path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("unexpected test executable location: {}", exe.display()));
    let path = profile_dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "binary `{name}` not found at {}: run `cargo build --workspace --bins` (same profile as the tests) first",
        path.display()
    );
    path
}

/// The Python interpreter of the test venv, if there is one.
///
/// Looks at `$FUSION_PYTHON` first (it must then exist, or this panics), then at
/// `<target>/fusion-venv/bin/python`, which `scripts/python-env` creates with the pinned MCP
/// Python SDK. When neither exists: if `$CI` is `true` this panics (CI must not skip silently);
/// otherwise it prints a loud skip note to stderr (uncaptured) and returns `None`, so a test can do
/// `let Some(python) = support::python() else { return };`.
pub(crate) fn python() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os("FUSION_PYTHON").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(explicit);
        assert!(
            path.is_file(),
            "FUSION_PYTHON points at {}, which does not exist",
            path.display()
        );
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

/// What [`run_with_timeout`] observed.
#[derive(Debug)]
pub(crate) struct RunOutput {
    /// The exit status, or `None` if the process had to be killed at the deadline.
    pub(crate) status: Option<ExitStatus>,
    /// Everything the process wrote to stdout (lossy UTF-8).
    pub(crate) stdout: String,
    /// Everything the process wrote to stderr (lossy UTF-8).
    pub(crate) stderr: String,
    /// Whether the deadline passed and the process was killed.
    pub(crate) timed_out: bool,
    /// Wall time from spawn to exit (or to the kill).
    pub(crate) elapsed: Duration,
}

impl RunOutput {
    /// True when the process exited by itself with status 0.
    pub(crate) fn success(&self) -> bool {
        !self.timed_out && self.status.is_some_and(|s| s.success())
    }

    /// A multi-line account (status, stdout, stderr) for assertion messages.
    pub(crate) fn report(&self) -> String {
        let mut out = String::new();
        let status = match (self.timed_out, self.status) {
            (true, _) => "killed at the timeout".to_owned(),
            (false, Some(status)) => status.to_string(),
            (false, None) => "unknown".to_owned(),
        };
        let _ = writeln!(out, "status: {status} after {:.1?}", self.elapsed);
        let _ = writeln!(out, "--- stdout ---\n{}", self.stdout.trim_end());
        let _ = writeln!(out, "--- stderr ---\n{}", self.stderr.trim_end());
        let _ = write!(out, "--- end ---");
        out
    }
}

/// Runs `command` to completion, but for at most `timeout`, capturing stdout and stderr.
///
/// Stdin is set to null and stdout/stderr to pipes (drained on threads, so a chatty process
/// cannot block). On Unix the process gets its own process group, and at the deadline the
/// whole group is killed (SIGKILL), so subprocesses it spawned (e.g. MCP servers) go too;
/// elsewhere only the process itself is killed. Panics only if the process cannot be spawned.
pub(crate) fn run_with_timeout(mut command: Command, timeout: Duration) -> RunOutput {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0);
    }
    let start = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {command:?}: {e}"));
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());

    let poll = Duration::from_millis(20);
    let (status, timed_out) = loop {
        match child.try_wait() {
            Ok(Some(status)) => break (Some(status), false),
            Ok(None) if start.elapsed() >= timeout => {
                kill_tree(&mut child);
                break (None, true);
            }
            Ok(None) => thread::sleep(poll),
            Err(e) => panic!("waiting for {command:?}: {e}"),
        }
    };
    let elapsed = start.elapsed();

    // A grandchild that inherited the pipes can keep them open after the child exits:
    // give the readers a short grace period, then take whatever they have.
    let grace = Instant::now() + Duration::from_secs(5);
    let stdout = collect(stdout, grace);
    let mut stderr = collect(stderr, grace);
    if timed_out {
        let _ = write!(
            stderr,
            "\n[run_with_timeout: killed after {timeout:?}: {command:?}]"
        );
    }
    RunOutput {
        status,
        stdout,
        stderr,
        timed_out,
        elapsed,
    }
}

/// A pipe being read to its end on a thread, into a shared buffer.
struct Drain {
    buf: Arc<Mutex<Vec<u8>>>,
    thread: Option<JoinHandle<()>>,
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> Drain {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let thread = pipe.map(|mut pipe| {
        let buf = Arc::clone(&buf);
        thread::spawn(move || {
            let mut chunk = [0_u8; 8192];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend_from_slice(&chunk[..n]),
                }
            }
        })
    });
    Drain { buf, thread }
}

fn collect(drain: Drain, deadline: Instant) -> String {
    if let Some(thread) = drain.thread {
        while !thread.is_finished() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if thread.is_finished() {
            let _ = thread.join();
        }
    }
    let bytes = drain.buf.lock().unwrap_or_else(|e| e.into_inner());
    String::from_utf8_lossy(&bytes).into_owned()
}

fn kill_tree(child: &mut Child) {
    #[cfg(unix)]
    {
        // The child leads its own process group (process_group(0) above).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}
