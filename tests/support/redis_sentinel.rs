//! Redis under Sentinel, of the test's own: a primary, one replica (`replicaof`), and three
//! sentinels (`redis-server --sentinel`, quorum 2) watching it with short timeouts (down
//! after 1 s), on free loopback ports with their files in a temp dir. The primary can be
//! killed, and a failover waited for; every process is killed when dropped.

use std::{
    path::{Path, PathBuf},
    process::Child,
    thread,
    time::{Duration, Instant},
};

use super::{
    free_port,
    redis_server::{cli, kill_redis, log_of, redis_dir, spawn_redis, spawn_redis_with},
};

/// The master name the sentinels watch.
const MASTER: &str = "fusion";

/// How long the replica may take to sync, and the sentinels to find one another and it.
const SETTLE: Duration = Duration::from_secs(30);

/// The sentinels.
const SENTINELS: usize = 3;

pub(crate) struct RedisSentinel {
    binary: PathBuf,
    dir: PathBuf,
    /// Whether the primary and the replica keep an append-only file (`appendonly yes`,
    /// `appendfsync always`): a restarted process comes back with its data.
    persistent: bool,
    /// The primary and the replica, as started (`None` once killed).
    servers: Vec<Server>,
    sentinels: Vec<Server>,
    /// The primary's port as started.
    first_primary: u16,
}

struct Server {
    port: u16,
    child: Option<Child>,
}

impl RedisSentinel {
    /// Starts the primary, its replica (waiting until it is in sync), then the three
    /// sentinels, and waits until each sentinel knows the other two and the replica (30 s at
    /// most). Panics with the logs when a step fails.
    pub(crate) fn start(binary: &Path) -> Self {
        Self::start_with(binary, 1000, false)
    }

