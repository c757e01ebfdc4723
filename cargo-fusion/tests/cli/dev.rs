//! `cargo fusion dev`: a crate made by `cargo fusion new --http`, served, edited, served
//! again with the edit; a change that does not compile leaves the previous server serving;
//! a server that dies is reported and started again by the next change; SIGTERM stops the
//! server and `dev` exits 0. Built outside the workspace as `new.rs`
//! builds its crates (the same target directory, so its dependencies are compiled once).
//! Every wait has a deadline, and `dev`'s process group (its cargo and its server) is
//! killed at the end, a failing test included.

use std::io::{BufRead, BufReader};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::new::{BUILD_TIMEOUT, in_crate, new_crate, scratch};
use crate::support::{run_within, workspace_root};

/// How long a rebuild after a one-line edit may take: the dependencies are built already,
/// but the machine is shared.
const REBUILD_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long a call, or `dev`'s stop, may take.
const SHORT_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `cargo fusion dev`, its stderr read line by line; its process group is killed
/// when this is dropped.
struct DevRun {
    child: Child,
    lines: Receiver<String>,
    /// Every line read so far, for the failure messages and the checks of order.
    seen: Vec<String>,
    /// Where the next [`Self::wait_for`] starts looking in `seen`.
    cursor: usize,
}

