//! Processes: the built example and package binaries, running a command to completion under
//! a deadline with its output captured, draining pipes on threads, signals, and killing a
//! process group.

use std::{
    fmt::Write as _,
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread::{self, JoinHandle},
    time::{Duration, Instant},
};

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
    command.stdout(Stdio::piped());
    let start = Instant::now();
    let mut child = spawn_in_group(&mut command);
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

/// Spawns `command` with stdin null and stderr piped (stdout as the caller set it) as the
/// leader of its own process group on Unix, so that [`kill_tree`] ends what it spawns too.
/// Panics when it cannot be spawned.
pub(crate) fn spawn_in_group(command: &mut Command) -> Child {
    command.stdin(Stdio::null()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0);
    }
    command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {command:?}: {e}"))
}

/// Kills process `pid` (SIGKILL) if `stood_down` is still unset after `limit`. The owner
/// sets the flag before it reaps the process, so that a recycled pid is never killed.
pub(crate) fn watchdog(pid: u32, limit: Duration) -> Arc<AtomicBool> {
    let stood_down = Arc::new(AtomicBool::new(false));
    let watched = Arc::clone(&stood_down);
    thread::spawn(move || {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if watched.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(Duration::from_millis(100));
        }
        if !watched.load(Ordering::SeqCst) {
            send_signal(pid, "KILL");
        }
    });
    stood_down
}

/// A pipe being read to its end on a thread, into a shared buffer.
pub(super) struct Drain {
    pub(super) buf: Arc<Mutex<Vec<u8>>>,
    pub(super) thread: Option<JoinHandle<()>>,
}

/// Reads `pipe` to its end on a thread.
pub(super) fn drain(pipe: Option<impl Read + Send + 'static>) -> Drain {
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

/// Sends `signal` (e.g. `"TERM"`) to process `pid`, with the system's `kill`.
pub(crate) fn send_signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Kills `child` and, on Unix, its whole process group (it must lead one), then reaps it.
pub(crate) fn kill_tree(child: &mut Child) {
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

/// The most resident memory process `pid` has had, in KiB (`VmHWM`), or `None` once it is
/// gone.
pub(crate) fn peak_rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmHWM:")
}

/// The resident memory of process `pid` in KiB (`VmRSS`), or `None` once it is gone.
pub(crate) fn rss_kib(pid: u32) -> Option<u64> {
    status_kib(pid, "VmRSS:")
}

/// One `/proc/<pid>/status` figure in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}
