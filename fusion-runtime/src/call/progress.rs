//! The last progress a call sent, and when: what the heartbeat (`pipeline/heartbeat.rs`)
//! waits from and repeats.

use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

/// The last progress a call sent, and when.
#[derive(Debug, Default)]
pub(crate) struct LastProgress {
    at: Option<Instant>,
    done: Option<f64>,
    total: Option<f64>,
}

/// Records progress `done` (of `total`) as sent now: the heartbeat waits a whole interval
/// from here.
pub(crate) fn sent(last: &Mutex<LastProgress>, done: f64, total: Option<f64>) {
    *last.lock().unwrap_or_else(PoisonError::into_inner) = LastProgress {
        at: Some(Instant::now()),
        done: Some(done),
        total,
    };
}

/// When progress was last sent, and the value and total a heartbeat sends now.
pub(crate) fn next_beat(last: &Mutex<LastProgress>) -> (Option<Instant>, f64, Option<f64>) {
    let last = last.lock().unwrap_or_else(PoisonError::into_inner);
    // The least increase: a reader sees the same value, the spec's "greater" holds.
    let next = last.done.map_or(0.0, f64::next_up);
    (last.at, next, last.total)
}
