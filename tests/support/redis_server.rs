//! A Redis of the test's own: `redis-server` on a free loopback port, its configuration and
//! files in a temp dir, no persistence. It can be stopped and started again on the same
//! port (a test of an outage), and is killed when dropped.

use std::{
    net::TcpStream,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use super::process::{kill_tree, spawn_in_group};

/// How long Redis may take to accept connections.
const START: Duration = Duration::from_secs(15);

pub(crate) struct RedisServer {
    binary: PathBuf,
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl RedisServer {
    /// Starts `binary` on a free loopback port; panics (with its log) when it does not
    /// accept connections within 15 s.
    pub(crate) fn start(binary: &Path) -> Self {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map(|addr| addr.port())
            .expect("a free loopback port");
        let dir = std::env::temp_dir().join(format!("fusion-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("the Redis temp dir");
        let mut server = Self {
            binary: binary.to_path_buf(),
            dir,
            port,
            child: None,
        };
        server.resume();
        server
    }

    /// `redis://127.0.0.1:PORT`.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops Redis (SIGKILL to its process group), as an outage would.
    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_tree(&mut child);
            let _ = child.wait();
        }
        // Nobody answers on the port any more.
        let deadline = Instant::now() + START;
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
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

    /// Starts Redis again on the same port (empty: nothing is persisted).
    pub(crate) fn resume(&mut self) {
        let conf = self.dir.join("redis.conf");
        std::fs::write(
            &conf,
            format!(
                "port {}\nbind 127.0.0.1\nprotected-mode yes\nsave \"\"\nappendonly no\ndir {}\nlogfile {}\ndaemonize no\n",
                self.port,
                self.dir.display(),
                self.dir.join("redis.log").display()
            ),
        )
        .expect("write redis.conf");
        let mut command = Command::new(&self.binary);
        command
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = spawn_in_group(&mut command);
        let deadline = Instant::now() + START;
        loop {
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "redis-server exited ({status}) before serving:\n{}",
                    self.log()
                );
            }
            if Instant::now() >= deadline {
                kill_tree(&mut child);
                panic!(
                    "redis-server did not listen within {START:?}:\n{}",
                    self.log()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.child = Some(child);
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
