//! Rate limits for the fleet as a whole: one GCRA bucket per tool (or per tool and caller)
//! in Redis, updated atomically by a Lua script.

use std::time::Duration;

use redis::Script;

use super::{RedisStore, connection::Connection};
use crate::{
    future::BoxFuture,
    middleware::{
        CallInfo, Middleware, Verdict,
        rate::{Per, RateLimit},
    },
};

/// GCRA (the generic cell rate algorithm): the bucket is one timestamp, the theoretical
/// arrival time. A call is allowed when, after adding one emission interval, the
/// timestamp stays within `burst` intervals of now. Redis's own clock is used, so the
/// replicas' clocks do not matter. Returns `{1, 0}` when allowed, `{0, wait_ms}` otherwise.
const GCRA: &str = r"
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + tonumber(time[2]) / 1000
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local next_tat = tat + interval
local allow_at = next_tat - burst * interval
if allow_at > now then
  return {0, math.ceil(allow_at - now)}
end
redis.call('SET', KEYS[1], tostring(next_tat), 'PX', math.ceil(next_tat - now) + 1)
return {1, 0}";

impl RedisStore {
    /// A rate limit for the whole fleet: `per_second` calls a second on average with
    /// bursts of up to `burst`, counted in Redis per tool, whichever replica serves the
    /// call. Chosen the way [`middleware::rate_limit`](crate::middleware::rate_limit) is,
    /// for a tool, a group or the server.
    ///
    /// While Redis is unreachable each replica limits on its own, at the same rate (the
    /// fleet then allows up to that rate per replica), so that calls are still answered.
    pub fn rate_limit<C: Send + Sync + 'static>(
        &self,
        per_second: f64,
        burst: u32,
    ) -> impl Middleware<C> + use<C> {
        ClusterRateLimit::new(self, per_second, burst, Per::Tool)
    }

    /// [`rate_limit`](Self::rate_limit) for each caller separately (the token's subject,
    /// else the session), across the fleet.
    pub fn rate_limit_per_caller<C: Send + Sync + 'static>(
        &self,
        per_second: f64,
        burst: u32,
    ) -> impl Middleware<C> + use<C> {
        ClusterRateLimit::new(self, per_second, burst, Per::Caller)
    }
}

struct ClusterRateLimit {
    connection: Connection,
    prefix: String,
    script: Script,
    per_second: f64,
    /// Milliseconds between calls at the average rate.
    interval_ms: f64,
    burst: u32,
    per: Per,
    /// The limit this replica applies while Redis is unreachable.
    local: RateLimit,
}

impl ClusterRateLimit {
    fn new(store: &RedisStore, per_second: f64, burst: u32, per: Per) -> Self {
        let per_second = if per_second.is_finite() && per_second > 0.0 {
            per_second
        } else {
            f64::MIN_POSITIVE
        };
        Self {
            connection: store.connection.clone(),
            prefix: store.prefix.clone(),
            script: Script::new(GCRA),
            per_second,
            interval_ms: 1000.0 / per_second,
            burst: burst.max(1),
            per,
            local: RateLimit::new(per_second, burst.max(1), per),
        }
    }

    async fn admit(&self, call: &CallInfo<'_>) -> Verdict {
        // The script's one key (it builds none from its arguments): on a Redis Cluster,
        // each bucket lives on the node of its own slot.
        let key = format!("{}rate:{}", self.prefix, self.per.key(call));
        let mut connection = self.connection.clone();
        // Await: one script run; a drop here may still count the call, as an admitted
        // call counts (nothing is held).
        let verdict: Result<(i64, i64), _> = self
            .script
            .key(key)
            .arg(self.interval_ms)
            .arg(self.burst)
            .invoke_async(&mut connection)
            .await;
        match verdict {
            Ok((1, _)) => Ok(None),
            Ok((_, wait_ms)) => {
                let wait = Duration::from_millis(u64::try_from(wait_ms).unwrap_or(0).max(1));
                Err(self
                    .per
                    .refusal(call.tool, self.per_second, " across the fleet", wait))
            }
            Err(error) => {
                tracing::warn!(target: "fusion::rate_limit", %error, tool = call.tool, "Redis is unreachable; limiting on this replica alone");
                self.local.admit(call)
            }
        }
    }
}

impl<C: Send + Sync + 'static> Middleware<C> for ClusterRateLimit {
    fn before<'a>(&'a self, _ctx: &'a mut C, call: &'a CallInfo<'a>) -> BoxFuture<'a, Verdict> {
        Box::pin(self.admit(call))
    }
}
