//! The connection a [`RedisStore`] sends its commands on, for each way Redis is run: one
//! Redis ([`connect`](RedisStore::connect)), a Redis Cluster
//! ([`connect_cluster`](RedisStore::connect_cluster)), or a primary watched by Sentinel
//! ([`connect_sentinel`](RedisStore::connect_sentinel)); the connection the task signals
//! are subscribed on; and the `WAIT` for replicas
//! ([`wait_for_replicas`](RedisStore::wait_for_replicas)).
//!
//! Whatever the topology, a command is sent at most once: a connection that fails answers
//! that command with an error (the store then says Redis is unavailable) and the next
//! command goes to a fresh connection, to the right node. A command never waits much
//! longer than [`COMMAND_TIMEOUT`] (1 s).

use std::{
    sync::{
        Arc, Mutex, Weak,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use futures_util::{
    FutureExt as _,
    future::{BoxFuture, Shared},
};
use redis::{
    AsyncConnectionConfig, Client, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult,
    ServerErrorKind, Value,
    aio::{ConnectionLike, ConnectionManager, MultiplexedConnection, PubSub},
    cluster::ClusterClientBuilder,
    cluster_async::ClusterConnection,
    sentinel::{SentinelClient, SentinelServerType},
};
use tokio::time::Instant;

/// How long one Redis command (or connecting) may take before the store counts Redis as
/// unreachable.
pub(super) const COMMAND_TIMEOUT: Duration = Duration::from_secs(1);

/// The longest one lookup of the primary through the sentinels may take (asking them,
/// then connecting to the primary it names): it runs on a task of its own, so a command
/// that gives up on it after [`COMMAND_TIMEOUT`] does not stop it, and the next one
/// finds the new primary. Beyond it, the next command starts another lookup.
const RESOLVE_LIMIT: Duration = Duration::from_secs(5);

/// How long a store connecting under Sentinel waits for the sentinels to name a primary:
/// a failover under way at that moment may run past one `failover-timeout` (its election
/// retried), and a replica restarted then should wait it out, not exit 78. (Seen in
/// `tests/fleet/chaos.rs`: 5 s was not always enough.)
const START_LIMIT: Duration = Duration::from_secs(20);

/// How long a lookup that failed (no sentinel names a live primary yet: a failover in
/// progress) is the answer for: commands meanwhile fail at once instead of asking the
/// sentinels again one after the other.
const RESOLVE_PAUSE: Duration = Duration::from_millis(100);

/// The longest `WAIT` asks for: a command is given up on after [`COMMAND_TIMEOUT`].
pub(super) const WAIT_MAX: Duration = Duration::from_millis(900);

/// What a [`RedisStore`] sends its commands on: cheap to clone (clones share the
/// connections), and a [`ConnectionLike`] for redis's commands, scripts and pipelines.
#[derive(Clone)]
pub(crate) struct Connection(Topology);

#[derive(Clone)]
enum Topology {
    /// One Redis (or a primary at a fixed address): redis's `ConnectionManager`, which
    /// reconnects by itself.
    Single(ConnectionManager),
    /// A Redis Cluster: redis's cluster connection routes each command to the node of its
    /// key's slot, follows the cluster's changes and reconnects to nodes by itself.
    Cluster(ClusterConnection),
    /// The primary the sentinels name, found again after a failover.
    Sentinel(Arc<Primary>),
}

impl Connection {
    /// A connection to the Redis `client` names, reconnecting by itself.
    pub(super) async fn single(client: Client) -> RedisResult<Self> {
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let manager = ConnectionManager::new_with_config(client, config).await?;
        Ok(Self(Topology::Single(manager)))
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match &mut self.0 {
            Topology::Single(manager) => manager.req_packed_command(cmd),
            Topology::Cluster(cluster) => cluster.req_packed_command(cmd),
            Topology::Sentinel(primary) => {
                let primary = Arc::clone(primary);
                Box::pin(async move {
                    primary
                        .send(|mut connection| async move {
                            connection.req_packed_command(cmd).await
                        })
                        .await
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.0 {
            Topology::Single(manager) => manager.req_packed_commands(pipeline, offset, count),
            Topology::Cluster(cluster) => cluster.req_packed_commands(pipeline, offset, count),
            Topology::Sentinel(primary) => {
                let primary = Arc::clone(primary);
                Box::pin(async move {
                    primary
                        .send(|mut connection| async move {
                            connection
                                .req_packed_commands(pipeline, offset, count)
                                .await
                        })
                        .await
                })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Topology::Single(manager) => manager.get_db(),
            Topology::Cluster(cluster) => cluster.get_db(),
            // `connect_sentinel` reaches the primary's database 0.
            Topology::Sentinel(_) => 0,
        }
    }
}

/// Where the subscription of the task signals connects (`tasks.rs`): a connection of its
/// own, made again whenever the subscription ends. Cheap to clone.
#[derive(Clone)]
pub(crate) enum PubSubClient {
    /// One Redis.
    Single(Client),
    /// Any node of a Redis Cluster: a classic `PUBLISH` reaches the subscribers of every
    /// node, so one node is enough. The one that last worked first, then the others.
    Nodes {
        nodes: Arc<[Client]>,
        next: Arc<AtomicUsize>,
    },
    /// The primary the sentinels name now.
    Sentinel(Arc<Primary>),
}

impl PubSubClient {
    /// Subscriptions on the Redis `client` names.
    pub(super) fn single(client: Client) -> Self {
        Self::Single(client)
    }

    /// A connection for `SUBSCRIBE`, within [`COMMAND_TIMEOUT`] for each node tried.
    pub(crate) async fn get_async_pubsub(&self) -> RedisResult<PubSub> {
        match self {
            Self::Single(client) => bounded(COMMAND_TIMEOUT, client.get_async_pubsub()).await,
            Self::Nodes { nodes, next } => {
                let first = next.load(Ordering::Relaxed);
                let mut last_error = None;
                for offset in 0..nodes.len() {
                    let index = (first + offset) % nodes.len();
                    match bounded(COMMAND_TIMEOUT, nodes[index].get_async_pubsub()).await {
                        Ok(pubsub) => {
                            next.store(index, Ordering::Relaxed);
                            return Ok(pubsub);
                        }
                        Err(error) => last_error = Some(error),
                    }
                }
                Err(last_error.unwrap_or_else(|| {
                    RedisError::from((ErrorKind::InvalidClientConfig, "no cluster node given"))
                }))
            }
            Self::Sentinel(primary) => {
                let current = bounded(COMMAND_TIMEOUT, primary.current()).await?;
                let subscribed = bounded(COMMAND_TIMEOUT, current.client.get_async_pubsub()).await;
                if subscribed.is_err() {
                    // The primary is away, and no command may come to find out: look
                    // again for the next subscription.
                    primary.forget(current.generation);
                }
                subscribed
            }
        }
    }
}

/// `future`, or a timeout error after `limit`.
async fn bounded<T>(
    limit: Duration,
    future: impl Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "Redis did not answer in time",
    ))
}

/// The primary of a master name watched by Sentinel: a connection to the node the
/// sentinels name, dropped when it fails so that the next command asks them again.
///
/// redis 1.8 has no reconnecting connection for Sentinel (its `SentinelClient` only
/// answers where the primary is now), hence this one.
pub(crate) struct Primary {
    /// Asked only by the lookup in progress (one at a time).
    sentinel: tokio::sync::Mutex<SentinelClient>,
    config: AsyncConnectionConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Counts the connections made, so that a command that failed drops the connection
    /// only if it is still the one it used.
    made: u64,
    current: Option<Current>,
    /// The lookup in progress, shared by every command waiting for it.
    looking: Option<Lookup>,
    /// The last lookup's failure, the answer until then.
    failed: Option<(Instant, RedisError)>,
}

type Lookup = Shared<BoxFuture<'static, RedisResult<Current>>>;

#[derive(Clone)]
struct Current {
    generation: u64,
    /// The primary's address, for the subscription.
    client: Client,
    connection: MultiplexedConnection,
}

impl Primary {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a few fields set in one go: one a panic interrupted is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `send` on the primary's connection, within [`COMMAND_TIMEOUT`] in all
    /// (looking the primary up included). A failure that says the connection or the node
    /// is no good (dropped, timed out, `READONLY`: a primary demoted) drops the
    /// connection; the command is not sent again.
    async fn send<'a, T, F, Fut>(self: Arc<Self>, send: F) -> RedisResult<T>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = RedisResult<T>> + Send + 'a,
    {
        let mut used = None;
        let outcome = tokio::time::timeout(COMMAND_TIMEOUT, async {
            let current = self.current().await?;
            used = Some(current.generation);
            send(current.connection).await
        })
        .await;
        let result = outcome.unwrap_or_else(|_| Err(timed_out()));
        if let (Err(error), Some(generation)) = (&result, used)
            && unusable(error)
        {
            self.forget(generation);
        }
        result
    }

    /// The connection to the primary, looked up through the sentinels when there is none.
    async fn current(self: &Arc<Self>) -> RedisResult<Current> {
        let lookup = {
            let mut state = self.state();
            if let Some(current) = &state.current {
                return Ok(current.clone());
            }
            match &state.looking {
                Some(lookup) => lookup.clone(),
                None => {
                    if let Some((at, error)) = &state.failed
                        && at.elapsed() < RESOLVE_PAUSE
                    {
                        return Err(error.clone());
                    }
                    let lookup = Self::look_up(Arc::downgrade(self));
                    state.looking = Some(lookup.clone());
                    lookup
                }
            }
        };
        lookup.await
    }

    /// Asks the sentinels where the primary is and connects to it, on a task of its own
    /// (bounded by [`RESOLVE_LIMIT`]), so that it ends even when every command that
    /// waited for it gave up.
    fn look_up(primary: Weak<Self>) -> Lookup {
        let task = tokio::spawn(async move {
            let Some(primary) = primary.upgrade() else {
                return Err(RedisError::from((
                    ErrorKind::Client,
                    "the Redis store was dropped",
                )));
            };
            let found = bounded(RESOLVE_LIMIT, async {
                let client = primary.sentinel.lock().await.async_get_client().await?;
                let connection = client
                    .get_multiplexed_async_connection_with_config(&primary.config)
                    .await?;
                Ok((client, connection))
            })
            .await;
            let mut state = primary.state();
            state.looking = None;
            match found {
                Ok((client, connection)) => {
                    state.made += 1;
                    let current = Current {
                        generation: state.made,
                        client,
                        connection,
                    };
                    state.current = Some(current.clone());
                    state.failed = None;
                    Ok(current)
                }
                Err(error) => {
                    tracing::debug!(target: "fusion::redis", %error, "no primary from the sentinels yet");
                    state.failed = Some((Instant::now(), error.clone()));
                    Err(error)
                }
            }
        });
        async move {
            task.await.unwrap_or_else(|_| {
                Err(RedisError::from((
                    ErrorKind::Client,
                    "the lookup of the Redis primary stopped",
                )))
            })
        }
        .boxed()
        .shared()
    }

    /// Drops connection `generation` if it is still the current one: the next command
    /// looks the primary up again.
    fn forget(&self, generation: u64) {
        let mut state = self.state();
        if state
            .current
            .as_ref()
            .is_some_and(|current| current.generation == generation)
        {
            state.current = None;
        }
    }
}

/// Whether `error` says the connection or its node is no good for commands any more.
fn unusable(error: &RedisError) -> bool {
    error.is_unrecoverable_error()
        || error.is_io_error()
        || error.is_timeout()
        || error.is_connection_dropped()
        || matches!(
            error.kind(),
            ErrorKind::Server(ServerErrorKind::ReadOnly | ServerErrorKind::MasterDown)
        )
}

/// A connection to a Redis Cluster through `urls` (`RedisStore::connect_cluster`), and
/// where its subscriptions go.
pub(super) async fn cluster(urls: &[&str]) -> RedisResult<(Connection, PubSubClient)> {
    let nodes = urls
        .iter()
        .map(|url| Client::open(*url))
        .collect::<RedisResult<Vec<_>>>()?;
    if nodes.is_empty() {
        return Err(RedisError::from((
            ErrorKind::InvalidClientConfig,
            "connect_cluster needs the address of at least one node",
        )));
    }
    let cluster = ClusterClientBuilder::new(urls.iter().copied())
        .connection_timeout(COMMAND_TIMEOUT)
        .response_timeout(COMMAND_TIMEOUT)
        // Sent once: a retry after a connection error could run a write twice (a
        // claim taken twice is a claim that seems held by someone else).
        .retries(0)
        .build()?;
    let connection = cluster.get_async_connection().await?;
    Ok((
        Connection(Topology::Cluster(connection)),
        PubSubClient::Nodes {
            nodes: nodes.into(),
            next: Arc::new(AtomicUsize::new(0)),
        },
    ))
}

/// A connection to the primary the sentinels at `sentinel_urls` name for `master_name`
/// (`RedisStore::connect_sentinel`), and where its subscriptions go.
pub(super) async fn sentinel(
    sentinel_urls: &[&str],
    master_name: &str,
) -> RedisResult<(Connection, PubSubClient)> {
    let sentinel = SentinelClient::build(
        sentinel_urls.to_vec(),
        master_name.to_owned(),
        None,
        SentinelServerType::Master,
    )?;
    let primary = Arc::new(Primary {
        sentinel: tokio::sync::Mutex::new(sentinel),
        config: AsyncConnectionConfig::new()
            .set_connection_timeout(Some(COMMAND_TIMEOUT))
            .set_response_timeout(Some(COMMAND_TIMEOUT)),
        state: Mutex::new(State::default()),
    });
    // A failover under way leaves the sentinels naming no valid primary for a moment (the
    // promoted one not yet confirmed, the old one back as a replica): a store connecting
    // then waits it out, within START_LIMIT, instead of failing its server's start.
    let deadline = tokio::time::Instant::now() + START_LIMIT;
    loop {
        match bounded(RESOLVE_LIMIT, primary.current()).await {
            Ok(_) => break,
            Err(error)
                if error.kind() == ErrorKind::MasterNameNotFoundBySentinel
                    && tokio::time::Instant::now() + 2 * RESOLVE_PAUSE < deadline =>
            {
                // Past the pause during which the failed lookup is the answer.
                tokio::time::sleep(2 * RESOLVE_PAUSE).await;
            }
            Err(error) => return Err(error),
        }
    }
    Ok((
        Connection(Topology::Sentinel(Arc::clone(&primary))),
        PubSubClient::Sentinel(primary),
    ))
}

/// Waits until the replicas `replica_wait` asks for (`RedisStore::wait_for_replicas`)
/// acknowledged the writes sent so far on `connection` (`WAIT`); an error when fewer did
/// within its timeout. Nothing to wait for when it was not asked for.
pub(super) async fn wait_replicated(
    replica_wait: Option<(usize, Duration)>,
    connection: &mut Connection,
) -> Result<(), RedisError> {
    let Some((replicas, timeout)) = replica_wait else {
        return Ok(());
    };
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let acknowledged: i64 = redis::cmd("WAIT")
        .arg(replicas)
        .arg(timeout_ms)
        .query_async(connection)
        .await?;
    if usize::try_from(acknowledged).is_ok_and(|acknowledged| acknowledged >= replicas) {
        Ok(())
    } else {
        // Redis's own code for too few replicas (`min-replicas-to-write`).
        Err(redis::make_extension_error(
            "NOREPLICAS".to_owned(),
            Some(format!(
                "{acknowledged} of {replicas} replicas acknowledged the write within {timeout:?}"
            )),
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::{
        io::Write as _,
        net::TcpStream,
        path::PathBuf,
        process::{Child, Command, Stdio},
    };

    use super::*;

    #[test]
    fn failures_of_the_connection_or_the_node_drop_it_and_answers_do_not() {
        let reset = RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(unusable(&reset));
        assert!(unusable(&timed_out()));
        let demoted = RedisError::from((
            ErrorKind::Server(ServerErrorKind::ReadOnly),
            "You can't write against a read only replica.",
        ));
        assert!(unusable(&demoted));
        let answer = RedisError::from((
            ErrorKind::Server(ServerErrorKind::ResponseError),
            "WRONGTYPE",
        ));
        assert!(!unusable(&answer));
        let script = RedisError::from((ErrorKind::Server(ServerErrorKind::NoScript), "NOSCRIPT"));
        assert!(
            !unusable(&script),
            "a script to load is no reason to reconnect"
        );
    }

    /// A `redis-server` of the test's own on a free loopback port, its files (the RDB a
    /// replica's sync writes) in a temp dir; killed, and the dir removed, when dropped.
    struct Server {
        child: Child,
        port: u16,
        dir: PathBuf,
    }

    impl Server {
        fn start(binary: &PathBuf, replica_of: Option<u16>) -> Self {
            let port = std::net::TcpListener::bind(("127.0.0.1", 0))
                .and_then(|listener| listener.local_addr())
                .map(|addr| addr.port())
                .expect("a free loopback port");
            let dir = std::env::temp_dir()
                .join(format!("fusion-unit-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("the Redis temp dir");
            let mut command = Command::new(binary);
            command.arg("--dir").arg(&dir).args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ]);
            if let Some(primary) = replica_of {
                command.args(["--replicaof", "127.0.0.1", &primary.to_string()]);
            }
            let child = command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server starts");
            let server = Self { child, port, dir };
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(std::time::Instant::now() < deadline, "redis-server listens");
                std::thread::sleep(Duration::from_millis(20));
            }
            server
        }

        fn url(&self) -> String {
            format!("redis://127.0.0.1:{}", self.port)
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// `redis-server` as the integration tests find it (`tests/support/toolchains.rs`);
    /// `None` (a loud skip) without it, a failure under `CI=true`.
    fn redis_server() -> Option<PathBuf> {
        let found = std::env::var_os("FUSION_REDIS")
            .filter(|path| !path.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("PATH").and_then(|path| {
                    std::env::split_paths(&path)
                        .map(|dir| dir.join("redis-server"))
                        .find(|candidate| candidate.is_file())
                })
            })
            .or_else(|| {
                let fallback = PathBuf::from("/usr/bin/redis-server");
                fallback.is_file().then_some(fallback)
            });
        if found.is_none() {
            let hint = "no redis-server: run `scripts/redis-env`";
            assert!(
                std::env::var_os("CI").is_none_or(|ci| ci != "true"),
                "{hint} (CI=true, so this test fails instead of skipping)"
            );
            let _ = writeln!(std::io::stderr().lock(), "SKIPPED: {hint}");
        }
        found
    }

    #[tokio::test]
    async fn wait_counts_the_replicas_that_acknowledged_the_writes() {
        let Some(binary) = redis_server() else {
            return;
        };
        let primary = Server::start(&binary, None);
        let replica = Server::start(&binary, Some(primary.port));
        let probe = Client::open(replica.url())
            .expect("the replica's address")
            .get_multiplexed_async_connection()
            .await
            .expect("the replica");
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut probe.clone())
                .await
                .expect("INFO");
            if info.contains("master_link_status:up") {
                break;
            }
            assert!(Instant::now() < deadline, "the replica never synced");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        let client = Client::open(primary.url()).expect("a URL");
        let mut connection = Connection::single(client).await.expect("Redis");
        // Not asked for: nothing to wait for.
        wait_replicated(None, &mut connection)
            .await
            .expect("no WAIT");
        let _: () = redis::cmd("SET")
            .arg("k")
            .arg("v")
            .query_async(&mut connection)
            .await
            .expect("SET");
        wait_replicated(Some((1, WAIT_MAX)), &mut connection)
            .await
            .expect("the one replica acknowledged");
        let started = Instant::now();
        let error = wait_replicated(Some((2, Duration::from_millis(100))), &mut connection)
            .await
            .expect_err("there is one replica, not two");
        assert!(started.elapsed() >= Duration::from_millis(90), "it waited");
        assert_eq!(error.code(), Some("NOREPLICAS"), "{error}");
        assert!(error.to_string().contains("1 of 2"), "{error}");
    }
}
