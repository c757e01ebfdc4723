//! [`RedisStore`] as a [`TaskStore`]: every replica answers for every task, and the work of
//! a replica that died is taken over (`tasks/takeover.rs`).
//!
//! Keys, under the store's prefix (`fusion:` by default):
//!
//! | key | what |
//! |---|---|
//! | `task:<id>` | the record (JSON); kept one TTL once the task ended |
//! | `task-lease:<id>` | the runner's token, expiring with its lease |
//! | `task-signals:<id>` | a hash: `cancel`, and `a:<key>` for each answer sent |
//! | `tasks:working` | the ids of unfinished tasks (the sweepers read it) |
//! | `tasks:index` | ids by expiry (`+inf` while running): the total cap; when full, the task that finished first is forgotten |
//! | `tasks:owner:<sha256>` | a caller's ids, by the end of their grace (`+inf` while running): the per-caller cap |
//!
//! and the channel `task-signals`, where a replica that sends a task a cancel or answers
//! publishes its id. Each change is one Lua script (atomic); the scripts name keys built
//! from the prefix, so the store is for a single Redis (or a primary with replicas), not
//! Redis Cluster.

use std::{collections::BTreeMap, fmt::Write as _, time::Duration};

use futures_util::StreamExt as _;
use redis::Script;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::{
    RedisStore,
    store::{RELEASE, RENEW},
};
use crate::{
    future::BoxFuture,
    tasks::{SignalListener, TaskRecord, TaskSignal, TaskSignals, TaskStore, TaskStoreError},
};

/// How long the subscription waits before connecting again after it failed.
const RESUBSCRIBE: Duration = Duration::from_millis(500);

/// Inserts a task held by its runner, within the caps. -1: full of running tasks; -2: the
/// caller is full. A store full in all forgets the task that finished first.
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
return 1";

/// Replaces the record of a task the runner holds; an end also ends the lease, the
/// signals and the task's place among the working, and starts its TTL.
const UPDATE: &str = r"
if redis.call('GET', KEYS[2]) ~= ARGV[3] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[4] == '1' then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[6])
  redis.call('DEL', KEYS[2], KEYS[6])
  redis.call('SREM', KEYS[3], ARGV[1])
  redis.call('ZADD', KEYS[4], ARGV[5], ARGV[1])
  if ARGV[7] == '1' then redis.call('ZADD', KEYS[5], ARGV[8], ARGV[1]) end
else
  redis.call('SET', KEYS[1], ARGV[2])
end
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

    fn key(&self, kind: &str, id: &str) -> String {
        format!("{}{kind}{id}", self.prefix)
    }

    fn owner_key(&self, requestor: Option<&str>) -> String {
        let mut key = format!("{}tasks:owner:", self.prefix);
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
            .key(format!("{}tasks:working", self.prefix))
            .key(format!("{}tasks:index", self.prefix))
            .key(self.owner_key(record.requestor.as_deref()));
        invocation
    }

    fn channel(&self) -> String {
        format!("{}task-signals", self.prefix)
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
    ) -> BoxFuture<'a, Result<(), TaskStoreError>> {
        Box::pin(async move {
            let json = record_json(&record)?;
            let (total, per_caller) = self.task_limits;
            let script = Script::new(INSERT);
            let inserted: i64 = self
                .record_keys(&script, &record)
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
                .arg(&self.prefix)
                .invoke_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            match inserted {
                -1 => Err(crate::tasks::StoreFull(total).into()),
                -2 => Err(TaskStoreError::CallerFull(per_caller)),
                _ => Ok(()),
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
            let renewed: i64 = Script::new(RENEW)
                .key(self.key("task-lease:", id))
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
    ) -> BoxFuture<'a, Result<bool, TaskStoreError>> {
        Box::pin(async move {
            let acquired: Option<String> = redis::cmd("SET")
                .arg(self.key("task-lease:", id))
                .arg(runner)
                .arg("NX")
                .arg("PX")
                .arg(self.lease_ms())
                .query_async(&mut self.connection.clone())
                .await
                .map_err(|error| unavailable(&error))?;
            Ok(acquired.is_some())
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
                .key(format!("{}tasks:working", self.prefix))
                .arg(&self.prefix)
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

    fn subscribe(&self, listener: SignalListener) -> Option<BoxFuture<'static, ()>> {
        let client = self.client.clone();
        let channel = self.channel();
        Some(Box::pin(async move {
            loop {
                // Await: connecting and subscribing; a failure is tried again, and the
                // runners meanwhile find their signals when they renew their leases.
                let subscribed = async {
                    let mut pubsub = client.get_async_pubsub().await?;
                    pubsub.subscribe(&channel).await?;
                    Ok::<_, redis::RedisError>(pubsub)
                }
                .await;
                match subscribed {
                    Ok(pubsub) => {
                        let mut messages = pubsub.into_on_message();
                        while let Some(message) = messages.next().await {
                            if let Ok(id) = message.get_payload::<String>() {
                                listener(&id);
                            }
                        }
                        tracing::debug!(target: "fusion::tasks", "the task signal subscription ended; subscribing again");
                    }
                    Err(error) => {
                        tracing::debug!(target: "fusion::tasks", %error, "cannot subscribe to task signals; trying again");
                    }
                }
                tokio::time::sleep(RESUBSCRIBE).await;
            }
        }))
    }
}
