//! Running `cargo-fusion` from a test: from the workspace root, with a deadline on every
//! wait, the child killed at the deadline.

use std::ffi::OsString;
use std::io::Read;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::thread;
use std::time::{Duration, Instant};

/// Long enough for the first run to build the demo (the runs of parallel tests wait for
/// each other on cargo's lock); a run that takes longer is hung.
const DEADLINE: Duration = Duration::from_secs(900);

/// What a run of `cargo-fusion` did.
#[derive(Debug)]
pub(crate) struct Run {
    /// Its exit code (`None`: killed by a signal).
    pub(crate) code: Option<i32>,
    /// Its standard output.
    pub(crate) stdout: String,
    /// Its standard error (cargo's build progress included).
    pub(crate) stderr: String,
}

/// The workspace root, where `-p fusion-demo` names the demo.
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the servers `cargo-fusion` builds in these tests go.
fn builds_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cargo-fusion-builds")
}

/// Runs `cargo-fusion` with `args` from the workspace root.
pub(crate) fn cargo_fusion(args: &[&str]) -> Run {
    cargo_fusion_with(args, &workspace_root(), &[])
}

/// Runs `cargo-fusion` with `args` in `dir`, with `env` set over the test's own.
pub(crate) fn cargo_fusion_with(args: &[&str], dir: &Path, env: &[(&str, OsString)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-fusion"));
    command
        .args(args)
        .current_dir(dir)
        // The servers it builds go to a target directory of their own: built into the
        // workspace's, `-p fusion-demo` alone would rebuild fusion-runtime with the demo's
        // features only, and replace the demo binary the other tests of a
        // `cargo test --workspace` run.
        .env("CARGO_TARGET_DIR", builds_dir())
        .envs(env.iter().map(|(key, value)| (key, value)));
    run_within(command, DEADLINE)
}

/// Runs `command` with no input and its output captured; one still running after `limit`
/// is killed and fails the test, with what it wrote on stderr.
pub(crate) fn run_within(command: Command, limit: Duration) -> Run {
    let what = format!("{command:?}");
    try_run_within(command, limit).unwrap_or_else(|error| panic!("{what} does not start: {error}"))
}

/// [`run_within`], or the error of a `command` that cannot be started (a program that is
/// not installed), for a test that may go without it.
pub(crate) fn try_run_within(mut command: Command, limit: Duration) -> std::io::Result<Run> {
    let what = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not finish within {limit:?}; stderr:\n{}",
                stderr.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(20));
    };
    Ok(Run {
        code: status.code(),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

fn read_all(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_string(&mut text);
        }
        text
    })
}

/// The environment that points `HOME` at `home` and keeps cargo and rustup where they
/// are: they find their own homes through `HOME` otherwise, and would see no toolchain
/// and no registry.
pub(crate) fn home_env(home: &Path) -> Vec<(&'static str, OsString)> {
    let real_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let kept = |name: &str, default: &str| {
        std::env::var_os(name).unwrap_or_else(|| real_home.join(default).into_os_string())
    };
    vec![
        ("CARGO_HOME", kept("CARGO_HOME", ".cargo")),
        ("RUSTUP_HOME", kept("RUSTUP_HOME", ".rustup")),
        ("HOME", home.as_os_str().to_owned()),
    ]
}

/// The demo serving Streamable HTTP on a free port, killed when this is dropped (a failing
/// test included).
pub(crate) struct DemoOverHttp {
    child: Child,
    /// Its endpoint, `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl DemoOverHttp {
    /// Builds the demo (through `cargo fusion`, which builds before it reads) and starts
    /// it with `--http 0`; its endpoint is read off the line it prints on stderr.
    pub(crate) fn start() -> Self {
        let built = cargo_fusion(&["tools", "--json", "-p", "fusion-demo"]);
        assert_eq!(built.code, Some(0), "the demo builds: {built:?}");
        // Built by the run above, in the tests' own target directory.
        let executable = builds_dir()
            .join("debug")
            .join(format!("fusion-demo{}", std::env::consts::EXE_SUFFIX));
        let mut child = Command::new(executable)
            .args(["--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the demo starts");
        let stderr = child.stderr.take().expect("the demo's stderr");
        let (sender, urls) = channel();
        thread::spawn(move || {
            // Read to the end, so the demo never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("http://") {
                    let url: String = line[at..].split_whitespace().take(1).collect();
                    let _ = sender.send(url);
                }
            }
        });
        let mut demo = Self {
            child,
            url: String::new(),
        };
        demo.url = urls
            .recv_timeout(Duration::from_secs(60))
            .expect("the demo prints its endpoint within a minute");
        demo
    }
}

impl Drop for DemoOverHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
