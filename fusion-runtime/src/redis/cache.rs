//! `impl CacheStore for RedisStore`: the answers of `#[mcp_tool(cache = "..")]` shared by
//! every replica (`.cache_store(redis.clone())`), one run of a burst across the fleet, and
//! invalidations every replica sees at once.
//!
//! Keys, under the store's prefix (`fusion:` by default), `<tool>` the tool's name (or
//! `group.action`) and `<key>` the runtime's key of the call, each kept as is when it is
//! short and plain, else replaced by `#` and its SHA-256:
//!
//! | key | what |
//! |---|---|
//! | `cache:{<tool>}:gen` | the tool's generation (a counter, no expiry): `invalidate` is one `INCR` |
//! | `cache:{<tool>}:entry:<key>` | a hash: `g` the generation it was stored in, `t` when (Redis's clock, ms), `v` the answer (JSON); expires after its keep |
//! | `cache:{<tool>}:fill:<key>` | `<generation>:<token>` of the replica running the call, expiring with its lease |
//!
//! The braces are a Redis Cluster hash tag: a tool's keys share one hash slot (one node),
//! since each script reads the generation with the entry or the fill lock; different
//! tools spread over the nodes. The tool's segment has no braces of its own, and the keys
//! differ only after it, so the three share their slot whatever the prefix. (A prefix with
//! a tag of its own takes over: `{app}:` puts every key of the store in one slot, on one
//! node; an empty `{}` in it would hash whole keys, and split a tool's keys.)
//!
//! An entry of an older generation is no entry: an invalidation drops every entry of the
//! tool at once, and the next `put` of the key overwrites it (otherwise it expires). Each
//! step is one Lua script (atomic, one round trip). The generation keys have no expiry: a
//! Redis that evicts keys should use a `volatile-*` policy (or `noeviction`), under which
//! they stay; one evicted under `allkeys-*` could bring back entries it invalidated.

use std::{borrow::Cow, fmt::Write as _, sync::LazyLock, time::Duration};

use redis::Script;
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use tokio::time::Instant;

use super::{RedisStore, connection::Connection};
use crate::{
    cache::{CacheStore, CacheUnavailable, CachedEntry, Fill, Lookup},
    future::BoxFuture,
    lock::LockGuard,
};

/// The largest answer the store keeps, as JSON text: 1 MiB. A larger one is declined
/// (`put` answers `false`, the call's answer is returned but not stored), so that one
/// tool cannot fill Redis or slow every replica's reads of it.
pub const CACHE_VALUE_LIMIT: usize = 1024 * 1024;

/// The longest one cache command may take, on top of the connection's own response
/// timeout (which does not cover a reconnection in progress): a cache must never hold a
/// call up for long, it runs uncached instead.
const COMMAND_LIMIT: Duration = Duration::from_secs(1);

/// How long a replica waiting for another one's run sleeps between looks.
const FILL_POLL: Duration = Duration::from_millis(25);

/// The longest tool name or key kept as is in a Redis key.
const PLAIN_MAX: usize = 128;

