//! What a lock store is: [`LockStore`], the [`LockGuard`] a taken lock is, and
//! [`LockUnavailable`], the answer of a store that cannot be reached.

use std::future::Future;

use crate::future::BoxFuture;

/// Where the locks of `#[mcp_tool(serialize = "..")]` are kept: in memory by default
/// ([`MemoryLockStore`](crate::lock::MemoryLockStore)); on Redis for a fleet
/// (`fusion_runtime::redis::RedisStore`, feature `redis`); or over another shared store.
///
/// A key is the tool's name (a group's, for its actions) and the SHA-256 of the argument's
/// value in canonical JSON: at most a few hundred bytes, and no argument value in it.
///
/// What an implementation promises:
/// - **One holder per key**: a [`lock`](Self::lock) resolves with a guard only while no
///   other guard of the key is alive (on any replica that shares the store).
/// - **Arrival order**: waiters of a key get it in the order they called `lock` (within
///   one process at least).
/// - **Release on drop**: dropping the [`LockGuard`] releases the key, without blocking
///   (`Drop` may spawn the release). A guard may be dropped outside a runtime (as the
///   process ends): a shared store's lease then lapses by itself.
/// - **Cancel safety**: a `lock` future dropped while it waits (or while it is taking the
///   key) leaves nothing held, or only what lapses with a lease.
/// - **Unavailable, not unchecked**: a shared store that cannot be reached answers
///   [`LockUnavailable`]; the call is then answered with a transient error and its
///   handler does not run.
///
/// A store whose hold can end before the guard is dropped (a lease that could not be
/// renewed) says so through [`LockGuard::lost_when`]: the runtime then stops the call.
///
/// ```
/// use fusion_runtime::{
///     BoxFuture,
///     lock::{LockGuard, LockStore, LockUnavailable, MemoryLockStore},
/// };
///
/// /// Locks in memory, refused while `closed`; a stand-in for a store over a database.
/// struct Guarded {
///     inner: MemoryLockStore,
///     closed: bool,
/// }
///
/// impl LockStore for Guarded {
///     fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<LockGuard, LockUnavailable>> {
///         Box::pin(async move {
///             if self.closed {
///                 return Err(LockUnavailable::new("the database is down"));
///             }
///             self.inner.lock(key).await
///         })
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let open = Guarded { inner: MemoryLockStore::new(), closed: false };
/// let held = open.lock("deposit:a-1").await.expect("free");
/// drop(held); // released
/// let closed = Guarded { inner: MemoryLockStore::new(), closed: true };
/// assert!(closed.lock("deposit:a-1").await.is_err());
/// # });
/// ```
pub trait LockStore: Send + Sync + 'static {
    /// Waits for `key`'s turn and takes it; the lock is held until the guard is dropped.
    fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<LockGuard, LockUnavailable>>;
}

/// A lock taken: the key is released when this is dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    /// What releases the key in its `Drop`.
    _held: Box<dyn Send>,
    /// Resolves if the hold ends before the guard is dropped (a lease lost).
    lost: Option<BoxFuture<'static, ()>>,
}

impl LockGuard {
    /// A guard that holds `held` and drops it to release the key (an owned mutex guard,
    /// a value whose `Drop` spawns the release on a shared store).
    pub fn new(held: impl Send + 'static) -> Self {
        Self {
            _held: Box::new(held),
            lost: None,
        }
    }

    /// Tells the runtime that the hold may end while the guard is alive: `lost` resolves
    /// when it did (a lease that could not be renewed in time), and the runtime then stops
    /// the call that held the key (its handler's future is dropped) rather than let it run
    /// alongside another writer. A `lost` that resolves means lost: resolve it never if
    /// the hold lasts.
    pub fn lost_when(mut self, lost: impl Future<Output = ()> + Send + 'static) -> Self {
        self.lost = Some(Box::pin(lost));
        self
    }

    /// Resolves when the hold ended before the guard was dropped; never for a guard made
    /// without [`lost_when`](Self::lost_when).
    pub async fn lost(&mut self) {
        match self.lost.as_mut() {
            Some(lost) => {
                lost.await;
                // Lost for good: a later look resolves at once (an async block must not be
                // polled again once it finished).
                self.lost = Some(Box::pin(std::future::ready(())));
            }
            None => std::future::pending().await,
        }
    }
}

impl std::fmt::Debug for LockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockGuard")
            .field("may_be_lost", &self.lost.is_some())
            .finish_non_exhaustive()
    }
}

/// A lock store that cannot be reached: the call must not run unchecked (another replica
/// may be writing the key). The caller gets a transient error, the reason goes to the log.
#[derive(Clone, Debug, thiserror::Error)]
#[error("the lock store is unavailable: {reason}")]
#[non_exhaustive]
pub struct LockUnavailable {
    /// Why, for the log only (it may name infrastructure).
    pub reason: String,
}

impl LockUnavailable {
    /// Unavailable, for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}
