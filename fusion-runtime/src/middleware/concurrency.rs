//! The concurrency limit: at most `running` calls at once and `queued` more waiting, for
//! everyone together or for each caller.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use super::base::{CallInfo, Guard, Middleware, Verdict, busy};
use crate::future::BoxFuture;

/// Lets at most `running` calls run at once and `queued` more wait; beyond that, calls
/// fail fast with a "busy, retry" error instead of piling up. The limit is shared by
/// every call the middleware sees (one tool's, a group's, or all of them).
pub fn concurrency_limit<C: Send + Sync + 'static>(
    running: usize,
    queued: usize,
) -> impl Middleware<C> {
    ConcurrencyLimit::One(Arc::new(Lane::new(running, queued)))
}

/// [`concurrency_limit`] for each caller separately: at most `running` calls of one caller
/// at once and `queued` more of theirs waiting, so that one busy user cannot take every
/// slot. The caller is the verified token's subject, else the HTTP session, else the
/// transport ([`RequestInfo::caller_key`](crate::identity::RequestInfo::caller_key)).
///
/// ```
/// use fusion_runtime::{middleware, prelude::*};
///
/// /// A slow report.
/// #[mcp_tool]
/// async fn report() -> String {
///     "done".into()
/// }
///
/// let server = Server::builder("reports", "1.0.0")
///     .tool(report)
///     .middleware(middleware::concurrency_limit_per_caller(2, 4))
///     .build();
/// # let _ = server;
/// ```
pub fn concurrency_limit_per_caller<C: Send + Sync + 'static>(
    running: usize,
    queued: usize,
) -> impl Middleware<C> {
    ConcurrencyLimit::per_caller(running, queued)
}

/// How many callers' lanes may exist before the idle ones are dropped.
const PRUNE_AT: usize = 1024;

enum ConcurrencyLimit {
    One(Arc<Lane>),
    PerCaller {
        running: usize,
        queued: usize,
        lanes: Mutex<Lanes>,
    },
}

struct Lanes {
    by_caller: HashMap<String, Arc<Lane>>,
    /// The size at which idle lanes are dropped next: doubled after a pruning that left
    /// many busy ones, so that pruning stays amortized.
    prune_at: usize,
}

/// The permits and the queue of one limit.
struct Lane {
    permits: Arc<tokio::sync::Semaphore>,
    /// Calls waiting for a permit, each counted by a [`QueueSlot`].
    waiting: AtomicUsize,
    queued: usize,
}

impl Lane {
    fn new(running: usize, queued: usize) -> Self {
        Self {
            permits: Arc::new(tokio::sync::Semaphore::new(running)),
            waiting: AtomicUsize::new(0),
            queued,
        }
    }
}

impl ConcurrencyLimit {
    fn per_caller(running: usize, queued: usize) -> Self {
        Self::PerCaller {
            running,
            queued,
            lanes: Mutex::new(Lanes {
                by_caller: HashMap::new(),
                prune_at: PRUNE_AT,
            }),
        }
    }

    /// How many callers have a lane now.
    #[cfg(test)]
    fn lanes(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::PerCaller { lanes, .. } => lanes.lock().map_or(0, |lanes| lanes.by_caller.len()),
        }
    }

    /// The lane of this call's caller (or the only one).
    fn lane(&self, call: &CallInfo<'_>) -> Arc<Lane> {
        match self {
            Self::One(lane) => Arc::clone(lane),
            Self::PerCaller {
                running,
                queued,
                lanes,
            } => {
                // A poisoned lock only means a panic mid-insert; the map is still whole.
                let mut lanes = lanes
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let key = call.request.caller_key();
                if !lanes.by_caller.contains_key(&key) && lanes.by_caller.len() >= lanes.prune_at {
                    // A lane nobody holds (no permit, no waiter) is the same as a new one.
                    lanes
                        .by_caller
                        .retain(|_, lane| Arc::strong_count(lane) > 1);
                    lanes.prune_at = (lanes.by_caller.len() * 2).max(PRUNE_AT);
                }
                Arc::clone(
                    lanes
                        .by_caller
                        .entry(key)
                        .or_insert_with(|| Arc::new(Lane::new(*running, *queued))),
                )
            }
        }
    }
}

/// A call's place in a concurrency limit's queue. `Drop` gives it back, so a call that is
/// cancelled while it waits does not keep its place for good.
struct QueueSlot<'a>(&'a AtomicUsize);

