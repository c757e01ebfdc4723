//! How a [`RedisStore`] reaches Redis beyond one server: a Redis Cluster, the primary
//! that Sentinel names, and how many replicas must acknowledge a write. The connections
//! themselves are `connection.rs`'s.

use std::time::Duration;

use redis::RedisError;

use super::{
    connection::{self, WAIT_MAX},
    store::RedisStore,
};

impl RedisStore {
    /// Connects to a Redis Cluster through `urls`, some of its nodes (`redis://host:port`;
    /// one is enough, the others are found through it). Fails when none can be reached
    /// now; once connected, each command goes to the node that serves its key, and the
    /// connection follows the cluster's changes (slots moved, a replica promoted) and
    /// reconnects to nodes by itself. The timeouts are [`connect`](Self::connect)'s: one
    /// second to connect, one second for an answer.
    ///
    /// Every key a script touches shares one hash slot: the store's own keys are
    /// hash-tagged (a tool's cache keys under `{<tool>}`). A [`prefix`](Self::prefix) with
    /// braces in it decides the slot of every key itself, putting all of them on one node.
    ///
    /// A command is sent once: when it meets a slot that moved (`MOVED`) or a node that
    /// failed, that command fails (the store answers as when Redis is away) and the next
    /// one goes to the right node. It is never run twice. The cancels and answers sent to
    /// tasks are subscribed on one node at a time (a `PUBLISH` reaches every node's
    /// subscribers), the next of `urls` when it goes away.
    ///
    /// ```no_run
    /// use fusion_runtime::{prelude::*, redis::RedisStore};
    ///
    /// /// The price of a stock: one run a burst, fleet-wide; fresh for 30 s.
    /// #[mcp_tool(read_only, cache = "30s")]
    /// async fn quote(symbol: String) -> String {
    ///     format!("{symbol}: 42.00")
    /// }
    ///
    /// # async fn build() -> Result<(), fusion_runtime::redis::RedisError> {
    /// let redis = RedisStore::connect_cluster(&[
    ///     "redis://10.0.0.1:6379",
    ///     "redis://10.0.0.2:6379",
    ///     "redis://10.0.0.3:6379",
    /// ])
    /// .await?;
    /// let server = Server::builder("market", "1.0.0")
    ///     .cache_store(redis.clone())
    ///     .lock_store(redis)
    ///     .tool(quote)
    ///     .build();
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_cluster(urls: &[&str]) -> Result<Self, RedisError> {
        let (connection, pubsub) = connection::cluster(urls).await?;
        Ok(Self::with_connection(connection, pubsub))
    }

    /// Connects to the primary that the sentinels at `sentinel_urls` (`redis://host:port`
    /// of each Sentinel) name for `master_name`. Fails when no sentinel names a primary
    /// that can be reached now.
    ///
    /// When the primary fails and Sentinel promotes a replica, the store follows: a
    /// command that meets a connection error, a timeout or a demoted node (`READONLY`)
    /// fails (the store answers as when Redis is away), and the next one asks the
    /// sentinels again and goes to the new primary. Until they name one (Sentinel's
    /// `down-after-milliseconds` plus the failover), commands fail at once. A command
    /// never waits for more than a second, looking the primary up included; the lookup
    /// goes on in the background for the next ones.
    ///
    /// What a failover can lose: the writes the old primary acknowledged but had not yet
    /// sent to the replica that is promoted (Redis replicates asynchronously), such as an
    /// idempotency claim or a lock taken just before it failed.
    /// [`wait_for_replicas`](Self::wait_for_replicas) narrows that window.
    ///
    /// The primary is reached without a password, on database 0; the task signals are
    /// subscribed on it, and again on the new one after a failover.
    ///
    /// ```no_run
    /// use fusion_runtime::{prelude::*, redis::RedisStore};
    ///
    /// /// Place an order once per `order_id`, whichever replica gets the call.
    /// #[mcp_tool(destructive, idempotency_key = "order_id")]
    /// async fn place_order(order_id: String) -> String {
    ///     format!("placed {order_id}")
    /// }
    ///
    /// # async fn build() -> Result<(), fusion_runtime::redis::RedisError> {
    /// let redis = RedisStore::connect_sentinel(
    ///     &[
    ///         "redis://10.0.0.1:26379",
    ///         "redis://10.0.0.2:26379",
    ///         "redis://10.0.0.3:26379",
    ///     ],
    ///     "orders",
    /// )
    /// .await?;
    /// let server = Server::builder("orders", "1.0.0")
    ///     .idempotency_store(redis)
    ///     .tool(place_order)
    ///     .build();
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_sentinel(
        sentinel_urls: &[&str],
        master_name: &str,
    ) -> Result<Self, RedisError> {
        let (connection, pubsub) = connection::sentinel(sentinel_urls, master_name).await?;
        Ok(Self::with_connection(connection, pubsub))
    }

    /// Asks Redis to confirm that `replicas` replicas received a write before the store
    /// counts on it, waiting up to `timeout` for them (at least 1 ms, at most 900 ms: a
    /// command is given up on after a second). Off by default.
    ///
    /// What it buys: a claim (an idempotency key's, a task's lease) acknowledged by a
    /// replica survives a failover in which that replica is promoted, so the key does
    /// not run a second time on another replica of the fleet. Without it, Redis
    /// replicates asynchronously, and a primary that fails just after a claim may take
    /// the claim with it.
    ///
    /// What it costs: one `WAIT` after each such write, a replication round trip (well
    /// under a millisecond on one network), and up to `timeout` when fewer replicas
    /// answer, in which case the write counts as failed (Redis unavailable). The
    /// connection is shared by the store's clones, and Redis answers a client's commands
    /// in order, so the other commands of this process wait behind a `WAIT` too. It is not
    /// a guarantee against every loss: Sentinel may still promote a replica that missed the
    /// write, and a replica acknowledges a write it has not yet written to disk.
    ///
    /// On a Redis Cluster, redis sends `WAIT` to every primary and keeps the fewest
    /// acknowledgements, so each primary needs `replicas` replicas.
    pub fn wait_for_replicas(mut self, replicas: usize, timeout: Duration) -> Self {
        self.replica_wait = Some((replicas, timeout.clamp(Duration::from_millis(1), WAIT_MAX)));
        self
    }
}
