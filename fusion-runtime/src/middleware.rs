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
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    BoxFuture,
    classify::{Classification, ErrorClass, ErrorCode},
    error::{Failure, FailureKind},
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

/// Something a middleware keeps alive while the handler runs (a permit); dropped after.
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
        waiting: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        queued,
    }
}

struct ConcurrencyLimit {
    permits: Arc<tokio::sync::Semaphore>,
    waiting: Arc<std::sync::atomic::AtomicUsize>,
    queued: usize,
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
            use std::sync::atomic::Ordering;
            if let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() {
                return Ok(Some(Box::new(permit) as Guard));
            }
            if self.waiting.fetch_add(1, Ordering::SeqCst) >= self.queued {
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                return Err(busy(format!(
                    "`{}` is at its limit of concurrent calls and its queue is full",
                    call.tool
                )));
            }
            let permit = Arc::clone(&self.permits).acquire_owned().await;
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            match permit {
                Ok(permit) => Ok(Some(Box::new(permit) as Guard)),
                Err(_) => Err(busy(format!("`{}` is shutting down", call.tool))),
            }
        })
    }
}

/// Allows `per_second` calls a second on average, with bursts of up to `burst` (a token
/// bucket per tool); beyond that, calls fail fast with a "rate limited" error.
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