impl DevRun {
    /// Starts `cargo fusion dev -- --http 0` in the crate at `dir`, in a process group of
    /// its own.
    fn start(dir: &Path) -> Self {
        let mut command = in_crate(env!("CARGO_BIN_EXE_cargo-fusion"), dir);
        command
            .args(["dev", "--", "--http", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = command.spawn().expect("cargo fusion dev starts");
        let stderr = child.stderr.take().expect("its stderr");
        let (sender, lines) = channel();
        thread::spawn(move || {
            // Read to the end, so that neither dev nor its server blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = sender.send(line);
            }
        });
        Self {
            child,
            lines,
            seen: Vec::new(),
            cursor: 0,
        }
    }

    /// The first line from the cursor on that contains `text`; the cursor moves past it.
    /// Fails the test, with everything read, if none comes within `limit`.
    fn wait_for(&mut self, text: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(at) = self.seen[self.cursor..]
                .iter()
                .position(|line| line.contains(text))
            {
                self.cursor += at + 1;
                return self.seen[self.cursor - 1].clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "no line with {text:?} within {limit:?}; stderr:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Reads the lines written so far.
    fn read_available(&mut self) {
        self.seen.extend(self.lines.try_iter());
    }

    /// Whether a line read since `from` contains `text`.
    fn saw_since(&self, from: usize, text: &str) -> bool {
        self.seen[from..].iter().any(|line| line.contains(text))
    }

    /// The endpoint of the next server that starts serving.
    fn next_url(&mut self, limit: Duration) -> String {
        // "fusion: serving NAME VERSION over Streamable HTTP at URL (health: ...)"
        let line = self.wait_for("fusion: serving", limit);
        line.split_whitespace()
            .find(|word| word.starts_with("http://") && word.ends_with("/mcp"))
            .unwrap_or_else(|| panic!("an endpoint in {line:?}"))
            .to_owned()
    }

    /// Its exit status, waiting at most `limit`.
    fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("dev can be waited for") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "dev did not exit within {limit:?}; stderr:\n{}",
                self.seen.join("\n")
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for DevRun {
    fn drop(&mut self) {
        // The group is dev's pid (`process_group(0)`): dev, its cargo, its server.
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `cargo fusion call --url URL greet name=Ada` prints.
fn greet_at(url: &str) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-fusion"));
    command
        .args(["call", "--url", url, "greet", "name=Ada"])
        .current_dir(workspace_root());
    let run = run_within(command, SHORT_TIMEOUT);
    assert_eq!(run.code, Some(0), "{run:?}");
    run.stdout.trim().to_owned()
}

/// Whether something listens at `url`'s address.
fn answers(url: &str) -> bool {
    let address = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default();
    address
        .to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .is_some_and(|address| TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok())
}

#[test]
fn dev_restarts_on_a_change_and_a_broken_build_keeps_the_previous_server() {
    let scratch = scratch();
    let dir = new_crate(scratch.path(), "demo-dev", &["--http"]);
    let main = dir.join("src/main.rs");
    let source = std::fs::read_to_string(&main).expect("src/main.rs");
    assert!(source.contains("Hello, {name}!"), "{source}");

    let started = Instant::now();
    let mut dev = DevRun::start(&dir);
    let first = dev.next_url(BUILD_TIMEOUT);
    eprintln!("dev: first build and start took {:.1?}", started.elapsed());
    assert!(
        dev.saw_since(0, "cargo fusion dev: started demo-dev (pid"),
        "{}",
        dev.seen.join("\n")
    );
    assert_eq!(greet_at(&first), "Hello, Ada!");
    // The build's own reads of the sources (cargo opens Cargo.toml) are no change: nothing
    // is rebuilt until a file is written.
    thread::sleep(Duration::from_secs(2));
    dev.read_available();
    assert!(!dev.saw_since(0, "rebuilding"), "{}", dev.seen.join("\n"));

    // An edit: rebuilt, restarted, the new greeting served.
    let edited = Instant::now();
    std::fs::write(&main, source.replace("Hello, {name}!", "Howdy, {name}!"))
        .expect("src/main.rs is written");
    dev.wait_for("src/main.rs changed: rebuilding…", SHORT_TIMEOUT);
    let from = dev.cursor;
    let second = dev.next_url(REBUILD_TIMEOUT);
    eprintln!("dev: rebuild and restart took {:.1?}", edited.elapsed());
    assert!(
        dev.saw_since(from, "cargo fusion dev: restarted demo-dev (pid"),
        "{}",
        dev.seen.join("\n")
    );
    assert_eq!(greet_at(&second), "Howdy, Ada!");
    if second != first {
        assert!(!answers(&first), "the previous server is stopped");
    }

    // An edit that does not compile: cargo's error shown, the previous server serving.
    let broken = source.replace("Hello, {name}!", "Howdy, {name}!")
        + "\nfn broken() -> u32 {\n    \"not a number\"\n}\n";
    std::fs::write(&main, broken).expect("src/main.rs is written");
    dev.wait_for("src/main.rs changed: rebuilding…", SHORT_TIMEOUT);
    let from = dev.cursor;
    dev.wait_for(
        "cargo fusion dev: build failed; still serving the previous build",
        REBUILD_TIMEOUT,
    );
    assert!(
        dev.saw_since(from, "error[E0308]"),
        "cargo's error is shown: {}",
        dev.seen.join("\n")
    );
    assert_eq!(greet_at(&second), "Howdy, Ada!");

    // The server killed: its exit is reported, and the next change (one that compiles
    // again) starts it.
    let server = dev
        .seen
        .iter()
        .rev()
        .find_map(|line| line.split("restarted demo-dev (pid ").nth(1))
        .and_then(|rest| rest.trim_end_matches(')').parse::<i32>().ok())
        .expect("the server's pid");
    kill(Pid::from_raw(server), Signal::SIGKILL).expect("the server is killed");
    dev.wait_for("the server exited (signal: 9", SHORT_TIMEOUT);
    std::fs::write(&main, source.replace("Hello, {name}!", "Hi, {name}!"))
        .expect("src/main.rs is written");
    dev.wait_for("src/main.rs changed: rebuilding…", SHORT_TIMEOUT);
    let from = dev.cursor;
    let third = dev.next_url(REBUILD_TIMEOUT);
    assert!(
        dev.saw_since(from, "cargo fusion dev: started demo-dev (pid"),
        "{}",
        dev.seen.join("\n")
    );
    assert_eq!(greet_at(&third), "Hi, Ada!");

    // SIGTERM: the server stopped, dev exits 0.
    let pid = i32::try_from(dev.child.id()).expect("a pid");
    kill(Pid::from_raw(pid), Signal::SIGTERM).expect("dev is signalled");
    let status = dev.wait(SHORT_TIMEOUT);
    assert_eq!(status.code(), Some(0), "{}", dev.seen.join("\n"));
    dev.wait_for("cargo fusion dev: stopped", SHORT_TIMEOUT);
    assert!(!answers(&third), "the server is stopped with dev");
}

#[test]
fn the_help_shows_examples() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-fusion"));
    command
        .args(["dev", "--help"])
        .current_dir(workspace_root());
    let run = run_within(command, SHORT_TIMEOUT);
    assert_eq!(run.code, Some(0), "{run:?}");
    for text in [
        "Examples:",
        "cargo fusion dev -- --http 8931",
        "-p fusion-demo",
        "SERVER_ARGS",
        "--example",
    ] {
        assert!(run.stdout.contains(text), "{text}: {}", run.stdout);
    }
}
