//! The reconnect hook: single-flight per resource, so the callers that saw one failure
//! share one reconnect.

use std::{
    collections::HashMap,
    fmt::Display,
    future::Future,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicU64, Ordering},
    },
};

// tokio's clock, not std's: the same readings outside tests, and a paused clock in
// tests drives the breaker deterministically.

/// A resource a tool depends on (a database pool, an HTTP client) that can be
/// re-established after a transient failure, instead of restarting the server.
///
/// Name it in `#[mcp_tool(reconnect = field)]`, where `field` is a field of the
/// tool's context. Concurrent callers share one reconnect.
///
/// ```
/// use fusion_runtime::policy::Reconnect;
///
/// struct Upstream { url: String }
///
/// impl Reconnect for Upstream {
///     type Error = std::io::Error;
///     async fn reconnect(&self) -> Result<(), std::io::Error> {
///         // re-open connections to self.url here
///         Ok(())
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be reconnected: it does not implement `Reconnect`",
    label = "named by `reconnect = ..`",
    note = "implement `fusion_runtime::policy::Reconnect` for the resource's type (an `async fn reconnect(&self)` that re-opens it), or name another field of the context"
)]
pub trait Reconnect: Send + Sync {
    /// Why a reconnect failed.
    type Error: Display;
    /// Re-establishes the resource.
    fn reconnect(&self) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// What identifies the resource for single-flight: its address. A handle (an
    /// `Arc`) reports its target's, so clones of one context share a reconnect.
    #[doc(hidden)]
    fn resource_identity(&self) -> usize {
        std::ptr::from_ref(self).cast::<()>() as usize
    }
}

impl<T: Reconnect> Reconnect for Arc<T> {
    type Error = T::Error;
    fn reconnect(&self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        T::reconnect(self)
    }
    fn resource_identity(&self) -> usize {
        T::resource_identity(self)
    }
}

/// One gate per resource (keyed by its address), shared by the callers that reconnect
/// it at the same time.
#[derive(Default)]
struct Gate {
    /// Held while a reconnect runs.
    running: tokio::sync::Mutex<()>,
    /// Completed reconnects: a caller that saw a generation before waiting, and finds a
    /// newer one once it holds the gate, skips its own reconnect.
    generation: AtomicU64,
}

type Gates = Mutex<HashMap<usize, Arc<Gate>>>;

fn gates() -> &'static Gates {
    static GATES: OnceLock<Gates> = OnceLock::new();
    GATES.get_or_init(Mutex::default)
}

/// A caller's hold on a resource's gate. Its `Drop` removes the gate from the registry
/// once no other caller holds it, however the caller ends (finished, or its future
/// dropped mid-reconnect), so the registry only holds resources being reconnected.
struct GateHold {
    key: usize,
    gate: Arc<Gate>,
}

impl GateHold {
    fn take(key: usize) -> Option<Self> {
        let mut map = gates().lock().ok()?;
        let gate = Arc::clone(map.entry(key).or_default());
        Some(Self { key, gate })
    }
}

impl Drop for GateHold {
    fn drop(&mut self) {
        if let Ok(mut map) = gates().lock()
            // The registry's reference and ours: nobody else is waiting.
            && Arc::strong_count(&self.gate) <= 2
        {
            map.remove(&self.key);
        }
    }
}

/// Reconnects `resource` unless another caller did while this one waited for the gate.
/// Returns whether this call ran the reconnect, and its error.
///
/// Cancel safety: dropped while waiting, it leaves nothing behind; dropped during the
/// reconnect, the gate's lock is released unchanged (the generation only moves when a
/// reconnect completes), so the next caller reconnects.
pub(crate) async fn reconnect_once<R: Reconnect>(resource: &R) -> (bool, Result<(), String>) {
    let Some(hold) = GateHold::take(resource.resource_identity()) else {
        return (false, Err("the reconnect registry is poisoned".into()));
    };
    let seen = hold.gate.generation.load(Ordering::Acquire);
    // Await: waits for another caller's reconnect; holds only `hold` (released on drop).
    let running = hold.gate.running.lock().await;
    if hold.gate.generation.load(Ordering::Acquire) != seen {
        return (false, Ok(()));
    }
    // Await: the user's reconnect; a drop here releases `running` with the generation
    // unchanged, so the next caller runs its own.
    let result = resource
        .reconnect()
        .await
        .map_err(|error| error.to_string());
    hold.gate.generation.fetch_add(1, Ordering::Release);
    drop(running);
    (true, result)
}

/// Reconnects a tool's resource once for all concurrent callers (what
/// `#[mcp_tool(reconnect = field)]` generates a call to).
#[doc(hidden)]
pub fn reconnect<R: Reconnect>(
    resource: &R,
) -> crate::future::BoxFuture<'_, (bool, Result<(), String>)> {
    Box::pin(reconnect_once(resource))
}
