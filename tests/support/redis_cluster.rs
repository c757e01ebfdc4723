//! A Redis Cluster of the test's own: three primaries (`redis-server --cluster-enabled yes`,
//! no replicas) on free loopback ports, their files in a temp dir, joined by
//! `redis-cli --cluster create`; every process killed when dropped.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
    thread,
    time::{Duration, Instant},
};

use super::{
    free_port,
    process::run_with_timeout,
    redis_server::{cli, kill_redis, log_of, redis_cli, redis_dir, spawn_redis},
};

/// How long the cluster may take to agree on its slots once created.
const SETTLE: Duration = Duration::from_secs(30);

/// The primaries of the cluster.
const NODES: usize = 3;

pub(crate) struct RedisCluster {
    binary: PathBuf,
    dir: PathBuf,
    nodes: Vec<Node>,
}

struct Node {
    port: u16,
    child: Child,
}

impl RedisCluster {
    /// Starts three nodes, joins them into one cluster (the 16384 slots split in three),
    /// and waits until every node says `cluster_state:ok` (30 s at most). Panics with the
    /// nodes' logs when a step fails.
    pub(crate) fn start(binary: &Path) -> Self {
        let mut ports = Vec::with_capacity(NODES);
        let mut bus_ports = Vec::with_capacity(NODES);
        // Held while all are chosen, so that no two of them are the same port.
        let mut held = Vec::new();
        for _ in 0..NODES * 2 {
            let listener =
                std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a free loopback port");
            held.push(listener);
        }
        for (index, listener) in held.iter().enumerate() {
            let port = listener.local_addr().expect("a bound port").port();
            if index % 2 == 0 {
                ports.push(port);
            } else {
                bus_ports.push(port);
            }
        }
        drop(held);
        let dir = redis_dir("cluster", ports.first().copied().unwrap_or_else(free_port));
        let mut cluster = Self {
            binary: binary.to_path_buf(),
            dir,
            nodes: Vec::with_capacity(NODES),
        };
        for (port, bus_port) in ports.iter().zip(&bus_ports) {
            let conf = cluster.dir.join(format!("node-{port}.conf"));
            let log = cluster.log(*port);
            std::fs::write(
                &conf,
                format!(
                    "port {port}\ncluster-port {bus_port}\nbind 127.0.0.1\nprotected-mode yes\n\
                     cluster-enabled yes\ncluster-config-file {}\ncluster-node-timeout 2000\n\
                     save \"\"\nappendonly no\ndir {}\nlogfile {}\ndaemonize no\n",
                    cluster.dir.join(format!("nodes-{port}.conf")).display(),
                    cluster.dir.display(),
                    log.display()
                ),
            )
            .expect("write a node's redis.conf");
            let child = spawn_redis(binary, &conf, *port, &log);
            cluster.nodes.push(Node { port: *port, child });
        }
        let mut create = Command::new(redis_cli(binary));
        create.arg("--cluster").arg("create");
        for port in &ports {
            create.arg(format!("127.0.0.1:{port}"));
        }
        create.args(["--cluster-replicas", "0", "--cluster-yes"]);
        let created = run_with_timeout(create, SETTLE);
        assert!(
            created.success(),
            "redis-cli --cluster create failed:\n{}\n{}",
            created.report(),
            cluster.logs()
        );
        cluster.wait_until_ok();
        cluster
    }

    /// `redis://127.0.0.1:PORT` of each node.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.ports()
            .into_iter()
            .map(|port| format!("redis://127.0.0.1:{port}"))
            .collect()
    }

    /// The port of each node.
    pub(crate) fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|node| node.port).collect()
    }

    /// `redis-cli -p PORT ARGS..` on one node (not following redirections); `None` when
    /// it failed.
    pub(crate) fn cli(&self, port: u16, args: &[&str]) -> Option<String> {
        cli(&self.binary, port, args)
    }

    /// The keys each node holds (`KEYS *` on each, in the order of [`ports`](Self::ports)).
    pub(crate) fn keys_by_node(&self) -> Vec<Vec<String>> {
        self.nodes
            .iter()
            .map(|node| {
                self.cli(node.port, &["KEYS", "*"])
                    .unwrap_or_else(|| panic!("KEYS on node {}", node.port))
                    .lines()
                    .map(str::to_owned)
                    .filter(|key| !key.is_empty())
                    .collect()
            })
            .collect()
    }

    /// Waits until every node says `cluster_state:ok` and knows the others.
    fn wait_until_ok(&self) {
        let deadline = Instant::now() + SETTLE;
        loop {
            let settled = self.nodes.iter().all(|node| {
                self.cli(node.port, &["CLUSTER", "INFO"])
                    .is_some_and(|info| {
                        info.contains("cluster_state:ok")
                            && info.contains(&format!("cluster_known_nodes:{NODES}"))
                            && info.contains("cluster_slots_assigned:16384")
                    })
            });
            if settled {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not reach cluster_state:ok within {SETTLE:?}:\n{}",
                self.logs()
            );
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self, port: u16) -> PathBuf {
        self.dir.join(format!("node-{port}.log"))
    }

    fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|node| {
                format!(
                    "--- node {} ---\n{}",
                    node.port,
                    log_of(&self.log(node.port))
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            kill_redis(&mut node.child, node.port);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
