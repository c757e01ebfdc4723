//! `impl LockStore for RedisStore`: one writer per key across replicas
//! (`#[mcp_tool(serialize = "..")]`), a lock on Redis under a lease renewed while the call
//! runs, behind this replica's own queue of the key.

use std::{fmt::Write as _, time::Duration};

use redis::Script;
use sha2::{Digest as _, Sha256};
use tokio::{sync::watch, time::Instant};

use crate::{
    future::BoxFuture,
    lock::{LockGuard, LockStore, LockUnavailable},
};

use super::{
    connection::Connection,
    store::{RELEASE, RENEW, RedisStore},
};

/// How long a waiter sleeps between tries of a key held on another replica, at first and
/// at most.
const WAIT_FIRST: Duration = Duration::from_millis(20);
const WAIT_MAX: Duration = Duration::from_millis(250);

impl RedisStore {
    /// How long a `serialize` lock is held on Redis without renewal (30 s by default, at
    /// least 100 ms). While its call runs the lease is renewed every third of it; a
    /// replica that dies (SIGKILL, its machine gone) blocks the key for at most one lease,
    /// then the next waiter, on any replica, takes it.
    ///
    /// A holder that cannot renew (Redis away) for two thirds of the lease stops its call
    /// (the handler's future is dropped, the call answered with a transient error, or an
    /// unknown outcome for a tool unsafe to repeat) while a third of the lease is left, so
    /// that it never writes beside the next holder. A longer lease rides out a longer
    /// Redis outage; a shorter one frees a dead holder's keys sooner.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// use fusion_runtime::{prelude::*, redis::RedisStore};
    ///
    /// /// Add to an account's balance, one deposit at a time per account, fleet-wide.
    /// #[mcp_tool(serialize = "account")]
    /// async fn deposit(account: String, cents: u64) -> String {
    ///     format!("{cents} to {account}")
    /// }
    ///
    /// # async fn build() -> Result<(), fusion_runtime::redis::RedisError> {
    /// let redis = RedisStore::connect("redis://127.0.0.1:6379")
    ///     .await?
    ///     .lock_lease(Duration::from_secs(10));
    /// let server = Server::builder("bank", "1.0.0")
    ///     .lock_store(redis)
    ///     .tool(deposit)
    ///     .build();
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub fn lock_lease(mut self, lease: Duration) -> Self {
        self.lock_lease = lease.max(Duration::from_millis(100));
        self
    }

    /// The Redis key of a lock key: fixed-size, whatever the key. Every command and script
    /// on a lock names this key alone, so on a Redis Cluster it needs no hash tag: each
    /// lock lives on the node of its own slot.
    fn lock_redis_key(&self, key: &str) -> String {
        let mut name = format!("{}lock:", self.prefix);
        for byte in Sha256::digest(key.as_bytes()) {
            let _ = write!(name, "{byte:02x}");
        }
        name
    }
}

/// A key held (or being taken) on Redis by this replica, with this replica's own turn of
/// it: dropped, it stops the renewal, deletes the Redis key if this token still holds it
/// (in the background), and only then lets this replica's next waiter go.
struct Hold {
    connection: Connection,
    redis_key: String,
    token: String,
    /// Whether the Redis key may be ours, so the drop must release it.
    state: Taken,
    renewal: Option<tokio::task::AbortHandle>,
    /// This replica's turn of the key (`MemoryLockStore`).
    local: Option<LockGuard>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// Not ours: the last `SET NX` found it held.
    No,
    /// A `SET NX` in flight or failed: it may have been applied.
    Maybe,
    /// Ours.
    Yes,
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(renewal) = self.renewal.take() {
            renewal.abort();
        }
        let local = self.local.take();
        if self.state == Taken::No {
            return;
        }
        // No runtime (a guard dropped as the process ends): the lease lapses by itself.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut connection = self.connection.clone();
        let redis_key = std::mem::take(&mut self.redis_key);
        let token = std::mem::take(&mut self.token);
        let held = self.state == Taken::Yes;
        // Never blocks in `Drop`: the release runs as a task of its own.
        runtime.spawn(async move {
            let released: Result<i64, _> = Script::new(RELEASE)
                .key(&redis_key)
                .arg(&token)
                .invoke_async(&mut connection)
                .await;
            if let Err(error) = released
                && held
            {
                tracing::warn!(target: "fusion::lock", %error, "cannot release a lock on Redis; it lapses with its lease");
            }
            // This replica's next waiter goes once the key is free on Redis (or the
            // release failed), so that it does not find it still held.
            drop(local);
        });
    }
}

