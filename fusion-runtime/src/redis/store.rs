//! [`RedisStore`]: idempotency keys that run once across every replica.

use std::{
    collections::HashMap,
    fmt::Write as _,
    sync::{Arc, Mutex},
    time::Duration,
};

use redis::Script;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::connection::{self, Connection, PubSubClient};
use crate::{
    future::BoxFuture,
    idempotency::{Claim, ClaimRequest, IdempotencyStore},
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

/// How long a waiter sleeps between looks at a running claim, at first and at most.
const POLL_FIRST: Duration = Duration::from_millis(20);
const POLL_MAX: Duration = Duration::from_millis(250);

/// How often a stored result is tried again when Redis fails as the run ends.
const STORE_ATTEMPTS: u32 = 5;

/// Claims an idempotency key. KEYS: the key's record, its lease. ARGV: the claim's token,
/// the lease and the window in milliseconds, `1` when a run that stopped may be taken
/// over (the tool is safe to repeat), the fingerprint of the call's arguments.
///
/// The record (`run:<fence>:<fingerprint>:<token>` while a run holds it, `done:<result>`
/// once it ended) is kept for the window; the lease only while the runner renews it. A record
/// without a lease is a run that stopped part-way: `stopped`, never a free key, unless the
/// tool may repeat: then it is taken over under a newer fence. A fence is Redis's clock in
/// microseconds, or one more than the last fence of the key if that is larger: it grows
/// with each claim of the key, across its record's expiry too. A key held or stopped under
/// another fingerprint is a `conflict`: another request under a used key.
const CLAIM: &str = r"
local record = redis.call('GET', KEYS[1])
local now = redis.call('TIME')
local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
local function take(fence)
  local held = 'run:' .. string.format('%d', fence) .. ':' .. ARGV[5] .. ':' .. ARGV[1]
  redis.call('SET', KEYS[1], held, 'PX', ARGV[3])
  redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
  return {'run', string.format('%d', fence)}
end
if not record then return take(clock) end
if string.sub(record, 1, 5) == 'done:' then return {'done', string.sub(record, 6)} end
local fence, held = string.match(record, '^run:(%d+):([^:]*):')
fence = tonumber(fence) or 0
if ARGV[5] ~= '' and held and held ~= '' and held ~= ARGV[5] then return {'conflict'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'running'} end
if ARGV[4] == '1' then return take(math.max(clock, fence + 1)) end
return {'stopped'}";

/// Keeps a claim alive. KEYS: the record, the lease. ARGV: the held record
/// (`run:<fence>:<fingerprint>:<token>`), the token, the lease and the window in milliseconds. While
/// the record is still the runner's (no newer claim took the key), its lease is set
/// again (also after it lapsed: a runner that was only paused) and the record kept for a
/// window from now, however long the run.
const RENEW_CLAIM: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 1
end
return 0";

/// Stores the runner's result, if its claim is still the newest of the key (its lease
/// may have lapsed: a runner that was paused while nobody took the key over still
/// finishes). KEYS: the record, the lease. ARGV: the held record, the stored value, the
/// window.
const COMPLETE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  redis.call('DEL', KEYS[2])
  return 1
end
return 0";

/// Frees the key for a new run, if the runner's claim is still the newest. KEYS: the
/// record, the lease. ARGV: the held record.
const RELEASE_CLAIM: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0";

/// Ends the claim without a result: the lease goes, the record stays (a stopped run)
/// for the window. KEYS: the record, the lease. ARGV: the held record, the window.
const ABANDON: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0";

/// Deletes the key, if the runner still holds it (a lock, a task's lease).
pub(super) const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

/// Extends the holder's lease, if it still holds the key (a lock).
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
/// - **A runner that dies is found out after a lease**: 10 s by default
///   ([`lease`](Self::lease)), renewed every third of it while the call runs. Its key is
///   then *stopped*, not free: the runner may have done its work before it died. A later
///   call with the key gets an unknown outcome (`replica_stopped`) for the window, unless
///   the tool is `read_only` or `idempotent`: then it takes the key over and runs again.
/// - **Fencing.** Every claim of a key gets a fencing token larger than the key's last
///   ([`Call::fencing_token`](crate::Call::fencing_token)), and the runner's own final
///   write (its result, a release) is made only while its claim is still the newest. A
///   runner that was paused past its lease (a stopped process, a frozen VM) and wakes up
///   after another replica took the key over writes nothing; one that wakes up while
///   nobody took the key over stores its result, and later calls get it.
/// - **A failure releases the key**, so a retry runs; an unknown outcome (a destructive
///   call that timed out) is kept as the key's answer.
/// - **A connection that drops is re-established by itself** (redis's `ConnectionManager`,
///   the cluster connection, or a new look-up at the Sentinels).
/// - **While Redis is unreachable**, a call with a key is answered at once with a transient
///   error ("did not run: deduplication ... is unavailable right now", retry later): it
///   never runs unchecked (it may have run on another replica) and is never left without
///   an answer. Tools without keys are not affected. A result that cannot be stored when
///   its call ends is tried again a few times; if Redis stays away, the claim's lease
///   lapses and the key is stopped (logged on `fusion::idempotency`).
/// - A claim dropped while it is being made (the call cancelled at that instant) is
///   released in the background by its token.
///
/// Keys are stored as `fusion:idem:{<SHA-256 of the key>}` (the record) and
/// `fusion:idem:{<SHA-256 of the key>}:lease`, in one hash slot of a Redis Cluster, so a
/// key of any length costs the same; records read `run:<fence>:<token>` while a run holds
/// the key and `done:<result JSON>` once it ended.
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
    /// The claims this process holds, by key and fencing token: the record that names the
    /// claim, the window its end is kept for, and the task renewing its lease.
    owned: Arc<Mutex<HashMap<(String, u64), Owned>>>,
}

