//! The runner of one task on this replica: it drives the work, mirrors the task's
//! questions into the store (so that `tasks/get` on any replica shows them), renews its
//! lease, acts on the cancels and answers sent to the task from other replicas, and
//! writes how the task ended.

use std::{sync::Arc, time::Duration};

use rmcp::model::{ErrorData, TaskStatus};
use tokio_util::sync::CancellationToken;

use super::{
    outcome::{TaskOutcome, end_unknown},
    shared::{Running, Shared},
    store::TaskRecord,
};
use crate::{future::BoxFuture, rounds::questions::InputState};

/// How often the end of a task is tried again when the store fails as it is written.
const WRITE_ATTEMPTS: u32 = 5;

/// A task to run here: its record as stored, the token of this run, and its work.
pub(super) struct Launch {
    pub(super) record: TaskRecord,
    pub(super) runner: String,
    pub(super) work: BoxFuture<'static, TaskOutcome>,
    pub(super) cancel: CancellationToken,
    pub(super) input: Arc<InputState>,
}

/// How the runner's loop ended.
enum End {
    /// The work ended with this report.
    Done(Box<TaskOutcome>),
    /// `tasks/cancel` (from any replica).
    Cancelled,
    /// Another replica holds the task now (this lease lapsed): the work stops here
    /// without writing anything.
    Lost,
    /// The process is stopping: the task is handed over.
    HandedOver,
}

/// Registers the task as running here and spawns its runner.
pub(super) fn launch(shared: &Arc<Shared>, launch: Launch) {
    let poke = Arc::new(tokio::sync::Notify::new());
    let stop = CancellationToken::new();
    shared.running().insert(
        launch.record.id.clone(),
        Running {
            cancel: launch.cancel.clone(),
            input: Arc::clone(&launch.input),
            poke: Arc::clone(&poke),
            stop: stop.clone(),
        },
    );
    tokio::spawn(run(Arc::clone(shared), launch, poke, stop));
}

/// The future that pokes the runner of each task something is sent to, if the store has
/// such a channel.
pub(super) fn listen(shared: &Arc<Shared>) -> Option<BoxFuture<'static, ()>> {
    let weak = Arc::downgrade(shared);
    shared.store.subscribe(Arc::new(move |id: &str| {
        if let Some(shared) = weak.upgrade()
            && let Some(running) = shared.running().get(id)
        {
            running.poke.notify_one();
        }
    }))
}

async fn run(
    shared: Arc<Shared>,
    launch: Launch,
    poke: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
) {
    let Launch {
        mut record,
        runner,
        mut work,
        cancel,
        input,
    } = launch;
    let store = &shared.store;
    let id = record.id.clone();
    let renew_every = (store.lease_duration() / 3).max(Duration::from_millis(30));
    let mut renewal =
        tokio::time::interval_at(tokio::time::Instant::now() + renew_every, renew_every);
    renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let leased = store.is_shared();
    let mut seen = 0_u64;
    let end = loop {
        // Await: the work, and what may interrupt it. Every branch but the work's own
        // end holds nothing across its `.await`s but this task's record.
        tokio::select! {
            biased;
            () = cancel.cancelled() => break End::Cancelled,
            () = stop.cancelled() => break End::HandedOver,
            report = &mut work => break End::Done(Box::new(report)),
            version = input.pending_changed(seen) => {
                seen = version;
                let pending = input.pending();
                record.status = if pending.is_empty() { TaskStatus::Working } else { TaskStatus::InputRequired };
                record.input_requests = pending;
                match store.update(record.clone(), &runner).await {
                    Ok(false) => break End::Lost,
                    Ok(true) => shared.told(&record),
                    Err(_) => {}
                }
            }
            () = poke.notified() => apply_signals(&shared, &id, &cancel, &input).await,
            _ = renewal.tick(), if leased => {
                match store.renew(&id, &runner).await {
                    Ok(true) => {}
                    Ok(false) => break End::Lost,
                    Err(error) => tracing::warn!(target: "fusion::tasks", task = %id, %error, "cannot renew a task's lease"),
                }
                // Cancels and answers whose message did not arrive (a dropped
                // subscription) are found here, a third of a lease late at most.
                apply_signals(&shared, &id, &cancel, &input).await;
            }
        }
    };
    match end {
        End::Done(report) if report.internal => {
            let error = ErrorData::internal_error(report.message, None);
            record.finish(TaskStatus::Failed, None, serde_json::to_value(error).ok());
        }
        End::Done(report) => {
            let result = serde_json::to_value(&report.result).ok();
            record.finish(TaskStatus::Completed, result, None);
        }
        End::Cancelled => {
            drop(work);
            record.finish(TaskStatus::Cancelled, None, None);
        }
        End::Lost => {
            drop(work);
            tracing::warn!(target: "fusion::tasks", task = %id, "another replica took this task over (its lease lapsed); its work stops here");
            shared.running().remove(&id);
            return;
        }
        End::HandedOver if record.rerunnable => {
            drop(work);
            if let Err(error) = store.release(&id, &runner).await {
                tracing::warn!(target: "fusion::tasks", task = %id, %error, "cannot release a task's lease; another replica takes it over when the lease lapses");
            }
            tracing::info!(target: "fusion::tasks", task = %id, "handed over: another replica runs it again");
            shared.running().remove(&id);
            return;
        }
        End::HandedOver => {
            drop(work);
            end_unknown(&mut record);
        }
    }
    write_end(&shared, record, &runner).await;
    shared.running().remove(&id);
}

/// Acts on what was sent to the task from other replicas: a cancel, answers.
async fn apply_signals(shared: &Shared, id: &str, cancel: &CancellationToken, input: &InputState) {
    if !shared.store.is_shared() {
        return;
    }
    match shared.store.signals(id).await {
        Ok(signals) => {
            if signals.cancel {
                cancel.cancel();
            }
            input.deliver(signals.answers);
        }
        Err(error) => {
            tracing::debug!(target: "fusion::tasks", task = %id, %error, "cannot read what was sent to a task")
        }
    }
}

/// Writes a task's end, trying again while the store fails. If it never succeeds, the
/// lease lapses and another replica takes the task over (or ends it as unknown).
pub(super) async fn write_end(shared: &Shared, record: TaskRecord, runner: &str) {
    let mut pause = Duration::from_millis(50);
    for attempt in 1..=WRITE_ATTEMPTS {
        match shared.store.update(record.clone(), runner).await {
            Ok(true) => {
                shared.told(&record);
                return;
            }
            Ok(false) => {
                tracing::warn!(target: "fusion::tasks", task = %record.id, "the task's end was not written: another replica holds it now");
                return;
            }
            Err(error) if attempt == WRITE_ATTEMPTS => {
                tracing::error!(target: "fusion::tasks", task = %record.id, %error, "cannot write a task's end; it is taken over once its lease lapses");
            }
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
    }
}
