//! The cache step of a call to a tool with `cache` (see [`crate::cache`]), once the call is
//! admitted (its scopes and middleware passed: a cached answer never skips them): a fresh
//! entry answers it; otherwise it joins the run of its key in progress, or leads a new
//! one, whose success is stored; a run that fails for a passing reason is answered with
//! the stale entry, when one is kept. And the invalidation that a writer's success sends.

use std::{sync::Arc, time::Duration};

use rmcp::model::ContentBlock;
use serde_json::Value;

use crate::{
    cache::{CacheStore, CacheUse, CachedEntry, Fill, Landed},
    call::Call,
    failure::{
        Failure, FailureKind, Target,
        classify::{Classification, ErrorClass},
        entry::FailureEntry,
        panic::CorrelationId,
    },
    future::BoxFuture,
    log::Redactor,
    meta::FAILURE_META_KEY,
    setup::{registered::RegisteredTool, server::Server},
    tool::output::Outcome,
};

use super::{attempts::Ran, render::CallReport, render::render, run::run_policy};

/// What admitting and running a call gave: a run to render, or an answer from the cache.
// `Ran` is every call's, kept inline: boxing it would cost an allocation a call; the rare
// cached answer is boxed instead.
#[allow(clippy::large_enum_variant)]
pub(super) enum Answer {
    /// The handler's outcome (or a refusal before it ran), to render; for a cached tool,
    /// how the cache was used.
    Ran(Ran, Option<CacheUse>),
    /// An answer from the cache, rendered already.
    Cached(Box<Cached>),
}

impl Answer {
    /// A call answered without running: refused, cancelled.
    pub(super) fn no_attempt(failure: Failure) -> Self {
        Self::Ran(Ran::no_attempt(failure), None)
    }
}

/// An answer from the cache.
pub(super) struct Cached {
    pub(super) report: CallReport,
    pub(super) how: CacheUse,
    /// For a stale answer, the warning it carries, as the log records it.
    pub(super) warning: Option<Failure>,
}

/// The key of a call to a cached tool: the caller (for a private scope) and the canonical
/// arguments, hashed. `None` runs it uncached: a tool without `cache`, or arguments with
/// number literals a JSON value cannot hold (two different literals can read as one
/// value, and must not share an answer).
pub(super) fn cache_key<C>(tool: &RegisteredTool<C>, args: &Value, call: &Call) -> Option<String> {
    let policy = tool.definition.spec.cache?;
    if !call.number_literals().is_empty() {
        return None;
    }
    let caller = match policy.scope {
        crate::cache::CacheScope::Public => "public".to_owned(),
        crate::cache::CacheScope::Private => format!("private {}", call.request().caller_key()),
    };
    Some(crate::canonical_json::fingerprint_with(&caller, args))
}

