//! [`RedisStore`]: idempotency keys that run once across every replica.

use std::{
    collections::HashMap,
    fmt::Write as _,
    sync::{Arc, Mutex},
    time::Duration,
};

use redis::{AsyncCommands as _, Script};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::connection::{Connection, PubSubClient};
use crate::{
    future::BoxFuture,
    idempotency::{Claim, IdempotencyStore},
};

/// The longest a claim is held without renewal: a runner that dies (its process killed,
/// its machine gone) blocks its key for at most this long.
const DEFAULT_LEASE: Duration = Duration::from_secs(10);

/// The lease of a `serialize` lock by default (`lock.rs`): long enough to ride out a Redis
/// failover of a few seconds without stopping the calls that hold locks; a holder that dies
/// blocks its key for at most this long.
const DEFAULT_LOCK_LEASE: Duration = Duration::from_secs(30);

/// The most tasks the store keeps at once by default, in all (`task_limits`).
const DEFAULT_TASKS: usize = 10_000;
/// The most tasks one caller (one OAuth subject) keeps at once by default.
const DEFAULT_TASKS_PER_CALLER: usize = 100;

/// How long one Redis command (or connecting) may take before the store counts Redis as
/// unreachable.
pub(super) const COMMAND_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a waiter sleeps between looks at a running claim, at first and at most.
const POLL_FIRST: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_millis(250);

/// How often a stored result is tried again when Redis fails as the run ends.
const STORE_ATTEMPTS: u32 = 5;

/// Sets the key to the runner's result, if the runner still holds it.
const COMPLETE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0";

/// Deletes the key, if the runner still holds it (an idempotency claim, a task's lease).
pub(super) const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// Extends the runner's lease, if it still holds the key (an idempotency claim, a task's).
pub(super) const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0";

/// An [`IdempotencyStore`] on Redis, shared by every replica that connects to it, with
/// [`MemoryStore`](crate::idempotency::MemoryStore)'s semantics across the fleet:
///
/// - **A key runs once within the window.** The first call claims the key
///   (`SET key run:<token> NX PX lease`); its result is stored for the window
///   (`.idempotency_window(..)`, 10 minutes by default) and returned to every later call
///   with the key, on any replica.
/// - **A caller that arrives while the first call runs waits** for it, on any replica, and
///   gets its result (it looks again every 20 ms at first, every 250 ms at most).
/// - **A runner that dies holds its claim only for a lease**: 10 s by default
///   ([`lease`](Self::lease)), renewed every third of it while the call runs. Once it
///   lapses, a retry runs instead of waiting for good.
/// - **A failure releases the key**, so a retry runs.
/// - **A connection that drops is re-established by itself** (redis's `ConnectionManager`).
/// - **While Redis is unreachable**, a call with a key is answered at once with a transient
///   error ("did not run: deduplication ... is unavailable right now", retry later): it
///   never runs unchecked (it may have run on another replica) and is never left without
///   an answer. Tools without keys are not affected. A result that cannot be stored when
///   its call ends is tried again a few times; if Redis stays away, the claim lapses with
///   its lease and a later retry runs again (logged on `fusion::idempotency`).
/// - A claim dropped while it is being made (the call cancelled at that instant) may leave
///   the key claimed by nobody for one lease.
///
/// Keys are stored as `fusion:idem:<SHA-256 of the key>`, so a key of any length costs the
/// same, and values as `done:<result JSON>`.
///
/// ```no_run
/// use fusion_runtime::{prelude::*, redis::RedisStore};
///
/// /// Place an order once per `order_id`.
/// #[mcp_tool(destructive, idempotency_key = "order_id")]
/// async fn place_order(order_id: String) -> String {
///     format!("placed {order_id}")
/// }
///
/// # async fn build() -> Result<(), fusion_runtime::redis::RedisError> {
/// let store = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let server = Server::builder("orders", "1.0.0")
///     .idempotency_store(store)
///     .tool(place_order)
///     .build();
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    /// One Redis, a Redis Cluster, or the primary the sentinels name (`connection.rs`).
    pub(super) connection: Connection,
    /// For the subscription that carries cancels and answers between replicas (a
    /// connection of its own).
    pub(super) client: PubSubClient,
    pub(super) prefix: String,
    pub(super) lease: Duration,
    /// The most tasks kept at once, in all and per caller (`task_limits`).
    pub(super) task_limits: (usize, usize),
    /// The lease of a `serialize` lock (`lock.rs`, [`lock_lease`](Self::lock_lease)).
    pub(super) lock_lease: Duration,
    /// This replica's own queue per lock key, in front of Redis's lock (`lock.rs`):
    /// arrival order within the replica. Clones share it.
    pub(super) local_locks: crate::lock::MemoryLockStore,
    /// How many replicas must acknowledge a write, and how long to wait for them
    /// (`connection.rs`, [`wait_for_replicas`](Self::wait_for_replicas)).
    pub(super) replica_wait: Option<(usize, Duration)>,
    /// The claims this process holds: the key's owner token, the window its result is kept
    /// for, and the task renewing its lease.
    owned: Arc<Mutex<HashMap<String, Owned>>>,
}