/// The Lua both `GET` and `FILL` open with: the tool's generation (`gen`) and, when the
/// entry is of that generation and at most `ARGV[1]` ms old on Redis's clock, a return of
/// `{<$tag> gen, age_ms, value}`.
macro_rules! fresh_entry_lua {
    ($($tag:literal)?) => {
        concat!(
            r"
local gen = redis.call('GET', KEYS[1]) or '0'
local entry = redis.call('HMGET', KEYS[2], 'g', 't', 'v')
if entry[1] == gen and entry[2] and entry[3] then
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  local age = now - tonumber(entry[2])
  if age < 0 then age = 0 end
  if age <= tonumber(ARGV[1]) then
    return {",
            $($tag, ", ",)?
            r"gen, string.format('%.0f', age), entry[3]}
  end
end"
        )
    };
}

/// Reads the generation and the entry, if it is of that generation and young enough:
/// `{generation}` or `{generation, age_ms, value}`.
const GET: &str = concat!(
    fresh_entry_lua!(),
    r"
return {gen}"
);

/// Stores the entry if the generation is still the one given, stamped with Redis's clock.
const PUT: &str = r"
local gen = redis.call('GET', KEYS[1]) or '0'
if gen ~= ARGV[1] then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'g', gen, 't', string.format('%.0f', now), 'v', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return 1";

/// One look of a replica that wants to run a call: the entry if one is there and young
/// enough (`{'filled', generation, age_ms, value}`); else the run's lock if nobody of this
/// generation holds it (`{'run', generation}`, taken as `<generation>:<token>`); else
/// `{'wait', generation}`. A lock of an older generation is free: its run's answer would
/// be refused anyway.
const FILL: &str = concat!(
    fresh_entry_lua!("'filled'"),
    r"
local held = redis.call('GET', KEYS[3])
if held and string.sub(held, 1, string.len(gen) + 1) == gen .. ':' then
  return {'wait', gen}
end
redis.call('SET', KEYS[3], gen .. ':' .. ARGV[2], 'PX', ARGV[3])
return {'run', gen}"
);

/// Deletes the run's lock if this token still holds it (whatever its generation).
const RELEASE_FILL: &str = r"
local held = redis.call('GET', KEYS[1])
if held and string.sub(held, -string.len(ARGV[1])) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0";

static GET_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(GET));
static PUT_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(PUT));
static FILL_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(FILL));
static RELEASE_FILL_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(RELEASE_FILL));

/// A tool name or a key as a part of a Redis key: as is when it is short and made of
/// letters, digits, `_`, `-` and `.` (the runtime's keys are hex digests), else `#` and
/// its SHA-256, so that no value can reach into another part of the key.
fn segment(part: &str) -> Cow<'_, str> {
    let plain = !part.is_empty()
        && part.len() <= PLAIN_MAX
        && part
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'));
    if plain {
        return Cow::Borrowed(part);
    }
    let mut hashed = String::with_capacity(65);
    hashed.push('#');
    for byte in Sha256::digest(part.as_bytes()) {
        let _ = write!(hashed, "{byte:02x}");
    }
    Cow::Owned(hashed)
}

/// The Redis keys of one tool and key.
#[derive(Debug, PartialEq, Eq)]
struct Keys {
    generation: String,
    entry: String,
    fill: String,
}

impl Keys {
    fn new(prefix: &str, tool: &str, key: &str) -> Self {
        let (tool, key) = (segment(tool), segment(key));
        Self {
            generation: generation_key(prefix, &tool),
            entry: format!("{prefix}cache:{{{tool}}}:entry:{key}"),
            fill: format!("{prefix}cache:{{{tool}}}:fill:{key}"),
        }
    }
}

/// The key of a tool's generation (`tool` already a [`segment`]). The tool's segment
/// is the key's hash tag, shared with its entries and fill locks (Redis Cluster).
fn generation_key(prefix: &str, tool: &str) -> String {
    format!("{prefix}cache:{{{tool}}}:gen")
}

/// Milliseconds for Redis: at least 1 (`PX 0` is an error).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

/// The generation, and the entry if the reply has one: `[generation]` or
/// `[generation, age_ms, value]`. An entry this build cannot read is no entry.
fn lookup_from(reply: &[String]) -> Result<Lookup, CacheUnavailable> {
    let generation = reply
        .first()
        .and_then(|generation| generation.parse::<u64>().ok())
        .ok_or_else(|| {
            CacheUnavailable::new(format!("an unexpected reply from Redis: {reply:?}"))
        })?;
    let entry = match reply {
        [_, age, value] => match (age.parse::<u64>(), serde_json::from_str::<Value>(value)) {
            (Ok(age), Ok(value)) => Some(CachedEntry::new(value, Duration::from_millis(age))),
            _ => None,
        },
        _ => None,
    };
    Ok(Lookup::new(entry, generation))
}

/// A Redis error as the reason the cache is unavailable.
fn unavailable(error: &redis::RedisError) -> CacheUnavailable {
    CacheUnavailable::new(format!("Redis: {error}"))
}

