//! A Redis of the test's own: `redis-server` on a free loopback port, its configuration and
//! files in a temp dir, no persistence unless asked for ([`RedisServer::start_persistent`]).
//! It can be stopped and started again on the same port (a test of an outage), and is
//! killed when dropped. Also the pieces the cluster and Sentinel helpers start their
//! processes with: [`spawn_redis`], [`redis_cli`].

use std::{
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use super::{
    free_port,
    process::{kill_tree, spawn_in_group},
};

/// How long Redis may take to accept connections.
const START: Duration = Duration::from_secs(15);

pub(crate) struct RedisServer {
    binary: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
    /// `appendonly yes` with `appendfsync always`: every write acknowledged is on disk,
    /// and [`resume`](Self::resume) finds it there.
    persistent: bool,
}

/// A temp dir of this test process's own for Redis processes, named `kind` and `port`.
pub(crate) fn redis_dir(kind: &str, port: u16) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fusion-{kind}-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("the Redis temp dir");
    dir
}

/// `redis-cli`: the file `$FUSION_REDIS_CLI` names, else the one beside `redis_server` (the
/// Debian packages put both in `/usr/bin`), else the one on `PATH`
/// ([`redis_cli()`](super::redis_cli) says whether there is one).
pub(crate) fn redis_cli(redis_server: &Path) -> PathBuf {
    if let Some(named) = std::env::var_os("FUSION_REDIS_CLI").filter(|named| !named.is_empty()) {
        return PathBuf::from(named);
    }
    let beside = redis_server.with_file_name("redis-cli");
    if beside.is_file() {
        return beside;
    }
    PathBuf::from("redis-cli")
}

/// Runs `redis-cli -p PORT ARGS..` on loopback, for at most 5 s; its output, or `None`
/// when it failed (nobody listening, an error reply, the deadline).
pub(crate) fn cli(redis_server: &Path, port: u16, args: &[&str]) -> Option<String> {
    let mut command = Command::new(redis_cli(redis_server));
    command
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args);
    let run = super::process::run_with_timeout(command, Duration::from_secs(5));
    (run.success() && !run.stdout.starts_with("ERR") && !run.stdout.starts_with("(error)"))
        .then_some(run.stdout)
}

/// Starts `binary` with the configuration file `conf`, and waits (15 s at most) until it
/// accepts connections on `port`; panics with the end of `log` when it exits or does not.
pub(crate) fn spawn_redis(binary: &Path, conf: &Path, port: u16, log: &Path) -> Child {
    spawn_redis_with(binary, conf, &[], port, log)
}

/// [`spawn_redis`] with arguments after the configuration file (`--sentinel`).
pub(crate) fn spawn_redis_with(
    binary: &Path,
    conf: &Path,
    args: &[&str],
    port: u16,
    log: &Path,
) -> Child {
    let mut command = Command::new(binary);
    command
        .arg(conf)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = spawn_in_group(&mut command);
    let deadline = Instant::now() + START;
    loop {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "{} exited ({status}) before serving:\n{}",
                binary.display(),
                log_of(log)
            );
        }
        if Instant::now() >= deadline {
            kill_tree(&mut child);
            panic!(
                "{} did not listen on {port} within {START:?}:\n{}",
                binary.display(),
                log_of(log)
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Kills `child`'s process group (SIGKILL) and waits (15 s at most) until nobody answers
/// on `port`.
pub(crate) fn kill_redis(child: &mut Child, port: u16) {
    kill_tree(child);
    let _ = child.wait();
    let deadline = Instant::now() + START;
    while TcpStream::connect(("127.0.0.1", port)).is_ok() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
}

/// The last 4 KiB of a log, for a panic's message.
pub(crate) fn log_of(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let start = text.len().saturating_sub(4096);
    let start = (start..text.len())
        .find(|at| text.is_char_boundary(*at))
        .unwrap_or(text.len());
    text[start..].to_owned()
}

impl RedisServer {
    /// Starts `binary` on a free loopback port, without persistence; panics (with its log)
    /// when it does not accept connections within 15 s.
    pub(crate) fn start(binary: &Path) -> Self {
        Self::start_with(binary, false)
    }

    /// [`start`](Self::start) with an append-only file fsynced at every write
    /// (`appendonly yes`, `appendfsync always`): what Redis acknowledged before
    /// [`stop`](Self::stop) (a SIGKILL) is there again after [`resume`](Self::resume).
    pub(crate) fn start_persistent(binary: &Path) -> Self {
        Self::start_with(binary, true)
    }

    fn start_with(binary: &Path, persistent: bool) -> Self {
        let port = free_port();
        let mut server = Self {
            binary: binary.to_path_buf(),
            dir: redis_dir("redis", port),
            port,
            child: None,
            persistent,
        };
        server.resume();
        server
    }

    /// `redis://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The loopback port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Stops Redis (SIGKILL to its process group), as an outage would.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_redis(&mut child, self.port);
        }
    }

    /// Freezes Redis (SIGSTOP): it keeps its data and its connections, and answers
    /// nothing, as a Redis that hangs would; [`thaw`](Self::thaw) resumes it.
    pub(crate) fn freeze(&self) {
        if let Some(child) = &self.child {
            super::process::send_signal(child.id(), "STOP");
        }
    }

    /// Resumes a frozen Redis (SIGCONT): it answers what was sent meanwhile.
    pub(crate) fn thaw(&self) {
        if let Some(child) = &self.child {
            super::process::send_signal(child.id(), "CONT");
        }
    }

    /// Starts Redis again on the same port: empty, or with what it had acknowledged when
    /// started with [`start_persistent`](Self::start_persistent).
    pub(crate) fn resume(&mut self) {
        let conf = self.dir.join("redis.conf");
        let persistence = if self.persistent {
            "appendonly yes\nappendfsync always\n"
        } else {
            "appendonly no\n"
        };
        std::fs::write(
            &conf,
            format!(
                "port {}\nbind 127.0.0.1\nprotected-mode yes\nsave \"\"\n{persistence}dir {}\nlogfile {}\ndaemonize no\n",
                self.port,
                self.dir.display(),
                self.log().display()
            ),
        )
        .expect("write redis.conf");
        self.child = Some(spawn_redis(&self.binary, &conf, self.port, &self.log()));
    }

    fn log(&self) -> PathBuf {
        self.dir.join("redis.log")
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
