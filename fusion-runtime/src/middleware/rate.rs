//! The rate limit: a token bucket per tool, or per tool and caller.

use std::{collections::HashMap, sync::Mutex, time::Duration};

// tokio's clock: std's outside tests, and a paused clock drives the limiter in tests.
use tokio::time::Instant;

use super::base::{CallInfo, Middleware, Verdict, busy};
use crate::{
    failure::{Failure, FailureKind},
    future::BoxFuture,
};

/// Allows `per_second` calls a second on average, with bursts of up to `burst` (a token
/// bucket per tool); beyond that, calls fail fast with a "rate limited" error.
///
/// A token is taken when the call is admitted, without waiting, and is not given back if
/// the call is cancelled later: the call was made, and counts against the rate. Nothing is
/// held across an `.await`, so a dropped call leaves no reservation behind.
pub fn rate_limit<C: Send + Sync + 'static>(per_second: f64, burst: u32) -> impl Middleware<C> {
    RateLimit::new(per_second, burst, Per::Tool)
}

/// [`rate_limit`] for each caller separately: a bucket per tool and caller, so that one
/// busy user cannot spend everyone's rate. The caller is the verified token's subject, else
/// the HTTP session, else the transport
/// ([`RequestInfo::caller_key`](crate::identity::RequestInfo::caller_key)).
///
/// ```
/// use fusion_runtime::{middleware, prelude::*};
///
/// /// Search the catalog.
/// #[mcp_tool(read_only)]
/// async fn search(query: String) -> String {
///     query
/// }
///
/// let server = Server::builder("catalog", "1.0.0")
///     .tool(search)
///     .middleware(middleware::rate_limit_per_caller(5.0, 10))
///     .build();
/// # let _ = server;
/// ```
pub fn rate_limit_per_caller<C: Send + Sync + 'static>(
    per_second: f64,
    burst: u32,
) -> impl Middleware<C> {
    RateLimit::new(per_second, burst, Per::Caller)
}

/// How many buckets may exist before the full ones are dropped (a full bucket is the same
/// as none); beyond it, with every bucket in use, a new caller is refused as busy.
const MAX_BUCKETS: usize = 65_536;

/// What one bucket counts.
#[derive(Clone, Copy)]
pub(crate) enum Per {
    Tool,
    Caller,
}

impl Per {
    /// The bucket of `call`: its tool's, or its tool's for its caller.
    pub(crate) fn key(self, call: &CallInfo<'_>) -> String {
        match self {
            Self::Tool => call.tool.to_owned(),
            Self::Caller => format!("{}\u{1f}{}", call.tool, call.request.caller_key()),
        }
    }

    /// The refusal of a call over the rate of `tool` (`where_` says over what: "" for this
    /// process, " across the fleet"), to be retried after `wait`.
    pub(crate) fn refusal(
        self,
        tool: &str,
        per_second: f64,
        where_: &str,
        wait: Duration,
    ) -> Failure {
        let whose = match self {
            Self::Tool => "",
            Self::Caller => " for each caller",
        };
        let mut failure = busy(format!(
            "`{tool}` allows {per_second} calls a second{whose}{where_}"
        ));
        if let FailureKind::Handler(classification) = &mut failure.kind {
            classification.retry_after = Some(wait);
        }
        failure
    }
}

pub(crate) struct RateLimit {
    per_second: f64,
    burst: f64,
    per: Per,
    /// Tokens left and when they were counted, per tool (and caller).
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
}

impl RateLimit {
    pub(crate) fn new(per_second: f64, burst: u32, per: Per) -> Self {
        Self {
            per_second,
            burst: f64::from(burst),
            per,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The tokens a bucket counted at `at` holds at `now`.
    fn refilled(&self, (tokens, at): (f64, Instant), now: Instant) -> f64 {
        (tokens + now.duration_since(at).as_secs_f64() * self.per_second).min(self.burst)
    }

    pub(crate) fn admit(&self, call: &CallInfo<'_>) -> Verdict {
        let now = Instant::now();
        // A poisoned lock only means another call panicked mid-update: let calls through.
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(None);
        };
        let key = self.per.key(call);
        if !buckets.contains_key(&key) && buckets.len() >= MAX_BUCKETS {
            buckets.retain(|_, bucket| self.refilled(*bucket, now) < self.burst);
            if buckets.len() >= MAX_BUCKETS {
                return Err(busy(format!(
                    "`{}` is rate limited for too many callers at once",
                    call.tool
                )));
            }
        }
        let bucket = buckets.entry(key).or_insert((self.burst, now));
        let tokens = self.refilled(*bucket, now);
        if tokens >= 1.0 {
            *bucket = (tokens - 1.0, now);
            return Ok(None);
        }
        *bucket = (tokens, now);
        let wait = Duration::from_secs_f64((1.0 - tokens) / self.per_second.max(f64::MIN_POSITIVE));
        Err(self.per.refusal(call.tool, self.per_second, "", wait))
    }
}

impl<C: Send + Sync + 'static> Middleware<C> for RateLimit {
    fn before<'a>(&'a self, _ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(std::future::ready(self.admit(call)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::identity::{Claims, RequestInfo};

    fn call_from<'a>(args: &'a Value, request: &'a RequestInfo) -> CallInfo<'a> {
        CallInfo {
            tool: "search",
            action: None,
            args,
            request,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn each_caller_spends_their_own_bucket() {
        let limit = RateLimit::new(1.0, 2, Per::Caller);
        let args = Value::Null;
        let alice = RequestInfo::in_memory().with_claims(Claims::for_subject("alice", ["x"]));
        let bob = RequestInfo::in_memory().with_claims(Claims::for_subject("bob", ["x"]));
        assert!(limit.admit(&call_from(&args, &alice)).is_ok());
        assert!(limit.admit(&call_from(&args, &alice)).is_ok());
        let refused = limit
            .admit(&call_from(&args, &alice))
            .expect_err("alice's burst is spent");
        assert!(refused.to_string().contains("for each caller"), "{refused}");
        assert!(
            limit.admit(&call_from(&args, &bob)).is_ok(),
            "bob's bucket is full"
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            limit.admit(&call_from(&args, &alice)).is_ok(),
            "a token came back"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_per_tool_limit_is_shared_by_every_caller() {
        let limit = RateLimit::new(1.0, 1, Per::Tool);
        let args = Value::Null;
        let alice = RequestInfo::in_memory().with_claims(Claims::for_subject("alice", ["x"]));
        let bob = RequestInfo::in_memory().with_claims(Claims::for_subject("bob", ["x"]));
        assert!(limit.admit(&call_from(&args, &alice)).is_ok());
        assert!(limit.admit(&call_from(&args, &bob)).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn buckets_stay_bounded_when_callers_come_and_go() {
        let limit = RateLimit::new(1000.0, 1, Per::Caller);
        let args = Value::Null;
        for n in 0..MAX_BUCKETS + 10 {
            let caller = RequestInfo::in_memory().with_session_id(format!("s{n}"));
            let verdict = limit.admit(&call_from(&args, &caller));
            if n == MAX_BUCKETS {
                assert!(verdict.is_err(), "every bucket is in use this instant");
                // A millisecond later the first buckets are full again, and are dropped.
                tokio::time::advance(Duration::from_millis(1)).await;
            } else {
                assert!(verdict.is_ok(), "caller {n}");
            }
        }
        let buckets = limit
            .buckets
            .lock()
            .map_or(usize::MAX, |buckets| buckets.len());
        assert!(buckets <= MAX_BUCKETS, "{buckets} buckets");
    }
}