/// Runs one command, bounded by [`COMMAND_LIMIT`]. Dropping it part-way is safe: the
/// multiplexed connection discards an answer nobody waits for.
async fn bounded<T>(
    command: impl Future<Output = Result<T, redis::RedisError>>,
) -> Result<T, CacheUnavailable> {
    match tokio::time::timeout(COMMAND_LIMIT, command).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(unavailable(&error)),
        Err(_) => Err(CacheUnavailable::new(format!(
            "Redis did not answer within {COMMAND_LIMIT:?}"
        ))),
    }
}

/// The lock of a run on Redis, held (or maybe being taken) by this replica: dropped, it
/// deletes the key if this token still holds it, on a task of its own.
struct FillHold {
    connection: Connection,
    redis_key: String,
    /// `:<token>`: how the lock's value ends while this replica holds it.
    suffix: String,
    /// Whether the key may be ours (a look in flight, or taken).
    maybe_held: bool,
}

impl Drop for FillHold {
    fn drop(&mut self) {
        if !self.maybe_held {
            return;
        }
        // No runtime (a guard dropped as the process ends): the lease lapses by itself.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut connection = self.connection.clone();
        let redis_key = std::mem::take(&mut self.redis_key);
        let suffix = std::mem::take(&mut self.suffix);
        // Never blocks in `Drop`; a release that fails leaves a lock that lapses with its
        // lease (the other replicas then run the call themselves).
        runtime.spawn(async move {
            let mut release = RELEASE_FILL_SCRIPT.key(&redis_key);
            release.arg(&suffix);
            if let Err(error) = bounded(release.invoke_async::<i64>(&mut connection)).await {
                tracing::debug!(target: "fusion::cache", reason = %error.reason, "cannot release a cache fill's lock on Redis; it lapses with its lease");
            }
        });
    }
}

