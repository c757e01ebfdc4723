//! The runs of cached tools in progress, one per key: identical calls that come while one
//! runs join it instead of running the handler again ([`Flights::join`]).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
};

use futures_util::future::{FutureExt as _, Shared, WeakShared};

use super::store::{CacheStore, CachedEntry};
use crate::{future::BoxFuture, tool::output::Outcome};

/// The server's cache: the store and the runs in progress.
pub(crate) struct Caching {
    pub(crate) store: Arc<dyn CacheStore>,
    pub(crate) flights: Flights,
}

impl Caching {
    pub(crate) fn new(store: Arc<dyn CacheStore>) -> Self {
        Self {
            store,
            flights: Flights::default(),
        }
    }
}

/// How a shared run ended.
#[derive(Debug)]
pub(crate) enum Landed {
    /// The handler ran here, under its policy: the outcome and how many times it ran.
    Ran { outcome: Outcome, attempts: u32 },
    /// Another replica ran it while this one waited (a shared store's
    /// [`fill`](CacheStore::fill)): its answer.
    Filled(CachedEntry),
}

/// A run shared by every identical call that joined it: polled by whichever of them is
/// polled, dropped (the handler stopped) when the last of them is.
pub(crate) type Flight = Shared<Run>;

/// A shared run's own future.
type Run = BoxFuture<'static, Arc<Landed>>;

/// The runs in progress, by key. Each run removes its own entry when it ends or is
/// dropped, so the map holds only runs that some call still waits for.
#[derive(Clone, Default)]
pub(crate) struct Flights {
    runs: Arc<Mutex<Runs>>,
}

#[derive(Default)]
struct Runs {
    next_id: u64,
    by_key: HashMap<String, (u64, WeakShared<Run>)>,
}

impl Flights {
    /// The run of `key` in progress to wait for (`false`), or a new one made by `start`
    /// (`true`: this call leads it). No `.await` between the look and the insert, so two
    /// calls can never both lead one key.
    pub(crate) fn join(
        &self,
        key: &str,
        start: impl FnOnce() -> BoxFuture<'static, Landed>,
    ) -> (Flight, bool) {
        let mut runs = self.runs();
        if let Some(flight) = runs.by_key.get(key).and_then(|(_, weak)| weak.upgrade()) {
            return (flight, false);
        }
        runs.next_id = runs.next_id.wrapping_add(1);
        let id = runs.next_id;
        let leave = Leave {
            flights: self.clone(),
            key: key.to_owned(),
            id,
        };
        let run = start();
        let flight = async move {
            // Dropped when the run ends, or with it when every caller left.
            let _leave = leave;
            Arc::new(run.await)
        }
        .boxed()
        .shared();
        if let Some(weak) = flight.downgrade() {
            runs.by_key.insert(key.to_owned(), (id, weak));
        }
        (flight, true)
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, Runs> {
        // The map is whole after every statement that holds the lock.
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Removes a run's entry when the run ends or is dropped (unless a newer run of the key
/// took its place).
struct Leave {
    flights: Flights,
    key: String,
    id: u64,
}

impl Drop for Leave {
    fn drop(&mut self) {
        let mut runs = self.flights.runs();
        if runs
            .by_key
            .get(&self.key)
            .is_some_and(|(id, _)| *id == self.id)
        {
            runs.by_key.remove(&self.key);
        }
    }
}