impl<'a> QueueSlot<'a> {
    /// Takes a place if fewer than `capacity` calls are waiting.
    fn take(waiting: &'a AtomicUsize, capacity: usize) -> Option<Self> {
        waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |count| {
                (count < capacity).then_some(count + 1)
            })
            .ok()
            .map(|_| Self(waiting))
    }
}

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a running call holds: its permit, and its lane (so that a per-caller lane in use
/// is never pruned).
type Held = (tokio::sync::OwnedSemaphorePermit, Arc<Lane>);

impl<C: Send + Sync + 'static> Middleware<C> for ConcurrencyLimit {
    fn before<'a>(&'a self, _ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        let lane = self.lane(call);
        Box::pin(async move {
            if let Ok(permit) = Arc::clone(&lane.permits).try_acquire_owned() {
                let held: Held = (permit, lane);
                return Ok(Some(Box::new(held) as Guard));
            }
            let Some(slot) = QueueSlot::take(&lane.waiting, lane.queued) else {
                return Err(busy(format!(
                    "`{}` is at its limit of concurrent calls and its queue is full",
                    call.tool
                )));
            };
            // Await: waits for a permit holding `slot`; a drop here gives the slot back, and
            // tokio's semaphore removes the waiter (no permit is lost).
            let permit = Arc::clone(&lane.permits).acquire_owned().await;
            drop(slot);
            match permit {
                Ok(permit) => {
                    let held: Held = (permit, Arc::clone(&lane));
                    Ok(Some(Box::new(held) as Guard))
                }
                Err(_) => Err(busy(format!("`{}` is shutting down", call.tool))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::Value;

    use super::*;
    use crate::identity::{Claims, RequestInfo};

    #[test]
    fn a_queue_slot_is_given_back_when_dropped() {
        let waiting = AtomicUsize::new(0);
        let first = QueueSlot::take(&waiting, 2);
        let second = QueueSlot::take(&waiting, 2);
        assert!(first.is_some() && second.is_some());
        assert!(QueueSlot::take(&waiting, 2).is_none(), "the queue is full");
        drop(first);
        assert!(QueueSlot::take(&waiting, 2).is_some(), "a place came back");
        drop(second);
        assert_eq!(waiting.load(Ordering::Acquire), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_dropped_while_queued_leaves_no_place_behind() {
        let lane = Arc::new(Lane::new(1, 1));
        let limit = ConcurrencyLimit::One(Arc::clone(&lane));
        let args = Value::Null;
        let request = RequestInfo::in_memory();
        let info = CallInfo {
            tool: "t",
            action: None,
            args: &args,
            request: &request,
        };
        let mut ctx = ();
        let running = Middleware::<()>::before(&limit, &mut ctx, &info).await;
        assert!(matches!(running, Ok(Some(_))));
        for _ in 0..3 {
            let mut ctx = ();
            let queued = Middleware::<()>::before(&limit, &mut ctx, &info);
            // Polled once (queued), then dropped as a cancelled call would be.
            let polled = tokio::time::timeout(Duration::from_millis(1), queued).await;
            assert!(polled.is_err(), "it waits behind the running call");
        }
        assert_eq!(lane.waiting.load(Ordering::Acquire), 0);
        drop(running);
        let mut ctx = ();
        let next = Middleware::<()>::before(&limit, &mut ctx, &info).await;
        assert!(matches!(next, Ok(Some(_))), "the permit came back too");
    }

    async fn admit(limit: &ConcurrencyLimit, request: &RequestInfo) -> Verdict {
        let args = Value::Null;
        let info = CallInfo {
            tool: "t",
            action: None,
            args: &args,
            request,
        };
        Middleware::<()>::before(limit, &mut (), &info).await
    }

    #[tokio::test]
    async fn each_caller_has_a_lane_and_idle_lanes_are_pruned() {
        let limit = ConcurrencyLimit::per_caller(1, 0);
        let caller = |subject: &str| {
            RequestInfo::in_memory().with_claims(Claims::for_subject(subject, ["x"]))
        };
        let (alice, bob) = (caller("alice"), caller("bob"));
        let held = admit(&limit, &alice).await;
        assert!(matches!(held, Ok(Some(_))));
        let refused = admit(&limit, &alice).await;
        assert!(
            refused.is_err(),
            "alice's one slot is taken, and she may not queue"
        );
        let other = admit(&limit, &bob).await;
        assert!(matches!(other, Ok(Some(_))), "bob has his own slot");
        drop(other);
        // Many callers come and go: the map stays bounded, and alice's busy lane stays.
        for n in 0..5 * PRUNE_AT {
            let guard = admit(&limit, &caller(&format!("u{n}"))).await;
            assert!(matches!(guard, Ok(Some(_))));
        }
        assert!(limit.lanes() <= 2 * PRUNE_AT, "{} lanes", limit.lanes());
        let refused = admit(&limit, &alice).await;
        assert!(
            refused.is_err(),
            "alice's lane survived the pruning with her call in it"
        );
        drop(held);
        let again = admit(&limit, &alice).await;
        assert!(matches!(again, Ok(Some(_))));
    }
}
