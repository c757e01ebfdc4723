//! Taking over the tasks of a replica that died (a shared store only).
//!
//! Every replica runs a sweeper: every third of a lease (one second at most) it asks the
//! store for orphans, unfinished tasks whose lease lapsed because their runner stopped
//! renewing it (the process was killed, ran out of memory, lost its machine). The first
//! replica to take an orphan's lease acts on it, by what the tool declares:
//!
//! - a cancel was sent to it: it ends `cancelled`;
//! - the tool is safe to run again (`read_only` or `idempotent`): the work runs again here,
//!   under the tool's policies, with the answers the task already had, and the task ends
//!   as any other;
//! - otherwise it ends `failed`, with `_meta["fusion/failure"]` class `unknown_outcome`
//!   (`replica_stopped`): the effect may or may not have happened, and it never runs a
//!   second time. An idempotency key does not make a tool safe to run again: it says
//!   "the same request", and the request may have had its effect.
//!
//! Taking the lease gives this runner a newer fencing token: the runner that stopped, if it
//! was only paused, can no longer write the task (`TaskStore::update`).

use std::{sync::Arc, time::Duration};

use rmcp::model::{ClientCapabilities, TaskStatus};
use tokio_util::sync::CancellationToken;

use super::{
    outcome::{TaskOutcome, end_unknown},
    runner,
    shared::Shared,
    store::TaskRecord,
};
use crate::{
    future::BoxFuture,
    rounds::questions::{Declared, InputState},
};

/// Runs a task's tool again from its record, for a replica that takes the task over: the
/// work, watching `cancel`, asking through `input`, under the lease's fencing token.
pub(crate) type Relaunch = Arc<
    dyn Fn(&TaskRecord, CancellationToken, Arc<InputState>, u64) -> BoxFuture<'static, TaskOutcome>
        + Send
        + Sync,
>;

/// Spawns the sweeper of this replica.
pub(super) fn spawn_sweeper(shared: Arc<Shared>, relaunch: Relaunch) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        let period = (shared.store.lease_duration() / 3).clamp(Duration::from_millis(50), Duration::from_secs(1));
        loop {
            // A little jitter, so that replicas started together do not sweep in step.
            let jitter = period.mul_f64(fastrand::f64() * 0.2);
            tokio::time::sleep(period + jitter).await;
            let orphans = match shared.store.orphans().await {
                Ok(orphans) => orphans,
                Err(error) => {
                    tracing::debug!(target: "fusion::tasks", %error, "cannot look for orphaned tasks");
                    continue;
                }
            };
            for id in orphans {
                adopt(&shared, &relaunch, &id).await;
            }
        }
    })
    .abort_handle()
}

/// Takes orphan `id` over, if this replica is first to its lease.
async fn adopt(shared: &Arc<Shared>, relaunch: &Relaunch, id: &str) {
    if shared.running().contains_key(id) {
        // Ours, and its renewal failed: the runner finds out at its next renewal.
        return;
    }
    if !shared.accepting.load(std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let store = &shared.store;
    let runner = shared.runner_token();
    // From here only this runner may write the task: a runner that was paused past its
    // lease and wakes up now is refused by the store.
    let fence = match store.acquire(id, &runner).await {
        Ok(Some(fence)) => fence,
        _ => return,
    };
    let mut record = match store.get(id).await {
        Ok(Some(record)) if !record.is_finished() => record,
        // Ended (or forgotten) between the sweep and the lease: nothing to do.
        _ => {
            let _ = store.release(id, &runner).await;
            return;
        }
    };
    let signals = match store.signals(id).await {
        Ok(signals) => signals,
        Err(_) => {
            let _ = store.release(id, &runner).await;
            return;
        }
    };
    if signals.cancel {
        record.finish(TaskStatus::Cancelled, None, None);
        runner::write_end(shared, record, &runner).await;
        return;
    }
    if !record.rerunnable {
        tracing::warn!(target: "fusion::tasks", task = %id, tool = %record.tool, "the replica running this task stopped; the tool is not safe to run again, so the task fails with an unknown outcome");
        end_unknown(&mut record);
        runner::write_end(shared, record, &runner).await;
        return;
    }
    record.runs = record.runs.saturating_add(1);
    record.status = TaskStatus::Working;
    record.input_requests.clear();
    tracing::warn!(target: "fusion::tasks", task = %id, tool = %record.tool, run = record.runs, "the replica running this task stopped; taken over: its work runs again here");
    let capabilities: ClientCapabilities = record
        .capabilities
        .clone()
        .and_then(|capabilities| serde_json::from_value(capabilities).ok())
        .unwrap_or_default();
    let input = InputState::rounds(signals.answers, Declared::from(&capabilities));
    input.park();
    let cancel = CancellationToken::new();
    let work = relaunch(&record, cancel.clone(), Arc::clone(&input), fence);
    if let Ok(false) = store.update(record.clone(), &runner).await {
        return;
    }
    runner::launch(
        shared,
        runner::Launch {
            record,
            runner,
            work,
            cancel,
            input,
        },
    );
}