struct Owned {
    token: String,
    window: Duration,
    renewal: tokio::task::AbortHandle,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to Redis at `url` (`redis://host:port/db`, `rediss://` with TLS support in
    /// the redis crate). Fails when Redis cannot be reached now; once connected, a dropped
    /// connection is re-established by itself.
    pub async fn connect(url: &str) -> Result<Self, redis::RedisError> {
        let client = redis::Client::open(url)?;
        let connection = Connection::single(client.clone()).await?;
        Ok(Self::with_connection(
            connection,
            PubSubClient::single(client),
        ))
    }

    /// A store on `connection`, with the defaults (`connect`, `connect_cluster`,
    /// `connect_sentinel`).
    pub(super) fn with_connection(connection: Connection, client: PubSubClient) -> Self {
        Self {
            connection,
            client,
            prefix: "fusion:".to_owned(),
            lease: DEFAULT_LEASE,
            task_limits: (DEFAULT_TASKS, DEFAULT_TASKS_PER_CALLER),
            lock_lease: DEFAULT_LOCK_LEASE,
            local_locks: crate::lock::MemoryLockStore::new(),
            replica_wait: None,
            owned: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// How long a claim (an idempotency key's, a task's) is held without renewal (10 s by
    /// default, at least 100 ms): how long a key stays blocked after its runner died, and
    /// how long a task waits before another replica takes it over.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(100));
        self
    }

    /// The prefix of every Redis key this store writes (`fusion:` by default), to share
    /// one Redis between servers.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The Redis key of an idempotency key.
    fn redis_key(&self, key: &str) -> String {
        let digest = Sha256::digest(key.as_bytes());
        let mut name = format!("{}idem:", self.prefix);
        for byte in digest {
            let _ = write!(name, "{byte:02x}");
        }
        name
    }

    pub(super) fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// Keeps renewing the lease of `redis_key` while `token` holds it.
    fn renew(&self, redis_key: String, token: String) -> tokio::task::AbortHandle {
        let mut connection = self.connection.clone();
        let lease_ms = self.lease_ms();
        let period = self.lease / 3;
        tokio::spawn(async move {
            let script = Script::new(RENEW);
            loop {
                tokio::time::sleep(period).await;
                let renewed: Result<i64, _> = script
                    .key(&redis_key)
                    .arg(&token)
                    .arg(lease_ms)
                    .invoke_async(&mut connection)
                    .await;
                match renewed {
                    Ok(1) => {}
                    // Lost: the lease lapsed (Redis was away longer than it) and the key
                    // may run elsewhere; nothing left to renew.
                    Ok(_) => return,
                    // Redis away for now: the next renewal may still be in time.
                    Err(error) => {
                        tracing::warn!(target: "fusion::idempotency", %error, "cannot renew an idempotency claim's lease");
                    }
                }
            }
        })
        .abort_handle()
    }

    /// Ends this process's claim on `key`: the renewal stops; the owner token is returned.
    fn disown(&self, key: &str) -> Option<Owned> {
        let owned = self.owned.lock().ok()?.remove(key)?;
        owned.renewal.abort();
        Some(owned)
    }

    /// Runs a compare-and-set script for a claim this process held, in the background
    /// (the trait's `complete` and `release` do not wait), trying again while Redis fails.
    fn settle(&self, key: &str, script: &'static str, args: Vec<String>, what: &'static str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime (a guard dropped as the process ends): the lease lapses by itself.
            return;
        };
        let mut connection = self.connection.clone();
        let redis_key = self.redis_key(key);
        runtime.spawn(async move {
            let script = Script::new(script);
            let mut pause = Duration::from_millis(50);
            for attempt in 1..=STORE_ATTEMPTS {
                let mut invocation = script.key(&redis_key);
                for arg in &args {
                    invocation.arg(arg);
                }
                let settled: Result<i64, _> = invocation.invoke_async(&mut connection).await;
                match settled {
                    Ok(_) => return,
                    Err(error) if attempt == STORE_ATTEMPTS => {
                        tracing::error!(target: "fusion::idempotency", %error, what, "cannot reach Redis as a keyed call ends; the claim lapses with its lease");
                    }
                    Err(_) => {
                        tokio::time::sleep(pause).await;
                        pause *= 2;
                    }
                }
            }
        });
    }
}

impl IdempotencyStore for RedisStore {
    fn claim<'a>(&'a self, key: &'a str, window: Duration) -> BoxFuture<'a, Claim> {
        Box::pin(async move {
            let redis_key = self.redis_key(key);
            let token = format!("run:{:032x}", fastrand::u128(..));
            let mut connection = self.connection.clone();
            let mut pause = POLL_FIRST;
            loop {
                // Await: the claim itself, the last step before `Run` (no `.await` after
                // it). A drop while it is in flight may leave the key claimed by nobody,
                // for one lease.
                let claimed: Result<Option<String>, _> = redis::cmd("SET")
                    .arg(&redis_key)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(self.lease_ms())
                    .query_async(&mut connection)
                    .await;
                match claimed {
                    Err(error) => return Claim::Unavailable(error.to_string()),
                    Ok(Some(_)) => {
                        let renewal = self.renew(redis_key, token.clone());
                        if let Ok(mut owned) = self.owned.lock() {
                            owned.insert(
                                key.to_owned(),
                                Owned {
                                    token,
                                    window,
                                    renewal,
                                },
                            );
                        }
                        return Claim::Run;
                    }
                    Ok(None) => {}
                }
                // Await: reads the key's state; holds nothing.
                let state: Result<Option<String>, _> = connection.get(&redis_key).await;
                match state {
                    Err(error) => return Claim::Unavailable(error.to_string()),
                    Ok(Some(stored)) => {
                        if let Some(result) = stored.strip_prefix("done:") {
                            // A result this build cannot read: the pipeline runs the call.
                            return Claim::Replay(
                                serde_json::from_str(result).unwrap_or(Value::Null),
                            );
                        }
                        // Running elsewhere. Await: a pause before looking again; holds
                        // nothing.
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(POLL_MAX);
                    }
                    // Released or lapsed between the two commands: claim it again.
                    Ok(None) => {}
                }
            }
        })
    }

    fn complete(&self, key: &str, result: Value) {
        let Some(owned) = self.disown(key) else {
            return;
        };
        let window_ms = u64::try_from(owned.window.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let stored = format!("done:{result}");
        self.settle(
            key,
            COMPLETE,
            vec![owned.token, stored, window_ms.to_string()],
            "store the result",
        );
    }

    fn release(&self, key: &str) {
        if let Some(owned) = self.disown(key) {
            self.settle(key, RELEASE, vec![owned.token], "release the key");
        }
    }
}