/// Serves a call to the cached tool at `slot` of `server`, under `key`, its context made
/// and its middleware passed.
// Each argument is a part of the call the step reads or moves into the shared run.
#[allow(clippy::too_many_arguments)]
pub(super) async fn serve<C: Send + Sync + 'static>(
    server: &Server<C>,
    tool: &RegisteredTool<C>,
    slot: &super::slot::Slot<C>,
    key: String,
    context: C,
    call: &Call,
    args: &Value,
    redactor: &Redactor,
    target: &Target<'_>,
) -> Answer {
    let inner = &*server.inner;
    // A tool a mounted upstream has withdrawn is refused here, before its cached answers
    // are looked at (its handler refuses it otherwise).
    if let Some(refused) = inner.mounts.withdrawn(tool.definition.spec.name) {
        return Answer::no_attempt(refused);
    }
    let Some(policy) = tool.definition.spec.cache else {
        let ran = run_policy(tool, &*inner.locks, &context, call, args, redactor, target).await;
        return Answer::Ran(ran, None);
    };
    let store = &*inner.cache.store;
    let name = &*tool.cache_name;
    // Await: the store's lookup. Holds nothing.
    let lookup = match store.get(name, &key, policy.keep()).await {
        Ok(lookup) => Some(lookup),
        // The call runs uncached, but identical calls in this process still share its run:
        // an upstream is most strained while the store is away too.
        Err(unavailable) => {
            tracing::warn!(target: "fusion::cache", tool = name, reason = %unavailable.reason, "the cache store is unavailable; the call runs uncached");
            None
        }
    };
    let generation = lookup.as_ref().map(|lookup| lookup.generation);
    let mut stale = None;
    if let Some(entry) = lookup.and_then(|lookup| lookup.entry) {
        if entry.age <= policy.ttl {
            if let Some(cached) = from_entry(entry.value.clone(), CacheUse::Hit) {
                return Answer::Cached(Box::new(cached));
            }
        } else {
            stale = Some(entry);
        }
    }
    let run = SharedRun {
        server: server.clone(),
        slot: slot.clone(),
        key: key.clone(),
        generation,
        context,
        call: call.for_shared_run(),
        args: args.clone(),
        redactor: redactor.clone(),
        tool_name: target.tool.to_owned(),
        action: target.action.map(str::to_owned),
    };
    let flight_key = format!("{name}\n{key}");
    let (flight, leads) = inner.cache.flights.join(&flight_key, || run.start());
    // Await: the shared run. A drop here leaves it; the run stops when its last caller
    // has left (the handler's future is dropped with it).
    let landed = flight.await;
    match &*landed {
        Landed::Filled(entry) => match from_entry(entry.value.clone(), CacheUse::Coalesced) {
            Some(cached) => Answer::Cached(Box::new(cached)),
            // The run read it before handing it over; never reached.
            None => Answer::no_attempt(Failure::internal_message(
                "a cached answer could not be read",
            )),
        },
        Landed::Ran { outcome, attempts } => {
            if let (Outcome::Failure(failure), Some(entry)) = (outcome, &stale)
                && serves_stale(failure)
                && let Some(cached) = stale_answer(entry, failure, target, redactor)
            {
                return Answer::Cached(Box::new(cached));
            }
            let how = if leads {
                CacheUse::Miss
            } else {
                CacheUse::Coalesced
            };
            let ran = Ran {
                outcome: outcome.clone(),
                attempts: *attempts,
            };
            Answer::Ran(ran, Some(how))
        }
    }
}

/// A cached answer as the cache stored it (`CallReport::to_json`); `None` if this build
/// cannot read it.
fn from_entry(value: Value, how: CacheUse) -> Option<Cached> {
    let (report, _) = CallReport::from_json(value)?;
    Some(Cached {
        report,
        how,
        warning: None,
    })
}

/// The run of one key, shared by every call that joins it: it owns what it needs, since
/// the call that started it may leave first.
struct SharedRun<C> {
    server: Server<C>,
    slot: super::slot::Slot<C>,
    key: String,
    /// The tool's generation when the first caller looked: what the run stores is refused
    /// if a writer invalidated the tool since. `None`: the store could not be reached, so
    /// the run neither waits for other replicas nor stores its answer.
    generation: Option<u64>,
    context: C,
    call: Call,
    args: Value,
    redactor: Redactor,
    tool_name: String,
    action: Option<String>,
}