    /// [`start`](Self::start), with the sentinels' `down-after-milliseconds`, and with
    /// persistence when `persistent`: a primary restarted within `down_after_ms` comes
    /// back with its data and stays the primary.
    pub(crate) fn start_with(binary: &Path, down_after_ms: u64, persistent: bool) -> Self {
        let primary = free_port();
        let mut setup = Self {
            binary: binary.to_path_buf(),
            dir: redis_dir("sentinel", primary),
            persistent,
            servers: Vec::new(),
            sentinels: Vec::new(),
            first_primary: primary,
        };
        setup.start_server(primary, None);
        let replica = free_port();
        setup.start_server(replica, Some(primary));
        setup.wait_for("the replica to sync", |setup| {
            setup
                .cli(replica, &["INFO", "replication"])
                .is_some_and(|info| info.contains("master_link_status:up"))
        });
        for _ in 0..SENTINELS {
            let port = free_port();
            let conf = setup.dir.join(format!("sentinel-{port}.conf"));
            let log = setup.log(port);
            // Sentinel rewrites its configuration file: one each, in the temp dir.
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\nprotected-mode no\ndir {}\nlogfile {}\n\
                     sentinel monitor {MASTER} 127.0.0.1 {primary} 2\n\
                     sentinel down-after-milliseconds {MASTER} {down_after_ms}\n\
                     sentinel failover-timeout {MASTER} 3000\n\
                     sentinel parallel-syncs {MASTER} 1\n",
                    setup.dir.display(),
                    log.display()
                ),
            )
            .expect("write a sentinel's conf");
            let child = spawn_redis_with(binary, &conf, &["--sentinel"], port, &log);
            setup.sentinels.push(Server {
                port,
                child: Some(child),
            });
        }
        setup.wait_for(
            "the sentinels to find one another and the replica",
            |setup| {
                setup.sentinels.iter().all(|sentinel| {
                    setup
                        .cli(sentinel.port, &["SENTINEL", "MASTER", MASTER])
                        .is_some_and(|master| {
                            let fields = pairs(&master);
                            fields.get("num-other-sentinels").map(String::as_str)
                                == Some(&(SENTINELS - 1).to_string())
                                && fields.get("num-slaves").map(String::as_str) == Some("1")
                        })
                })
            },
        );
        setup
    }

    /// `redis://127.0.0.1:PORT` of each sentinel.
    pub(crate) fn sentinel_urls(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|sentinel| format!("redis://127.0.0.1:{}", sentinel.port))
            .collect()
    }

    /// The name the sentinels watch the primary under.
    pub(crate) fn master_name(&self) -> &'static str {
        MASTER
    }

    /// The port of the primary as started.
    pub(crate) fn primary_port(&self) -> u16 {
        self.first_primary
    }

    /// The port of the replica as started.
    pub(crate) fn replica_port(&self) -> u16 {
        self.servers
            .iter()
            .map(|server| server.port)
            .find(|port| *port != self.first_primary)
            .expect("a replica")
    }

    /// `redis-cli -p PORT ARGS..` on one of the processes; `None` when it failed.
    pub(crate) fn cli(&self, port: u16, args: &[&str]) -> Option<String> {
        cli(&self.binary, port, args)
    }

    /// Kills the primary as started (SIGKILL) and starts it again at once on its port,
    /// with its configuration (and its data, when persistent): a Redis restarted.
    pub(crate) fn restart_primary(&mut self) {
        self.kill_primary();
        self.start_again(self.first_primary);
    }

    /// Starts the primary as started again, after [`kill_primary`](Self::kill_primary):
    /// once a failover promoted its replica, the sentinels make it a replica of the new
    /// primary.
    pub(crate) fn restart_killed_primary(&mut self) {
        self.start_again(self.first_primary);
    }

    fn start_again(&mut self, port: u16) {
        let conf = self.dir.join(format!("redis-{port}.conf"));
        let log = self.log(port);
        let mut child = spawn_redis(&self.binary, &conf, port, &log);
        match self.servers.iter_mut().find(|server| server.port == port) {
            Some(server) => server.child = Some(child),
            // Not one of ours: nothing to keep it for.
            None => kill_redis(&mut child, port),
        }
    }

    /// Kills the primary as started (SIGKILL), as a crash would.
    pub(crate) fn kill_primary(&mut self) {
        let first = self.first_primary;
        if let Some(server) = self.servers.iter_mut().find(|server| server.port == first)
            && let Some(mut child) = server.child.take()
        {
            kill_redis(&mut child, first);
        }
    }

    /// The port of a primary other than the one started that a sentinel names now, if
    /// any (one look, no waiting).
    pub(crate) fn promoted(&self) -> Option<u16> {
        self.sentinels.iter().find_map(|sentinel| {
            self.cli(
                sentinel.port,
                &["SENTINEL", "get-master-addr-by-name", MASTER],
            )
            .and_then(|reply| reply.lines().nth(1)?.trim().parse::<u16>().ok())
            .filter(|port| *port != self.first_primary)
        })
    }

    /// Waits until a sentinel names a primary other than the one started, and returns its
    /// port; panics with the logs after `timeout`.
    pub(crate) fn wait_for_failover(&self, timeout: Duration) -> u16 {
        let deadline = Instant::now() + timeout;
        loop {
            for sentinel in &self.sentinels {
                if let Some(port) = self
                    .cli(
                        sentinel.port,
                        &["SENTINEL", "get-master-addr-by-name", MASTER],
                    )
                    .and_then(|reply| reply.lines().nth(1)?.trim().parse::<u16>().ok())
                    && port != self.first_primary
                {
                    return port;
                }
            }
            assert!(
                Instant::now() < deadline,
                "no failover within {timeout:?}:\n{}",
                self.logs()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn start_server(&mut self, port: u16, replica_of: Option<u16>) {
        let conf = self.dir.join(format!("redis-{port}.conf"));
        let log = self.log(port);
        let replica = replica_of
            .map(|primary| format!("replicaof 127.0.0.1 {primary}\n"))
            .unwrap_or_default();
        let persistence = if self.persistent {
            format!(
                "appendonly yes\nappendfsync always\nappendfilename appendonly-{port}.aof\nappenddirname aof-{port}\n"
            )
        } else {
            "appendonly no\n".to_owned()
        };
        std::fs::write(
            &conf,
            format!(
                "port {port}\nbind 127.0.0.1\nprotected-mode yes\nsave \"\"\n{persistence}\
                 dbfilename dump-{port}.rdb\ndir {}\nlogfile {}\ndaemonize no\n{replica}",
                self.dir.display(),
                log.display()
            ),
        )
        .expect("write redis.conf");
        let child = spawn_redis(&self.binary, &conf, port, &log);
        self.servers.push(Server {
            port,
            child: Some(child),
        });
    }

    fn wait_for(&self, what: &str, done: impl Fn(&Self) -> bool) {
        let deadline = Instant::now() + SETTLE;
        while !done(self) {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what} ({SETTLE:?}):\n{}",
                self.logs()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self, port: u16) -> PathBuf {
        self.dir.join(format!("{port}.log"))
    }

    fn logs(&self) -> String {
        self.servers
            .iter()
            .chain(&self.sentinels)
            .map(|server| {
                format!(
                    "--- {} ---\n{}",
                    server.port,
                    log_of(&self.log(server.port))
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The field/value lines `redis-cli` prints for a map reply, as a map.
fn pairs(reply: &str) -> std::collections::HashMap<String, String> {
    let lines: Vec<&str> = reply.lines().map(str::trim).collect();
    lines
        .chunks(2)
        .filter_map(|pair| match pair {
            [field, value] => Some(((*field).to_owned(), (*value).to_owned())),
            _ => None,
        })
        .collect()
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        for server in self.sentinels.iter_mut().chain(self.servers.iter_mut()) {
            if let Some(mut child) = server.child.take() {
                kill_redis(&mut child, server.port);
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
