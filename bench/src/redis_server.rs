//! A Redis of a benchmark's own: `redis-server` on a free loopback port, no persistence,
//! its files (a replica's copy of its primary) in a temp dir of its own, killed and the dir
//! removed when dropped; and what it counts of the commands it ran.

use std::{
    io::{BufRead as _, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// A Redis of the bench's own, killed on drop.
pub struct Redis {
    child: Child,
    port: u16,
    /// Its working dir: a replica writes the copy it syncs there, not in the bench's cwd.
    dir: PathBuf,
}

impl Redis {
    /// Starts `FUSION_REDIS` (else `/usr/bin/redis-server`) on a free port; `None` when
    /// there is none, or it does not listen within 10 s.
    pub fn start() -> Option<Self> {
        Self::start_with(&[])
    }

    /// A replica of `primary` (`--replicaof`), once it is in sync (10 s at most).
    pub fn replica_of(primary: &Redis) -> Option<Self> {
        let port = primary.port.to_string();
        let replica = Self::start_with(&["--replicaof", "127.0.0.1", &port])?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let out = Command::new("redis-cli")
                .args(["-p", &replica.port.to_string(), "info", "replication"])
                .output()
                .ok()?;
            if String::from_utf8_lossy(&out.stdout).contains("master_link_status:up") {
                return Some(replica);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn start_with(extra: &[&str]) -> Option<Self> {
        let binary = std::env::var_os("FUSION_REDIS")
            .map(PathBuf::from)
            .or_else(|| {
                let system = PathBuf::from("/usr/bin/redis-server");
                system.is_file().then_some(system)
            })?;
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .ok()?
            .port();
        let dir =
            std::env::temp_dir().join(format!("fusion-bench-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let child = Command::new(binary)
            .arg("--dir")
            .arg(&dir)
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let redis = Self { child, port, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(redis)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Commands Redis has run, from `INFO commandstats` (through `redis-cli`).
    pub fn commands(&self) -> Option<u64> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string(), "info", "commandstats"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let calls = text
            .lines()
            .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info"))
            .filter_map(|line| {
                line.split("calls=")
                    .nth(1)?
                    .split(',')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        Some(calls)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Every command clients send to a Redis, as `redis-cli monitor` sees them (commands run by
/// scripts are left out: a script is one round trip).
pub struct Monitor {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Monitor {
    /// Starts watching `redis` (`redis-cli` on `PATH`); `None` without it.
    pub fn start(redis: &Redis) -> Option<Self> {
        let mut child = Command::new("redis-cli")
            .args(["-p", &redis.port.to_string(), "monitor"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdout = child.stdout.take()?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(mut lines) = sink.lock() {
                    lines.push(line);
                }
            }
        });
        // `OK` once it watches.
        let deadline = Instant::now() + Duration::from_secs(5);
        while lines.lock().map(|lines| lines.is_empty()).unwrap_or(true)
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        Some(Self { child, lines })
    }

    /// The client commands seen so far, by name (upper case), and their total.
    pub fn client_commands(&self) -> (std::collections::BTreeMap<String, u64>, u64) {
        let mut by_name = std::collections::BTreeMap::new();
        let mut total = 0;
        if let Ok(lines) = self.lines.lock() {
            // `1700000000.123456 [0 127.0.0.1:5555] "EVALSHA" "..."`; a script's own
            // commands say `[0 lua]`.
            for line in lines.iter() {
                let Some((client, command)) = line.split_once("] \"") else {
                    continue;
                };
                if client.ends_with(" lua") {
                    continue;
                }
                let name = command.split('"').next().unwrap_or_default().to_uppercase();
                *by_name.entry(name).or_insert(0) += 1;
                total += 1;
            }
        }
        (by_name, total)
    }

    /// Forgets what it saw so far.
    pub fn clear(&self) {
        if let Ok(mut lines) = self.lines.lock() {
            lines.clear();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