impl<C: Send + Sync + 'static> SharedRun<C> {
    fn start(self) -> BoxFuture<'static, Landed> {
        Box::pin(self.run())
    }

    async fn run(self) -> Landed {
        let inner = &*self.server.inner;
        let tool = match &self.slot {
            super::slot::Slot::Registry(index) => inner.registry.tools.get(*index),
            super::slot::Slot::Added(tool) => Some(&**tool),
        };
        let (Some(tool), Some(policy)) = (tool, tool.and_then(|tool| tool.definition.spec.cache))
        else {
            let failure = Failure::internal_message("the cached tool is missing");
            return Landed::Ran {
                outcome: Outcome::Failure(failure),
                attempts: 0,
            };
        };
        let target = Target {
            tool: &self.tool_name,
            action: self.action.as_deref(),
        };
        let store = &*inner.cache.store;
        let name = &*tool.cache_name;
        // Await: the other replicas' run of the key, if one is in progress (a shared
        // store). Holds nothing; the lock it may return is held until the answer is stored.
        let fill = match self.generation {
            Some(_) => Some(
                store
                    .fill(name, &self.key, policy.ttl, fill_lease(tool))
                    .await,
            ),
            None => None,
        };
        let _turn = match fill {
            Some(Ok(Fill::Run(turn))) => turn,
            Some(Ok(Fill::Filled(entry)))
                if CallReport::from_json(entry.value.clone()).is_some() =>
            {
                return Landed::Filled(entry);
            }
            Some(Ok(Fill::Filled(_))) | None => None,
            Some(Err(unavailable)) => {
                tracing::warn!(target: "fusion::cache", tool = name, reason = %unavailable.reason, "the cache store is unavailable; the call runs without waiting for other replicas");
                None
            }
        };
        let ran = run_policy(
            tool,
            &*inner.locks,
            &self.context,
            &self.call,
            &self.args,
            &self.redactor,
            &target,
        )
        .await;
        if let (Some(generation), Some(stored)) = (
            self.generation,
            storable(tool, &target, &ran.outcome, &self.redactor),
        ) {
            // Await: the store's write. A drop here stores nothing or the whole answer.
            match store
                .put(name, &self.key, stored, policy.keep(), generation)
                .await
            {
                Ok(_) => {}
                Err(unavailable) => {
                    tracing::warn!(target: "fusion::cache", tool = name, reason = %unavailable.reason, "the cache store is unavailable; the answer was not stored");
                }
            }
        }
        Landed::Ran {
            outcome: ran.outcome,
            attempts: ran.attempts,
        }
    }
}

/// How long a replica may hold the run of a key before the others run it themselves: as
/// long as the run can last (each attempt's timeout, 10 s without one, and the longest
/// backoffs between them), at most 30 seconds: a burst waits no longer for another replica.
fn fill_lease<C>(tool: &RegisteredTool<C>) -> Duration {
    let attempt = tool.policy.timeout.unwrap_or(Duration::from_secs(10));
    let (attempts, backoff) = tool.policy.retry.map_or((1, Duration::ZERO), |retry| {
        (retry.attempts.max(1), retry.max_backoff)
    });
    attempt
        .saturating_mul(attempts)
        .saturating_add(backoff.saturating_mul(attempts - 1))
        .min(Duration::from_secs(30))
}

/// The answer to store for an outcome: a success, or a warning with its warning, rendered
/// as every caller of the key is answered; `None` for a failure.
fn storable<C>(
    tool: &RegisteredTool<C>,
    target: &Target<'_>,
    outcome: &Outcome,
    redactor: &Redactor,
) -> Option<Value> {
    match outcome {
        Outcome::Success(_) => {}
        Outcome::Failure(failure) if failure.is_warning() => {}
        Outcome::Failure(_) => return None,
    }
    let (rendered, _) = render(
        target,
        tool.definition.wrap_structured,
        Some(tool.max_output),
        outcome.clone(),
        // A success or a warning quotes no correlation id.
        &CorrelationId::new(0),
        redactor,
    );
    // Over the output limit: a failure now, never stored.
    match &rendered.failure {
        Some(failure) if !failure.is_warning() => None,
        _ => Some(rendered.report.to_json("")),
    }
}

/// Whether a failed run may be answered with a stale entry: the source is failing for a
/// passing reason (a transient error, a timeout, an open circuit), not the call.
fn serves_stale(failure: &Failure) -> bool {
    failure.is_transient() || matches!(failure.kind(), FailureKind::CircuitOpen { .. })
}

