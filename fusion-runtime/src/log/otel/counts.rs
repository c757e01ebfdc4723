//! fusion's counters of each tool (calls by outcome, runs of the handler, retries, how the
//! cache answered), kept in atomics and read by the exported counters when the metrics are
//! collected, rather than recorded in the SDK on every call.
//!
//! A counter recorded in the SDK costs a lookup of its attribute set (hashed) on every
//! call; three of them a call were most of what OpenTelemetry cost a call that no trace
//! samples. Here a call costs a few atomic additions, and the SDK asks for the totals
//! (`fusion.tool.calls`, `fusion.tool.attempts`, `fusion.tool.retries`,
//! `fusion.tool.cache` are observable counters) once per export.
//!
//! The counts of a tool are the process's, not a server's: every server that registers a
//! tool of that name shares them (as the SDK's counters were shared), so a count is never
//! observed twice and survives the server that made it (the last export, on the way out,
//! runs after the server is gone). They are kept for the life of the process, one entry a
//! tool and action name, which the code declares: the set is bounded.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex, OnceLock, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use opentelemetry::{
    KeyValue,
    metrics::{AsyncInstrument, BoundHistogram},
};

use crate::cache::CacheUse;

/// The outcome of a successful first run: counted without a lock.
const OK: &str = crate::failure::outcome::OK;

/// The counts of one tool (or one action of a grouped tool).
#[derive(Debug, Default)]
pub(crate) struct ToolCounts {
    tool: &'static str,
    action: Option<&'static str>,
    ok: AtomicU64,
    /// Every outcome but `ok` (a failure, a replay, a retried success, ...).
    other_outcomes: Mutex<BTreeMap<&'static str, u64>>,
    attempts: AtomicU64,
    retries: AtomicU64,
    cache: [AtomicU64; CacheUse::ALL.len()],
    /// `mcp.server.operation.duration` bound to the attributes of the tool's successful
    /// calls, once the instruments exist ([`instruments::record_call`](super::instruments::record_call)).
    pub(super) ok_duration: OnceLock<BoundHistogram<f64>>,
}

/// Every tool's counts, in the order first registered.
static REGISTERED: Mutex<Vec<Arc<ToolCounts>>> = Mutex::new(Vec::new());

/// The counts of `tool` (its `action`, if grouped), shared with every server of the process
/// that registered the same.
pub(crate) fn of(tool: &'static str, action: Option<&'static str>) -> Arc<ToolCounts> {
    let mut registered = REGISTERED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(counts) = registered
        .iter()
        .find(|counts| counts.tool == tool && counts.action == action)
    {
        return Arc::clone(counts);
    }
    let counts = Arc::new(ToolCounts {
        tool,
        action,
        ..ToolCounts::default()
    });
    registered.push(Arc::clone(&counts));
    counts
}

impl ToolCounts {
    /// The tool's name (`gen_ai.tool.name`).
    pub(super) fn tool(&self) -> &'static str {
        self.tool
    }

    /// Counts one finished call: its outcome and the runs of its handler.
    pub(crate) fn call(&self, outcome: &'static str, attempts: u32) {
        if outcome == OK {
            self.ok.fetch_add(1, Ordering::Relaxed);
        } else {
            let mut outcomes = self
                .other_outcomes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *outcomes.entry(outcome).or_default() += 1;
        }
        self.attempts
            .fetch_add(u64::from(attempts), Ordering::Relaxed);
        self.retries
            .fetch_add(u64::from(attempts.saturating_sub(1)), Ordering::Relaxed);
    }

    /// Counts how the cache answered one call.
    pub(crate) fn cache(&self, how: CacheUse) {
        self.cache[how as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// `gen_ai.tool.name`, and `fusion.action` for an action.
    fn labels(&self) -> Vec<KeyValue> {
        let mut labels = Vec::with_capacity(3);
        labels.push(KeyValue::new("gen_ai.tool.name", self.tool));
        if let Some(action) = self.action {
            labels.push(KeyValue::new("fusion.action", action));
        }
        labels
    }
}

/// Every tool's counts as they are now.
fn registered() -> Vec<Arc<ToolCounts>> {
    REGISTERED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// `labels` with one more, for one observation.
fn with(labels: &[KeyValue], key: &'static str, value: &'static str) -> Vec<KeyValue> {
    let mut labels = labels.to_vec();
    labels.push(KeyValue::new(key, value));
    labels
}

/// `fusion.tool.calls`: finished calls by `fusion.outcome`.
pub(super) fn observe_calls(observer: &dyn AsyncInstrument<u64>) {
    for counts in registered() {
        let labels = counts.labels();
        let ok = counts.ok.load(Ordering::Relaxed);
        if ok > 0 {
            observer.observe(ok, &with(&labels, "fusion.outcome", OK));
        }
        let outcomes = counts
            .other_outcomes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for (outcome, count) in outcomes {
            observer.observe(count, &with(&labels, "fusion.outcome", outcome));
        }
    }
}

/// `fusion.tool.attempts`: runs of the handler, retries included.
pub(super) fn observe_attempts(observer: &dyn AsyncInstrument<u64>) {
    observe_total(observer, |counts| &counts.attempts);
}

/// `fusion.tool.retries`: runs beyond a call's first.
pub(super) fn observe_retries(observer: &dyn AsyncInstrument<u64>) {
    observe_total(observer, |counts| &counts.retries);
}

/// A tool's total, once it is not zero (as a counter appears with its first addition).
fn observe_total(observer: &dyn AsyncInstrument<u64>, total: fn(&ToolCounts) -> &AtomicU64) {
    for counts in registered() {
        let value = total(&counts).load(Ordering::Relaxed);
        if value > 0 {
            observer.observe(value, &counts.labels());
        }
    }
}

/// `fusion.tool.cache`: a cached tool's calls by `fusion.cache.result`.
pub(super) fn observe_cache(observer: &dyn AsyncInstrument<u64>) {
    for counts in registered() {
        let labels = counts.labels();
        for how in CacheUse::ALL {
            let value = counts.cache[how as usize].load(Ordering::Relaxed);
            if value > 0 {
                observer.observe(value, &with(&labels, "fusion.cache.result", how.as_str()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_registering_one_tool_share_its_counts_which_outlive_them() {
        let first = of("counts_test_tool", None);
        first.call(OK, 1);
        first.call("timeout", 3);
        drop(first);
        // A second server of the same tool: the same counts, the first's calls kept.
        let second = of("counts_test_tool", None);
        second.call(OK, 1);
        assert_eq!(second.ok.load(Ordering::Relaxed), 2);
        assert_eq!(second.attempts.load(Ordering::Relaxed), 5);
        assert_eq!(second.retries.load(Ordering::Relaxed), 2);
        assert_eq!(
            second
                .other_outcomes
                .lock()
                .map(|o| o.get("timeout").copied())
                .ok()
                .flatten(),
            Some(1)
        );
        // An action of that tool, or another tool, counts apart.
        let action = of("counts_test_tool", Some("list"));
        assert!(!Arc::ptr_eq(&second, &action));
        assert_eq!(action.ok.load(Ordering::Relaxed), 0);
        second.cache(CacheUse::Stale);
        assert_eq!(
            second.cache[CacheUse::Stale as usize].load(Ordering::Relaxed),
            1
        );
    }
}