struct Owned {
    /// The key's record while this claim holds it: `run:<fence>:<fingerprint>:<token>`.
    held: String,
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

    /// The Redis keys of an idempotency key: its record and its lease, under one hash
    /// tag (one slot of a Redis Cluster).
    fn redis_keys(&self, key: &str) -> [String; 2] {
        let digest = Sha256::digest(key.as_bytes());
        let mut record = format!("{}idem:{{", self.prefix);
        for byte in digest {
            let _ = write!(record, "{byte:02x}");
        }
        record.push('}');
        let lease = format!("{record}:lease");
        [record, lease]
    }

    pub(super) fn lease_ms(&self) -> u64 {
        u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX)
    }

    /// Keeps renewing the lease of `key`'s claim while the claim (`held`) is the newest.
    fn renew(
        &self,
        keys: [String; 2],
        held: String,
        token: String,
        window: Duration,
    ) -> tokio::task::AbortHandle {
        let mut connection = self.connection.clone();
        let lease_ms = self.lease_ms();
        let window_ms = millis(window);
        let period = self.lease / 3;
        tokio::spawn(async move {
            let script = Script::new(RENEW_CLAIM);
            loop {
                tokio::time::sleep(period).await;
                let renewed: Result<i64, _> = script
                    .key(&keys[0])
                    .key(&keys[1])
                    .arg(&held)
                    .arg(&token)
                    .arg(lease_ms)
                    .arg(window_ms)
                    .invoke_async(&mut connection)
                    .await;
                match renewed {
                    Ok(1) => {}
                    // Lost: a newer claim took the key over (this runner was paused or
                    // cut off longer than its lease); nothing left to renew.
                    Ok(_) => {
                        tracing::warn!(target: "fusion::idempotency", record = %keys[0], claim = %held, "an idempotency claim was taken over by a newer one (this runner was paused or cut off past its lease); its result will not be kept");
                        return;
                    }
                    // Redis away for now: the next renewal may still be in time.
                    Err(error) => {
                        tracing::warn!(target: "fusion::idempotency", %error, "cannot renew an idempotency claim's lease");
                    }
                }
            }
        })
        .abort_handle()
    }

    /// Ends this process's claim on `key` under `fence`: the renewal stops.
    fn disown(&self, key: &str, fence: u64) -> Option<Owned> {
        let owned = self.owned.lock().ok()?.remove(&(key.to_owned(), fence))?;
        owned.renewal.abort();
        Some(owned)
    }

    /// Runs a compare-and-set script on `key`'s record and lease, in the background (the
    /// trait's `complete`, `release` and `abandon` do not wait), trying again while
    /// Redis fails.
    fn settle(&self, key: &str, script: &'static str, args: Vec<String>, what: &'static str) {
        let replica_wait = self.replica_wait;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime (a guard dropped as the process ends): the lease lapses by itself.
            return;
        };
        let mut connection = self.connection.clone();
        let keys = self.redis_keys(key);
        runtime.spawn(async move {
            let script = Script::new(script);
            let mut pause = Duration::from_millis(50);
            for attempt in 1..=STORE_ATTEMPTS {
                let mut invocation = script.key(&keys[0]);
                invocation.key(&keys[1]);
                for arg in &args {
                    invocation.arg(arg);
                }
                let settled: Result<i64, _> = invocation.invoke_async(&mut connection).await;
                match settled {
                    Ok(1) => {
                        // A result (or a release) a failover could lose: wait for the
                        // replicas asked for; it is written either way.
                        if let Err(error) =
                            connection::wait_replicated(replica_wait, &mut connection).await
                        {
                            tracing::warn!(target: "fusion::idempotency", %error, what, "the replicas did not acknowledge a keyed call's end in time");
                        }
                        return;
                    }
                    // Not (or no longer) this claim's key: a newer claim took it over, or
                    // a claim being made never got it.
                    Ok(_) => {
                        tracing::debug!(target: "fusion::idempotency", what, "the key is not held by this claim: nothing written");
                        return;
                    }
                    Err(error) if attempt == STORE_ATTEMPTS => {
                        tracing::error!(target: "fusion::idempotency", %error, what, "cannot reach Redis as a keyed call ends; its lease lapses and the key is stopped");
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

/// Milliseconds for Redis: at least 1 (`PX 0` is an error).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// Frees a key claimed by `token` whose claim future was dropped before it returned (the
/// call was cancelled as the claim was made): its handler never started. KEYS: the
/// record, the lease. ARGV: the token.
const RELEASE_UNSTARTED: &str = r"
local record = redis.call('GET', KEYS[1])
if record and string.sub(record, 1, 4) == 'run:' and string.sub(record, -string.len(ARGV[1])) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0";

/// A claim being made: dropped before it returned, it frees the key its token may hold.
struct Claiming<'a> {
    store: &'a RedisStore,
    key: &'a str,
    token: &'a str,
    armed: bool,
}

impl Drop for Claiming<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.store.settle(
                self.key,
                RELEASE_UNSTARTED,
                vec![self.token.to_owned()],
                "release a claim dropped as it was made",
            );
        }
    }
}

impl IdempotencyStore for RedisStore {
    fn claim<'a>(&'a self, request: ClaimRequest<'a>) -> BoxFuture<'a, Claim> {
        Box::pin(async move {
            let ClaimRequest {
                key,
                window,
                repeatable,
                fingerprint,
            } = request;
            // The record is split on `:`: a fingerprint is hex, and anything else is left
            // out rather than misread.
            let fingerprint = if fingerprint.contains(':') {
                ""
            } else {
                fingerprint
            };
            let keys = self.redis_keys(key);
            let token = format!("{:032x}", fastrand::u128(..));
            let mut connection = self.connection.clone();
            let mut pause = POLL_FIRST;
            let script = Script::new(CLAIM);
            loop {
                let mut claiming = Claiming {
                    store: self,
                    key,
                    token: &token,
                    armed: true,
                };
                // Await: the claim itself, the last step before `Run` (no `.await` after
                // it). A drop while it is in flight releases what the token may hold, in
                // the background (`Claiming`).
                let claimed: Result<Vec<String>, _> = script
                    .key(&keys[0])
                    .key(&keys[1])
                    .arg(&token)
                    .arg(self.lease_ms())
                    .arg(millis(window))
                    .arg(if repeatable { "1" } else { "0" })
                    .arg(fingerprint)
                    .invoke_async(&mut connection)
                    .await;
                claiming.armed = false;
                let reply = match claimed {
                    Err(error) => return Claim::Unavailable(error.to_string()),
                    Ok(reply) => reply,
                };
                match reply.first().map(String::as_str) {
                    Some("run") => {
                        let Some(fence) = reply.get(1).and_then(|fence| fence.parse::<u64>().ok())
                        else {
                            return Claim::Unavailable("a claim without a fence".to_owned());
                        };
                        let held = format!("run:{fence}:{fingerprint}:{token}");
                        // Await: the claim reaching the replicas asked for; a drop here
                        // releases it (`Claiming`, armed again).
                        claiming.armed = true;
                        if let Err(error) =
                            connection::wait_replicated(self.replica_wait, &mut connection).await
                        {
                            claiming.armed = false;
                            self.settle(
                                key,
                                RELEASE_CLAIM,
                                vec![held],
                                "release a claim no replica acknowledged",
                            );
                            return Claim::Unavailable(error.to_string());
                        }
                        claiming.armed = false;
                        let renewal = self.renew(keys, held.clone(), token.clone(), window);
                        if let Ok(mut owned) = self.owned.lock() {
                            owned.insert(
                                (key.to_owned(), fence),
                                Owned {
                                    held,
                                    window,
                                    renewal,
                                },
                            );
                        }
                        return Claim::Run {
                            fencing_token: fence,
                        };
                    }
                    Some("done") => {
                        let stored = reply.get(1).map(String::as_str).unwrap_or("null");
                        // A result this build cannot read: the pipeline decides.
                        return Claim::Replay(serde_json::from_str(stored).unwrap_or(Value::Null));
                    }
                    Some("stopped") => return Claim::Stopped,
                    Some("conflict") => return Claim::Conflict,
                    // Running elsewhere. Await: a pause before looking again; holds
                    // nothing.
                    _ => {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(POLL_MAX);
                    }
                }
            }
        })
    }

    fn complete(&self, key: &str, fencing_token: u64, result: Value) {
        let Some(owned) = self.disown(key, fencing_token) else {
            return;
        };
        let stored = format!("done:{result}");
        self.settle(
            key,
            COMPLETE,
            vec![owned.held, stored, millis(owned.window).to_string()],
            "store the result",
        );
    }

    fn release(&self, key: &str, fencing_token: u64) {
        if let Some(owned) = self.disown(key, fencing_token) {
            self.settle(key, RELEASE_CLAIM, vec![owned.held], "release the key");
        }
    }

    fn abandon(&self, key: &str, fencing_token: u64) {
        if let Some(owned) = self.disown(key, fencing_token) {
            let window = millis(owned.window).to_string();
            self.settle(
                key,
                ABANDON,
                vec![owned.held, window],
                "give up the key as stopped",
            );
        }
    }
}
