//! [`RedisStore`] as a [`TaskStore`]: every replica answers for every task, and the work of
//! a replica that died is taken over (`tasks/takeover.rs`).
//!
//! Keys, under the store's prefix (`fusion:` by default) and one hash tag, `{tasks}` (so
//! that every script's keys are in one slot of a Redis Cluster):
//!
//! | key | what |
//! |---|---|
//! | `{tasks}:task:<id>` | the record (JSON); kept one TTL once the task ended |
//! | `{tasks}:task-lease:<id>` | the runner's token, expiring with its lease: whether the runner lives |
//! | `{tasks}:task-holder:<id>` | a hash: `runner`, the newest holder's token, and `fence`, its fencing token: who may write the task; gone once it ended |
//! | `{tasks}:task-signals:<id>` | a hash: `cancel`, and `a:<key>` for each answer sent |
//! | `{tasks}:working` | the ids of unfinished tasks (the sweepers read it) |
//! | `{tasks}:index` | ids by expiry (`+inf` while running): the total cap; when full, the task that finished first is forgotten |
//! | `{tasks}:owner:<sha256>` | a caller's ids, by the end of their grace (`+inf` while running): the per-caller cap |
//!
//! and the channel `task-signals`, where a replica that sends a task a cancel or answers
//! publishes its id. Each change is one Lua script (atomic).
//!
//! A lease says whether the runner lives; the holder says who may write. A runner whose
//! lease lapsed (it was paused, or Redis was away) still writes while nobody took the task
//! over, and renews its lease when it can again; once another replica took the lease
//! (`acquire`, a newer fence), the old runner's writes are refused.

use std::{collections::BTreeMap, fmt::Write as _, time::Duration};

use redis::Script;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{RedisStore, store::RELEASE};
use crate::{
    future::BoxFuture,
    tasks::{SignalListener, TaskRecord, TaskSignal, TaskSignals, TaskStore, TaskStoreError},
};

/// Inserts a task held by its runner, within the caps. -1: full of running tasks; -2: the
/// caller is full. A store full in all forgets the task that finished first. Returns the
/// runner's fencing token (Redis's clock, in microseconds).
const INSERT: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[5])
if ARGV[8] == '1' then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', ARGV[5])
  if redis.call('ZCARD', KEYS[5]) >= tonumber(ARGV[7]) then return -2 end
end
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[6]) then
  local oldest = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', ARGV[9], 'LIMIT', 0, 1)
  if #oldest == 0 then return -1 end
  redis.call('ZREM', KEYS[4], oldest[1])
  redis.call('DEL', ARGV[10] .. 'task:' .. oldest[1])
end
if ARGV[8] == '1' then redis.call('ZADD', KEYS[5], '+inf', ARGV[1]) end
redis.call('ZADD', KEYS[4], '+inf', ARGV[1])
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
redis.call('SADD', KEYS[3], ARGV[1])
local now = redis.call('TIME')
local fence = string.format('%d', tonumber(now[1]) * 1000000 + tonumber(now[2]))
redis.call('HSET', KEYS[6], 'runner', ARGV[3], 'fence', fence)
return fence";

/// Replaces the record of a task the runner still holds (the newest holder, whether or
/// not its lease lapsed); an end also ends the lease, the holder, the signals and the
/// task's place among the working, and starts its TTL.
const UPDATE: &str = r"
if redis.call('HGET', KEYS[7], 'runner') ~= ARGV[3] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[6])
  redis.call('DEL', KEYS[2], KEYS[6], KEYS[7])
  redis.call('SREM', KEYS[3], ARGV[1])
  redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
  if ARGV[7] == '1' then redis.call('ZADD', KEYS[5], ARGV[8], ARGV[1]) end
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1";

/// Keeps the runner's lease while it is the task's newest holder (sets it again if it
/// lapsed while nobody took the task over). KEYS: the lease, the holder. ARGV: the
/// runner, the lease in milliseconds.
const RENEW_TASK: &str = r"
if redis.call('HGET', KEYS[2], 'runner') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1";

/// Takes the lease of an unfinished task whose lease lapsed, making the runner its newest
/// holder with a larger fencing token; nil when the lease is held or the task ended.
/// KEYS: the lease, the holder. ARGV: the runner, the lease in milliseconds.
const ACQUIRE: &str = r"
if redis.call('EXISTS', KEYS[2]) == 0 then return false end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
local now = redis.call('TIME')
local clock = tonumber(now[1]) * 1000000 + tonumber(now[2])
local last = tonumber(redis.call('HGET', KEYS[2], 'fence')) or 0
local fence = string.format('%d', math.max(clock, last + 1))
redis.call('HSET', KEYS[2], 'runner', ARGV[1], 'fence', fence)
return fence";

/// Keeps a finished task its client read for longer, unless its record changed since it
/// was read (its expiry is not the one read). KEYS: the record, the index. ARGV: the id,
/// the expiry read, the record kept, its new expiry, the milliseconds to it.
const TOUCH: &str = r"
local stored = redis.call('GET', KEYS[1])
if not stored then return 0 end
local ok, record = pcall(cjson.decode, stored)
if not ok or tonumber(record['expires_at_ms']) ~= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[5])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
return 1";