/// The stale entry as the answer: the stored result, a text block that says it is stale
/// and how old, and `_meta["fusion/failure"]` of class `warning`, code `stale`, its age.
fn stale_answer(
    entry: &CachedEntry,
    failure: &Failure,
    target: &Target<'_>,
    redactor: &Redactor,
) -> Option<Cached> {
    let (mut report, _) = CallReport::from_json(entry.value.clone())?;
    let age = whole_seconds(entry.age);
    let why = match failure.kind() {
        FailureKind::Timeout { .. } => "it timed out",
        FailureKind::CircuitOpen { .. } => "its source keeps failing, so calls to it are paused",
        _ => "its source is unavailable",
    };
    let note = format!(
        "This answer is stale: {target} failed just now ({why}), so this is its answer from {age} ago; it may be out of date."
    );
    report.result.content.push(ContentBlock::text(note.clone()));
    report.result.is_error = Some(false);
    let stale = FailureEntry {
        class: ErrorClass::Warning.as_str().to_owned(),
        code: Some("stale".to_owned()),
        retryable: false,
        retry_after_ms: None,
        correlation_id: None,
        hint: Some("call again later for a fresh answer".to_owned()),
        issues: None,
        age_ms: Some(u64::try_from(entry.age.as_millis()).unwrap_or(u64::MAX)),
    };
    let meta = report.result.meta.get_or_insert_with(Default::default);
    meta.0.insert(
        FAILURE_META_KEY.to_owned(),
        serde_json::to_value(&stale).unwrap_or(Value::Null),
    );
    // The log's record of it: a warning, with what failed (redacted, for operators).
    let warning = crate::middleware::refuse(
        Classification {
            class: ErrorClass::Warning,
            code: None,
            hint: None,
            retry_after: None,
        },
        format!(
            "answered with a stale result {age} old: {}",
            redactor.text(&failure.details())
        ),
    );
    Some(Cached {
        report,
        how: CacheUse::Stale,
        warning: Some(warning),
    })
}

/// `4 s`, `2 min 5 s`: an age as a model reads it.
fn whole_seconds(age: Duration) -> String {
    let seconds = age.as_secs();
    match (seconds / 60, seconds % 60) {
        (0, seconds) => format!("{seconds} s"),
        (minutes, 0) => format!("{minutes} min"),
        (minutes, seconds) => format!("{minutes} min {seconds} s"),
    }
}

/// The invalidation a writer (`invalidates = [..]`) owes once its handler may have run:
/// sent after a success or an unknown outcome, and also when the call is dropped part-way
/// (its write may have happened), from `Drop`, on a task of its own.
pub(super) struct Invalidation {
    store: Arc<dyn CacheStore>,
    names: Vec<Arc<str>>,
}

impl Invalidation {
    /// The invalidation of `tool`'s targets; `None` for a tool that invalidates nothing.
    pub(super) fn arm<C>(server: &Server<C>, tool: &RegisteredTool<C>) -> Option<Self> {
        if tool.invalidates.is_empty() {
            return None;
        }
        Some(Self {
            store: Arc::clone(&server.inner.cache.store),
            names: tool.invalidates.clone(),
        })
    }

    /// Sends it if the call may have written: a success (a warning too), or an unknown
    /// outcome. Refused, failed and cancelled calls wrote nothing.
    pub(super) async fn after(mut self, answer: &Answer) {
        let wrote = match answer {
            Answer::Ran(ran, _) => match &ran.outcome {
                Outcome::Success(_) => true,
                Outcome::Failure(failure) => failure.is_warning() || failure.is_unknown_outcome(),
            },
            Answer::Cached(_) => false,
        };
        if !wrote {
            self.names.clear();
            return;
        }
        // Await: one invalidation a target. A drop here leaves the ones not yet sent in
        // `names`, and `Drop` sends them.
        while let Some(name) = self.names.first().cloned() {
            if let Err(unavailable) = self.store.invalidate(&name).await {
                tracing::warn!(target: "fusion::cache", tool = &*name, reason = %unavailable.reason, "the cache store is unavailable; a write could not invalidate the cached answers it changed");
            }
            self.names.remove(0);
        }
    }
}

impl Drop for Invalidation {
    fn drop(&mut self) {
        if self.names.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::clone(&self.store);
        let names = std::mem::take(&mut self.names);
        runtime.spawn(async move {
            for name in names {
                let _ = store.invalidate(&name).await;
            }
        });
    }
}