impl LockStore for RedisStore {
    fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<LockGuard, LockUnavailable>> {
        Box::pin(async move {
            // Await: this replica's queue of the key first: its calls take the key in the
            // order they arrived; across replicas, whichever finds it free first.
            let local = self.local_locks.lock(key).await?;
            let mut hold = Hold {
                connection: self.connection.clone(),
                redis_key: self.lock_redis_key(key),
                token: format!("lock:{:032x}", fastrand::u128(..)),
                state: Taken::No,
                renewal: None,
                local: Some(local),
            };
            let lease_ms = u64::try_from(self.lock_lease.as_millis()).unwrap_or(u64::MAX);
            let mut connection = self.connection.clone();
            let mut pause = WAIT_FIRST;
            let taken_at = loop {
                // A drop while the `SET` is in flight releases whatever it set.
                hold.state = Taken::Maybe;
                let sent = Instant::now();
                // Await: takes the key if it is free. Holds this replica's turn.
                let taken: Result<Option<String>, _> = redis::cmd("SET")
                    .arg(&hold.redis_key)
                    .arg(&hold.token)
                    .arg("NX")
                    .arg("PX")
                    .arg(lease_ms)
                    .query_async(&mut connection)
                    .await;
                match taken {
                    Err(error) => return Err(LockUnavailable::new(error.to_string())),
                    Ok(Some(_)) => break sent,
                    Ok(None) => hold.state = Taken::No,
                }
                // Held on another replica. Await: a pause before trying again; holds this
                // replica's turn only.
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(WAIT_MAX);
            };
            hold.state = Taken::Yes;
            let (lost, lost_seen) = watch::channel(false);
            let renewal = Renewal {
                connection,
                redis_key: hold.redis_key.clone(),
                token: hold.token.clone(),
                lease: self.lock_lease,
                renewed_at: taken_at,
                lost,
            };
            hold.renewal = Some(tokio::spawn(renewal.run()).abort_handle());
            let mut lost_seen = lost_seen;
            Ok(LockGuard::new(hold).lost_when(async move {
                // The sender goes with the renewal, aborted only as the guard is dropped.
                if lost_seen.wait_for(|lost| *lost).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }))
        })
    }
}

/// The task that keeps a held key's lease: renewed every third of it (compare the token,
/// then `PEXPIRE`). When the lease cannot be renewed for two thirds of it, or Redis says
/// the key is no longer this holder's, it says `lost`: the call is stopped while the
/// lease still has a third to run, before another replica can take the key.
struct Renewal {
    connection: Connection,
    redis_key: String,
    token: String,
    lease: Duration,
    /// When the last `SET` or renewal that succeeded was sent: the lease runs from a
    /// moment after it on Redis's side.
    renewed_at: Instant,
    lost: watch::Sender<bool>,
}

impl Renewal {
    async fn run(mut self) {
        let lease_ms = u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX);
        let period = self.lease / 3;
        let retry = (period / 4).max(Duration::from_millis(10));
        loop {
            // Await: the next renewal's time.
            tokio::time::sleep_until(self.renewed_at + period).await;
            let give_up = self.renewed_at + period * 2;
            loop {
                let sent = Instant::now();
                // Await: one renewal, bounded by the time left before giving up.
                let renewed = tokio::time::timeout_at(
                    give_up,
                    Script::new(RENEW)
                        .key(&self.redis_key)
                        .arg(&self.token)
                        .arg(lease_ms)
                        .invoke_async::<i64>(&mut self.connection),
                )
                .await;
                match renewed {
                    Ok(Ok(1)) => {
                        self.renewed_at = sent;
                        break;
                    }
                    Ok(Ok(_)) => {
                        tracing::error!(target: "fusion::lock", "a lock's lease lapsed or was taken over on Redis; its call is stopped");
                        self.lost.send_replace(true);
                        return;
                    }
                    Ok(Err(error)) => {
                        tracing::warn!(target: "fusion::lock", %error, "cannot renew a lock's lease on Redis; trying again");
                        // Await: a short pause before the next try, never past giving up.
                        tokio::time::sleep_until((Instant::now() + retry).min(give_up)).await;
                        if Instant::now() >= give_up {
                            return self.give_up();
                        }
                    }
                    Err(_) => return self.give_up(),
                }
            }
        }
    }

    fn give_up(&self) {
        tracing::error!(target: "fusion::lock", "a lock's lease could not be renewed in time; its call is stopped before another replica can take the key");
        self.lost.send_replace(true);
    }
}