/// The unfinished tasks without a lease; forgets the ids of records gone.
const ORPHANS: &str = r"
local orphans = {}
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. 'task-lease:' .. id) == 0 then
    if redis.call('EXISTS', ARGV[1] .. 'task:' .. id) == 0 then
      redis.call('SREM', KEYS[1], id)
    else
      table.insert(orphans, id)
    end
  end
end
return orphans";

impl RedisStore {
    /// The most tasks kept at once: `total` in all, `per_caller` for one caller (an OAuth
    /// subject, else a session); by default 10,000 and 100. A finished task counts
    /// against its caller for [`FINISHED_GRACE`](crate::tasks::FINISHED_GRACE), and in
    /// all until it expires (`task_ttl`) or, once the store is full, until it is the one
    /// that finished first: it is then forgotten to make room. A caller over its cap, or a
    /// store full of running tasks, is refused.
    pub fn task_limits(mut self, total: usize, per_caller: usize) -> Self {
        self.task_limits = (total.max(1), per_caller.max(1));
        self
    }

    /// What every task key starts with: the prefix and the tasks' hash tag.
    fn task_prefix(&self) -> String {
        format!("{}{{tasks}}:", self.prefix)
    }

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}{id}", self.task_prefix())
    }

    fn owner_key(&self, requestor: Option<&str>) -> String {
        let mut key = format!("{}owner:", self.task_prefix());
        if let Some(requestor) = requestor {
            for byte in Sha256::digest(requestor.as_bytes()) {
                let _ = write!(key, "{byte:02x}");
            }
        }
        key
    }

    /// `script` with the keys of `record` that the insert and update scripts share, in
    /// their order: the record, its lease, the working set, the index, the owner's index.
    fn record_keys<'s>(
        &self,
        script: &'s Script,
        record: &TaskRecord,
    ) -> redis::ScriptInvocation<'s> {
        let mut invocation = script.key(self.key("task:", &record.id));
        invocation
            .key(self.key("task-lease:", &record.id))
            .key(format!("{}working", self.task_prefix()))
            .key(format!("{}index", self.task_prefix()))
            .key(self.owner_key(record.requestor.as_deref()));
        invocation
    }

    fn channel(&self) -> String {
        format!("{}task-signals", self.task_prefix())
    }
}

/// A score above every expiry (Unix milliseconds) and below `+inf`: the index's finished
/// tasks score below it.
const FINISHED_BELOW: u64 = 1 << 53;

/// A record as stored.
fn record_json(record: &TaskRecord) -> Result<String, TaskStoreError> {
    serde_json::to_string(record).map_err(|error| TaskStoreError::Unavailable(error.to_string()))
}

