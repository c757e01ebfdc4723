//! Middleware: code that runs before a handler, server-wide, per group and per tool (in
//! that order). It may enrich the call's context, or refuse the call with a classified
//! error that becomes an `isError` result like any other. A middleware may also hold a
//! guard for the duration of the call (a concurrency permit), released when the handler
//! ends.
//!
//! ```
//! use fusion_runtime::{middleware, prelude::*};
//!
//! #[derive(Clone, Default)]
//! struct Ctx {
//!     role: String,
//! }
//!
//! impl middleware::HasRoles for Ctx {
//!     fn has_role(&self, role: &str) -> bool {
//!         self.role == role
//!     }
//! }
//!
//! /// Delete everything.
//! #[mcp_tool(destructive)]
//! async fn wipe(#[ctx] ctx: &Ctx) -> String {
//!     format!("wiped by {}", ctx.role)
//! }
//!
//! let server = Server::builder("admin", "0")
//!     .context(Ctx::default)
//!     .tool(wipe)
//!     .tool_middleware("wipe", middleware::require_role("admin"))
//!     .build();
//! # let _ = server;
//! ```

use std::{
    any::Any,
    collections::HashMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

// tokio's clock: std's outside tests, and a paused clock drives the limiter in tests.
use tokio::time::Instant;

use serde_json::Value;

use crate::{
    BoxFuture,
    failure::classify::{Classification, ErrorClass, ErrorCode},
    failure::{Failure, FailureKind},
};

/// What a middleware knows of the call it is about to let through.
#[derive(Debug)]
pub struct CallInfo<'a> {
    /// The tool as the client named it.
    pub tool: &'a str,
    /// The action, for a grouped tool.
    pub action: Option<&'a str>,
    /// The arguments (before decoding).
    pub args: &'a Value,
}

/// Something a middleware keeps alive while the handler runs (a permit). It is dropped
/// when the call ends, however it ends: finished, refused by a later step, or its future
/// dropped (the client cancelled or went away). Put whatever must be given back in its
/// `Drop`, as tokio's `OwnedSemaphorePermit` does.
pub type Guard = Box<dyn Any + Send>;

/// A middleware's verdict: go on (optionally holding a guard), or refuse.
pub type Verdict = Result<Option<Guard>, Failure>;

/// Runs before a handler. Implement it for a middleware with state; use [`from_fn`] for a
/// plain function.
pub trait Middleware<C>: Send + Sync + 'static {
    /// Inspects (and may change) the context; `Err` refuses the call.
    fn before<'a>(&'a self, ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict>;
}

/// A refusal with a classification: the model reads `message` (prefixed by the code's
/// words, such as "Unauthorized: "), plus the hint.
pub fn refuse(classification: Classification, message: impl Into<String>) -> Failure {
    Failure {
        kind: FailureKind::Handler(classification),
        chain: vec![message.into()],
        attempts: 0,
    }
}

struct FromFn<F>(F);

impl<C, F> Middleware<C> for FromFn<F>
where
    C: Send + Sync + 'static,
    F: Fn(&mut C, &CallInfo<'_>) -> Result<(), Failure> + Send + Sync + 'static,
{
    fn before<'a>(&'a self, ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        let verdict = (self.0)(ctx, call).map(|()| None);
        Box::pin(std::future::ready(verdict))
    }
}

/// A middleware from a synchronous function of the context and the call.
pub fn from_fn<C, F>(function: F) -> impl Middleware<C>
where
    C: Send + Sync + 'static,
    F: Fn(&mut C, &CallInfo<'_>) -> Result<(), Failure> + Send + Sync + 'static,
{
    FromFn(function)
}

/// A context that knows the caller's roles, for [`require_role`].
pub trait HasRoles {
    /// Whether the caller has `role`.
    fn has_role(&self, role: &str) -> bool;
}

/// Refuses callers without `role`: "Unauthorized: this tool requires the role `admin`".
pub fn require_role<C: HasRoles + Send + Sync + 'static>(role: &'static str) -> impl Middleware<C> {
    from_fn(move |ctx: &mut C, call: &CallInfo<'_>| {
        if ctx.has_role(role) {
            Ok(())
        } else {
            let target = match call.action {
                Some(action) => format!("`{}` action `{action}`", call.tool),
                None => format!("`{}`", call.tool),
            };
            Err(refuse(
                Classification {
                    class: ErrorClass::InvalidInput,
                    code: Some(ErrorCode::Unauthorized),
                    hint: Some(
                        "ask a user with that role to make this call; do not retry with the same credentials",
                    ),
                    retry_after: None,
                },
                format!("{target} requires the role `{role}`"),
            ))
        }
    })
}