/// The cache of a fleet (`.cache_store(redis.clone())`), shared by every replica that
/// connects to the Redis:
///
/// - **Reads and writes are one round trip each** (a Lua script). Ages are measured on
///   Redis's clock (`TIME`), so replicas agree on what is fresh.
/// - **An invalidation is one `INCR`** of the tool's generation: every replica's next
///   look finds none of the tool's entries, and a read that began before it stores
///   nothing.
/// - **One run for a burst across the fleet** ([`fill`](CacheStore::fill)): the first
///   replica takes a short lock on the key (`SET NX PX`, for the tool's timeout, at most
///   30 s, 10 s without one); the others look every 25 ms and answer with its entry once
///   stored. If the lock goes away without an entry (the run failed), one of them takes it
///   and runs; past the lease, each runs on its own.
/// - **Answers over [`CACHE_VALUE_LIMIT`] (1 MiB of JSON) are not stored.**
/// - **While Redis is unreachable** (an error, or no answer within a second), every step
///   answers [`CacheUnavailable`] and the call runs uncached; a write's invalidation is
///   then lost (logged on `fusion::cache`), and entries stored before it stay until
///   their keep ends.
///
/// ```no_run
/// use fusion_runtime::{prelude::*, redis::RedisStore};
///
/// /// The price of a stock: one run a burst, fleet-wide; fresh for 30 s.
/// #[mcp_tool(read_only, cache = "30s", stale_if_error = "10m", cache_scope = "public")]
/// async fn quote(symbol: String) -> String {
///     format!("{symbol}: 42.00")
/// }
///
/// /// Set the price of a stock: every replica's cached quotes are dropped.
/// #[mcp_tool(idempotent, invalidates = ["quote"])]
/// async fn set_quote(symbol: String, cents: u64) -> String {
///     format!("{symbol} set to {cents}")
/// }
///
/// # async fn build() -> Result<(), fusion_runtime::redis::RedisError> {
/// let redis = RedisStore::connect("redis://127.0.0.1:6379").await?;
/// let server = Server::builder("market", "1.0.0")
///     .cache_store(redis)
///     .tool(quote)
///     .tool(set_quote)
///     .build();
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
impl CacheStore for RedisStore {
    fn get<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        max_age: Duration,
    ) -> BoxFuture<'a, Result<Lookup, CacheUnavailable>> {
        Box::pin(async move {
            let keys = Keys::new(&self.prefix, tool, key);
            let mut connection = self.connection.clone();
            // Await: one read-only script; holds nothing.
            let reply: Vec<String> = bounded(
                GET_SCRIPT
                    .key(&keys.generation)
                    .key(&keys.entry)
                    .arg(u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX))
                    .invoke_async(&mut connection),
            )
            .await?;
            lookup_from(&reply)
        })
    }

    fn put<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        value: Value,
        keep: Duration,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool, CacheUnavailable>> {
        Box::pin(async move {
            let text = value.to_string();
            if text.len() > CACHE_VALUE_LIMIT {
                return Ok(false);
            }
            let keys = Keys::new(&self.prefix, tool, key);
            let mut connection = self.connection.clone();
            // Await: one script, atomic on Redis: a drop stores the whole entry or none.
            let stored: i64 = bounded(
                PUT_SCRIPT
                    .key(&keys.generation)
                    .key(&keys.entry)
                    .arg(generation)
                    .arg(text)
                    .arg(millis(keep))
                    .invoke_async(&mut connection),
            )
            .await?;
            Ok(stored == 1)
        })
    }

    fn invalidate<'a>(&'a self, tool: &'a str) -> BoxFuture<'a, Result<(), CacheUnavailable>> {
        Box::pin(async move {
            let redis_key = generation_key(&self.prefix, &segment(tool));
            let mut connection = self.connection.clone();
            // Await: one `INCR`: every replica's next look finds the new generation.
            let _: u64 = bounded(
                redis::cmd("INCR")
                    .arg(&redis_key)
                    .query_async(&mut connection),
            )
            .await?;
            Ok(())
        })
    }

    fn fill<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        max_age: Duration,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Fill, CacheUnavailable>> {
        Box::pin(async move {
            let keys = Keys::new(&self.prefix, tool, key);
            let token = format!("{:032x}", fastrand::u128(..));
            let mut hold = FillHold {
                connection: self.connection.clone(),
                redis_key: keys.fill.clone(),
                suffix: format!(":{token}"),
                maybe_held: false,
            };
            let mut connection = self.connection.clone();
            let max_age_ms = u64::try_from(max_age.as_millis()).unwrap_or(u64::MAX);
            // Waiting for another replica's run is bounded by the lease it holds the run
            // for: past it, this replica runs the call itself.
            // (A lease too long to add to a time never ends the wait.)
            let deadline = Instant::now().checked_add(lease);
            loop {
                // A drop while the look is in flight releases what it may have taken.
                hold.maybe_held = true;
                // Await: one look (the entry, or the lock taken if free).
                let reply: Vec<String> = bounded(
                    FILL_SCRIPT
                        .key(&keys.generation)
                        .key(&keys.entry)
                        .key(&keys.fill)
                        .arg(max_age_ms)
                        .arg(&token)
                        .arg(millis(lease))
                        .invoke_async(&mut connection),
                )
                // An error leaves `maybe_held`: a look that timed out may still take the
                // lock, and the drop releases it.
                .await?;
                match reply.first().map(String::as_str) {
                    Some("run") => return Ok(Fill::Run(Some(LockGuard::new(hold)))),
                    Some("filled") => {
                        hold.maybe_held = false;
                        if let Some(entry) = lookup_from(&reply[1..])?.entry {
                            return Ok(Fill::Filled(entry));
                        }
                        // An entry this build cannot read: run the call, unlocked.
                        return Ok(Fill::Run(None));
                    }
                    Some("wait") => hold.maybe_held = false,
                    _ => {
                        // A reply of another shape: release whatever it may be, and say why.
                        return Err(CacheUnavailable::new(format!(
                            "an unexpected reply from Redis: {reply:?}"
                        )));
                    }
                }
                if deadline.is_some_and(|deadline| Instant::now() + FILL_POLL >= deadline) {
                    // The holder ran past its lease: run it here, unlocked.
                    return Ok(Fill::Run(None));
                }
                // Await: a pause before the next look; holds nothing.
                tokio::time::sleep(FILL_POLL).await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_two_scripts_that_read_an_entry_return_it_in_their_own_shapes() {
        assert!(
            GET.contains("return {gen, string.format('%.0f', age), entry[3]}"),
            "{GET}"
        );
        assert!(GET.trim_end().ends_with("return {gen}"), "{GET}");
        assert!(
            FILL.contains("return {'filled', gen, string.format('%.0f', age), entry[3]}"),
            "{FILL}"
        );
        assert!(FILL.trim_end().ends_with("return {'run', gen}"), "{FILL}");
    }

    #[test]
    fn plain_names_and_hex_keys_are_kept_and_anything_else_is_hashed() {
        let digest = "ab".repeat(32);
        let keys = Keys::new("fusion:", "db_user.find_many", &digest);
        assert_eq!(keys.generation, "fusion:cache:{db_user.find_many}:gen");
        assert_eq!(
            keys.entry,
            format!("fusion:cache:{{db_user.find_many}}:entry:{digest}")
        );
        assert_eq!(
            keys.fill,
            format!("fusion:cache:{{db_user.find_many}}:fill:{digest}")
        );
        // A separator in a part cannot make two tools' keys meet.
        let odd = Keys::new("p:", "a:b", "k");
        assert!(odd.generation.starts_with("p:cache:{#"), "{odd:?}");
        assert_eq!(odd.generation.len(), "p:cache:{#}:gen".len() + 64);
        assert!(segment("{a}").starts_with('#'), "no braces of a tool's own");
        assert_ne!(segment("a:b"), segment("a:c"));
        assert!(segment("").starts_with('#'));
        assert!(segment(&"x".repeat(PLAIN_MAX + 1)).starts_with('#'));
        assert_eq!(segment(&"x".repeat(PLAIN_MAX)), "x".repeat(PLAIN_MAX));
    }

    /// What Redis Cluster hashes of a key: the first `{..}` with something in it, else the
    /// whole key.
    fn hash_tag(key: &str) -> &str {
        key.find('{')
            .and_then(|open| {
                let rest = &key[open + 1..];
                rest.find('}')
                    .filter(|close| *close > 0)
                    .map(|close| &rest[..close])
            })
            .unwrap_or(key)
    }

    #[test]
    fn a_tools_keys_share_one_hash_slot_and_tools_spread() {
        for prefix in ["fusion:", "", "app{1}:", "a{b:", "x}y:"] {
            for (tool, key) in [("quote", "ab12"), ("a:b", "k k"), ("{t}", "{k}"), ("", "")] {
                let keys = Keys::new(prefix, tool, key);
                let tag = hash_tag(&keys.generation);
                assert_eq!(hash_tag(&keys.entry), tag, "{keys:?}");
                assert_eq!(hash_tag(&keys.fill), tag, "{keys:?}");
                assert_eq!(
                    generation_key(prefix, &segment(tool)),
                    keys.generation,
                    "invalidate's key is the scripts' one"
                );
            }
        }
        assert_ne!(
            hash_tag(&Keys::new("fusion:", "quote", "k").generation),
            hash_tag(&Keys::new("fusion:", "news", "k").generation)
        );
    }

    #[test]
    fn replies_read_as_lookups() {
        let empty = lookup_from(&["7".to_owned()]).expect("a generation");
        assert_eq!(empty, Lookup::new(None, 7));
        let found = lookup_from(&["2".to_owned(), "1500".to_owned(), r#"{"a":1}"#.to_owned()])
            .expect("an entry");
        assert_eq!(
            found,
            Lookup::new(
                Some(CachedEntry::new(
                    json!({"a": 1}),
                    Duration::from_millis(1500)
                )),
                2
            )
        );
        // An answer this build cannot read is no entry, not a failure.
        let unreadable =
            lookup_from(&["2".to_owned(), "1".to_owned(), "{".to_owned()]).expect("a generation");
        assert_eq!(unreadable.entry, None);
        assert!(lookup_from(&[]).is_err());
        assert!(lookup_from(&["x".to_owned()]).is_err());
    }

    #[test]
    fn durations_are_whole_milliseconds_of_at_least_one() {
        assert_eq!(millis(Duration::ZERO), 1);
        assert_eq!(millis(Duration::from_secs(30)), 30_000);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }
}