fn unavailable(error: &redis::RedisError) -> TaskStoreError {
    TaskStoreError::Unavailable(error.to_string())
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl TaskStore for RedisStore {
    fn insert<'a>(
        &'a self,
        record: TaskRecord,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<u64, TaskStoreError>> {
        Box::pin(async move {
            let json = record_json(&record)?;
            let (total, per_caller) = self.task_limits;
            let script = Script::new(INSERT);
            let inserted: i64 = self
                .record_keys(&script, &record)
                .key(self.key("task-holder:", &record.id))
                .arg(&record.id)
                .arg(json)
                .arg(runner)
                .arg(self.lease_ms())
                .arg(crate::tasks::now_ms())
                .arg(total)
                .arg(per_caller)
                .arg(if record.requestor.is_some() { "1" } else { "0" })
                // Below `+inf` (running) and above any expiry: the finished ones.
                .arg(FINISHED_BELOW)
                .arg(self.task_prefix())
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            match inserted {
                -1 => Err(crate::tasks::StoreFull(total).into()),
                -2 => Err(TaskStoreError::CallerFull(per_caller)),
                fence => {
                    // A task a failover could lose is not reported as created: the record
                    // left on the primary is an orphan the sweepers end.
                    super::connection::wait_replicated(
                        self.replica_wait,
                        &mut self.connection.clone(),
                    )
                    .await
                    .map_err(|error| unavailable(&error))?;
                    Ok(u64::try_from(fence).unwrap_or(0))
                }
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskStoreError>> {
        Box::pin(async move {
            let stored: Option<String> = redis::cmd("GET")
                .arg(self.key("task:", id))
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            // A record this build cannot read is treated as unknown rather than failing
            // every poll for good.
            Ok(stored
                .and_then(|json| serde_json::from_str::<TaskRecord>(&json).ok())
                .filter(|record| !record.is_expired()))
        })
    }

    fn update<'a>(
        &'a self,
        record: TaskRecord,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let json = record_json(&record)?;
            let finished = record.is_finished();
            let expires_at = record.expires_at_ms.unwrap_or(u64::MAX);
            let script = Script::new(UPDATE);
            let updated: i64 = self
                .record_keys(&script, &record)
                .key(self.key("task-signals:", &record.id))
                .key(self.key("task-holder:", &record.id))
                .arg(&record.id)
                .arg(json)
                .arg(runner)
                .arg(if finished { "1" } else { "0" })
                .arg(expires_at)
                .arg(record.ttl_ms.max(1))
                .arg(if record.requestor.is_some() { "1" } else { "0" })
                // The caller's place is free after the grace, or when the record expires.
                .arg(
                    crate::tasks::now_ms()
                        .saturating_add(millis(crate::tasks::FINISHED_GRACE))
                        .min(expires_at),
                )
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            // An end a failover could lose would change once reported: wait for the
            // replicas asked for (it is written either way).
            if updated == 1
                && finished
                && let Err(error) = super::connection::wait_replicated(
                    self.replica_wait,
                    &mut self.connection.clone(),
                )
                .await
            {
                tracing::warn!(target: "fusion::tasks", task = %record.id, %error, "the replicas did not acknowledge a task's end in time");
            }
            Ok(updated == 1)
        })
    }

    fn is_shared(&self) -> bool {
        true
    }

    fn lease_duration(&self) -> Duration {
        self.lease
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let renewed: i64 = Script::new(RENEW_TASK)
                .key(self.key("task-lease:", id))
                .key(self.key("task-holder:", id))
                .arg(runner)
                .arg(self.lease_ms())
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            Ok(renewed == 1)
        })
    }

    fn acquire<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, TaskStoreError>> {
        Box::pin(async move {
            let acquired: Option<u64> = Script::new(ACQUIRE)
                .key(self.key("task-lease:", id))
                .key(self.key("task-holder:", id))
                .arg(runner)
                .arg(self.lease_ms())
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            if acquired.is_some() {
                // A take-over a failover could lose: not acted on until replicated (the
                // lease lapses and the next sweep tries again).
                super::connection::wait_replicated(self.replica_wait, &mut self.connection.clone())
                    .await
                    .map_err(|error| unavailable(&error))?;
            }
            Ok(acquired)
        })
    }

    fn release<'a>(
        &'a self,
        id: &'a str,
        runner: &'a str,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let _: i64 = Script::new(RELEASE)
                .key(self.key("task-lease:", id))
                .arg(runner)
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            Ok(())
        })
    }

    fn orphans(&self) -> BoxFuture<'_, Result<Vec<String>, TaskStoreError>> {
        Box::pin(async move {
            Script::new(ORPHANS)
                .key(format!("{}working", self.task_prefix()))
                .arg(self.task_prefix())
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))
        })
    }

    fn signal<'a>(
        &'a self,
        id: &'a str,
        signal: TaskSignal,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let key = self.key("task-signals:", id);
            let mut pipe = redis::pipe();
            pipe.atomic();
            match signal {
                TaskSignal::Cancel => {
                    pipe.hset(&key, "cancel", "1").ignore();
                }
                TaskSignal::Answers(answers) => {
                    for (question, answer) in answers {
                        pipe.hset(&key, format!("a:{question}"), answer.to_string())
                            .ignore();
                    }
                }
            }
            // Kept while the task may run: it ends (and the hash with it) long before.
            pipe.pexpire(
                &key,
                i64::try_from(millis(Duration::from_secs(24 * 3600))).unwrap_or(i64::MAX),
            )
            .ignore();
            pipe.publish(self.channel(), id).ignore();
            let () = pipe
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            Ok(())
        })
    }

    fn signals<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<TaskSignals, TaskStoreError>> {
        Box::pin(async move {
            let fields: BTreeMap<String, String> = redis::cmd("HGETALL")
                .arg(self.key("task-signals:", id))
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            let mut signals = TaskSignals::default();
            for (field, value) in fields {
                if field == "cancel" {
                    signals.cancel = true;
                } else if let Some(question) = field.strip_prefix("a:")
                    && let Ok(answer) = serde_json::from_str::<Value>(&value)
                {
                    signals.answers.insert(question.to_owned(), answer);
                }
            }
            Ok(signals)
        })
    }

    fn touch<'a>(
        &'a self,
        read: &'a TaskRecord,
        kept: &'a TaskRecord,
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let (Some(read_expiry), Some(kept_expiry)) = (read.expires_at_ms, kept.expires_at_ms)
            else {
                return Ok(());
            };
            let json = record_json(kept)?;
            let _: i64 = Script::new(TOUCH)
                .key(self.key("task:", &kept.id))
                .key(format!("{}index", self.task_prefix()))
                .arg(&kept.id)
                .arg(read_expiry)
                .arg(json)
                .arg(kept_expiry)
                .arg(kept_expiry.saturating_sub(crate::tasks::now_ms()).max(1))
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            Ok(())
        })
    }

    fn subscribe(&self, listener: SignalListener) -> Option<BoxFuture<'static, ()>> {
        // The runners meanwhile find their signals when they renew their leases.
        Some(super::subscription::follow(
            self.client.clone(),
            self.channel(),
            "task signals",
            move |id| listener(id),
        ))
    }
}
