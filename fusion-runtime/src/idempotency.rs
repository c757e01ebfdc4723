//! Idempotency keys: a tool that names one of its arguments as its idempotency key
//! (`#[mcp_tool(idempotency_key = "request_id")]`) runs once per key within a window. A
//! repeated call returns the first call's result, also while the first call is still
//! running (the second waits for it). A model that retries a `create_order` after a lost
//! answer gets the order it already made, not a second one.
//!
//! Results are kept in memory by default ([`MemoryStore`]); several replicas share a store
//! by implementing [`IdempotencyStore`] over a shared database.

use std::{
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::sync::watch;

use crate::BoxFuture;

/// What [`IdempotencyStore::claim`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// Nobody ran this key within the window: run the call, then `complete` or `release`.
    Run,
    /// It ran already: here is its result (as stored by `complete`).
    Replay(Value),
}

/// Where results are kept per key. Implement it over a shared store (a database table, a
/// cache) when several replicas serve the same clients.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `key` for one run, or returns the stored result. A claim held by a call still
    /// running makes this wait for it.
    fn claim<'a>(&'a self, key: &'a str, window: Duration) -> BoxFuture<'a, Claim>;
    /// Stores the result of the run that claimed `key`.
    fn complete(&self, key: &str, result: Value);
    /// Gives up the claim (the run failed in a way worth running again).
    fn release(&self, key: &str);
}

enum Entry {
    /// A run is in progress; waiters watch for its result (`None` until it ends, then
    /// `Some(None)` if it was released).
    Running(
        watch::Receiver<Option<Option<Value>>>,
        watch::Sender<Option<Option<Value>>>,
    ),
    Done(Value, Instant),
}

/// The in-process store: results kept for the window, in memory.
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<String, Entry>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim<'a>(&'a self, key: &'a str, window: Duration) -> BoxFuture<'a, Claim> {
        Box::pin(async move {
            loop {
                let mut waiter = {
                    let Ok(mut entries) = self.entries.lock() else {
                        // A poisoned store cannot deduplicate; running is the safe default
                        // for the caller that gets here, and it is logged by the caller.
                        return Claim::Run;
                    };
                    let now = Instant::now();
                    // Forget results older than the window, so memory stays bounded.
                    entries.retain(|_, entry| match entry {
                        Entry::Done(_, at) => now.duration_since(*at) <= window,
                        Entry::Running(..) => true,
                    });
                    match entries.get(key) {
                        Some(Entry::Done(result, _)) => return Claim::Replay(result.clone()),
                        Some(Entry::Running(receiver, _)) => receiver.clone(),
                        None => {
                            let (sender, receiver) = watch::channel(None);
                            entries.insert(key.to_owned(), Entry::Running(receiver, sender));
                            return Claim::Run;
                        }
                    }
                };
                match waiter
                    .wait_for(Option::is_some)
                    .await
                    .map(|value| value.clone())
                {
                    Ok(Some(Some(result))) => return Claim::Replay(result),
                    // Released (or the runner vanished): try to claim it ourselves.
                    _ => continue,
                }
            }
        })
    }

    fn complete(&self, key: &str, result: Value) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(Entry::Running(_, sender)) =
                entries.insert(key.to_owned(), Entry::Done(result.clone(), Instant::now()))
        {
            sender.send_replace(Some(Some(result)));
        }
    }

    fn release(&self, key: &str) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(Entry::Running(_, sender)) = entries.remove(key)
        {
            sender.send_replace(Some(None));
        }
    }
}