/// Lets at most `running` calls run at once and `queued` more wait; beyond that, calls
/// fail fast with a "busy, retry" error instead of piling up.
pub fn concurrency_limit<C: Send + Sync + 'static>(
    running: usize,
    queued: usize,
) -> impl Middleware<C> {
    ConcurrencyLimit {
        permits: Arc::new(tokio::sync::Semaphore::new(running)),
        waiting: AtomicUsize::new(0),
        queued,
    }
}

struct ConcurrencyLimit {
    permits: Arc<tokio::sync::Semaphore>,
    /// Calls waiting for a permit, each counted by a [`QueueSlot`].
    waiting: AtomicUsize,
    queued: usize,
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

fn busy(message: String) -> Failure {
    refuse(
        Classification {
            class: ErrorClass::Transient,
            code: Some(ErrorCode::RateLimited),
            hint: Some("the tool is busy with other calls; wait a moment and call again"),
            retry_after: Some(Duration::from_secs(1)),
        },
        message,
    )
}

impl<C: Send + Sync + 'static> Middleware<C> for ConcurrencyLimit {
    fn before<'a>(&'a self, _ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(async move {
            if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
                return Ok(Some(Box::new(permit) as Guard));
            }
            let Some(slot) = QueueSlot::take(&self.waiting, self.queued) else {
                return Err(busy(format!(
                    "`{}` is at its limit of concurrent calls and its queue is full",
                    call.tool
                )));
            };
            // Await: waits for a permit holding `slot`; a drop here gives the slot back, and
            // tokio's semaphore removes the waiter (no permit is lost).
            let permit = Arc::clone(&self.permits).acquire_owned().await;
            drop(slot);
            match permit {
                Ok(permit) => Ok(Some(Box::new(permit) as Guard)),
                Err(_) => Err(busy(format!("`{}` is shutting down", call.tool))),
            }
        })
    }
}

/// Allows `per_second` calls a second on average, with bursts of up to `burst` (a token
/// bucket per tool); beyond that, calls fail fast with a "rate limited" error.
///
/// A token is taken when the call is admitted, without waiting, and is not given back if
/// the call is cancelled later: the call was made, and counts against the rate. Nothing is
/// held across an `.await`, so a dropped call leaves no reservation behind.
pub fn rate_limit<C: Send + Sync + 'static>(per_second: f64, burst: u32) -> impl Middleware<C> {
    RateLimit {
        per_second,
        burst: f64::from(burst),
        buckets: Mutex::new(HashMap::new()),
    }
}

struct RateLimit {
    per_second: f64,
    burst: f64,
    /// Tokens left and when they were counted, per tool.
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl<C: Send + Sync + 'static> Middleware<C> for RateLimit {
    fn before<'a>(&'a self, _ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        let now = Instant::now();
        let verdict = match self.buckets.lock() {
            Ok(mut buckets) => {
                let (tokens, at) = buckets
                    .entry(call.tool.to_owned())
                    .or_insert((self.burst, now));
                *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.per_second)
                    .min(self.burst);
                *at = now;
                if *tokens >= 1.0 {
                    *tokens -= 1.0;
                    Ok(None)
                } else {
                    let wait = Duration::from_secs_f64(
                        (1.0 - *tokens) / self.per_second.max(f64::MIN_POSITIVE),
                    );
                    let mut failure = busy(format!(
                        "`{}` allows {} calls a second",
                        call.tool, self.per_second
                    ));
                    if let FailureKind::Handler(classification) = &mut failure.kind {
                        classification.retry_after = Some(wait);
                    }
                    Err(failure)
                }
            }
            // A poisoned lock only means another call panicked mid-update: let calls through.
            Err(_) => Ok(None),
        };
        Box::pin(std::future::ready(verdict))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let limit = ConcurrencyLimit {
            permits: Arc::new(tokio::sync::Semaphore::new(1)),
            waiting: AtomicUsize::new(0),
            queued: 1,
        };
        let args = Value::Null;
        let info = CallInfo {
            tool: "t",
            action: None,
            args: &args,
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
        assert_eq!(limit.waiting.load(Ordering::Acquire), 0);
        drop(running);
        let mut ctx = ();
        let next = Middleware::<()>::before(&limit, &mut ctx, &info).await;
        assert!(matches!(next, Ok(Some(_))), "the permit came back too");
    }
}
