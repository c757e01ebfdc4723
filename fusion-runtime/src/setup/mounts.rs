//! The health of the upstream servers whose tools are mounted (`upstream/`), as `tools/list`
//! needs it: the tools of an upstream that is down are left out of the list, and come back
//! when it recovers. Their calls still reach the pipeline, which answers them with when to
//! retry. The sessions' clients are told (`notifications/tools/list_changed`) each time.
//!
//! An upstream's tools can change while the server runs (`upstream/refresh.rs`). The tools
//! it had at start are in the registry, built once: each mount says how each of them is
//! listed now (as built, with what the upstream says of it now, or not at all). The tools it
//! added since are in [`AddedTools`], a table of its own that only `tools/list`, tool
//! search (its index built again after each change), the `task_after` of a call to a name
//! the server has no task for, and a call to a name the registry does not know look at, so
//! that a call to a local tool costs what it did. The surface contract and its digest are
//! the server's as built: what an upstream adds later is the upstream's to version, and a
//! fleet's replicas would disagree on it while their refreshes run. Compiled without the
//! `upstream` feature too, as empty lists.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{
        Arc, RwLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
};

use crate::{
    middleware::Middleware, policy::Policy, setup::registered::RegisteredTool, tool::ToolSpec,
};

/// How a tool an upstream had at start is listed now.
#[cfg_attr(not(feature = "upstream"), allow(dead_code))]
pub(crate) enum ListedNow {
    /// As the registry built it: the upstream says of it what it said at start.
    AsBuilt,
    /// As the upstream describes it now (its description or schemas changed).
    As(Box<rmcp::model::Tool>),
    /// Not listed: the upstream no longer offers it, or no longer says it is as safe to
    /// repeat as it said at start (its calls are refused, `upstream/mount.rs`).
    Not,
}

/// One mounted upstream, as the listing sees it.
pub(crate) trait MountHealth: Send + Sync {
    /// Whether the upstream is down now (its breaker is open).
    fn is_down(&self) -> bool;
    /// Whether the listed tool `name` is one of its tools (had at start, or added since).
    fn owns(&self, name: &str) -> bool;
    /// Whether any of its tools is listed otherwise than at start: the listing then asks
    /// [`listed_now`](Self::listed_now) of each.
    fn has_changed(&self) -> bool;
    /// How its tool `name` is listed now.
    fn listed_now(&self, name: &str) -> ListedNow;
    /// Why its tool `name`, one it had at start, is no longer called: the upstream withdrew
    /// it, or changed how safe it says it is to repeat (`upstream/mount.rs`).
    fn withdrawn(&self, name: &str) -> Option<crate::failure::Failure>;
    /// When it has not been reached since start and `name` is under its prefix: the
    /// failure a call to `name` answers (transient, with when it is tried again), in place
    /// of an unknown tool's.
    fn not_reached(&self, name: &str) -> Option<crate::failure::Failure>;
    /// The prefix its tools are listed under (`/readyz`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn prefix(&self) -> &str;
}

/// Every mounted upstream of a server, and who is told when one goes down or up.
#[derive(Clone, Default)]
pub(crate) struct Mounts {
    pub(crate) upstreams: Vec<Arc<dyn MountHealth>>,
    pub(crate) changed: Arc<ToolsChanged>,
    /// Whether a tool an upstream adds after start may run as a task (an upstream's policy,
    /// or the server's, has a `task_after`): the tasks extension is then advertised even
    /// when no tool known at start runs as one.
    pub(crate) tasks_later: bool,
    /// Ends the refresh of the upstreams' tools when the server (the last owner) is dropped.
    #[cfg_attr(not(feature = "upstream"), allow(dead_code))]
    pub(crate) refresh_stop: Arc<RefreshStop>,
}

/// What tells each session's client that its tool list changed
/// (`notifications/tools/list_changed`): one listener a transport serving the server,
/// added when it starts serving.
#[derive(Default)]
pub(crate) struct ToolsChanged(std::sync::Mutex<Vec<Arc<dyn Fn() + Send + Sync>>>);

impl ToolsChanged {
    pub(crate) fn listen(&self, listener: Arc<dyn Fn() + Send + Sync>) {
        if let Ok(mut listeners) = self.0.lock() {
            listeners.push(listener);
        }
    }

    /// Tells every listener; each sends its notifications on tasks of its own.
    #[cfg_attr(not(feature = "upstream"), allow(dead_code))]
    pub(crate) fn notify(&self) {
        let listeners = self
            .0
            .lock()
            .map(|listeners| listeners.clone())
            .unwrap_or_default();
        for listener in listeners {
            listener();
        }
    }
}

impl Mounts {
    /// Whether the server mounts no upstream.
    pub(crate) fn is_empty(&self) -> bool {
        self.upstreams.is_empty()
    }

    /// A line for each upstream, as `/readyz` reports them: `upstream <prefix> up` (or
    /// `down`). A server with an upstream down is still ready: its other tools answer.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn report(&self) -> String {
        self.upstreams
            .iter()
            .map(|mount| {
                let state = if mount.is_down() { "down" } else { "up" };
                format!("upstream {} {state}\n", mount.prefix())
            })
            .collect()
    }

    /// Whether the tool `name` is listed now: it is no tool of an upstream that is down,
    /// nor one its upstream no longer offers.
    pub(crate) fn is_listed(&self, name: &str) -> bool {
        !self.upstreams.iter().any(|mount| {
            mount.owns(name)
                && (mount.is_down()
                    || (mount.has_changed() && matches!(mount.listed_now(name), ListedNow::Not)))
        })
    }

    /// Why the tool `name` is no longer called, when it is one a mounted upstream had at
    /// start and has withdrawn since: asked before a cached answer is served, so that a
    /// withdrawn tool's answers are not (no cost without upstreams).
    pub(crate) fn withdrawn(&self, name: &str) -> Option<crate::failure::Failure> {
        self.upstreams
            .iter()
            .find_map(|mount| mount.withdrawn(name))
    }

    /// What a call to `name`, a tool the server does not know, answers: an unknown tool's
    /// `failure`, unless `name` is under the prefix of an upstream not reached since start
    /// (its tools are not known yet), which says when it is tried again.
    pub(crate) fn unknown(
        &self,
        name: &str,
        failure: crate::failure::FailureKind,
    ) -> crate::failure::Failure {
        self.upstreams
            .iter()
            .find_map(|mount| mount.not_reached(name))
            .unwrap_or_else(|| crate::failure::Failure::new(failure))
    }

    /// `tools` as they are listed now: without the tools of the upstreams that are down,
    /// and each tool of an upstream whose tools changed as it is now. Borrowed as it is
    /// while no upstream is down or changed (the usual case costs two looks at each mount).
    pub(crate) fn listed<'a>(
        &self,
        tools: Cow<'a, [rmcp::model::Tool]>,
    ) -> Cow<'a, [rmcp::model::Tool]> {
        let affected: Vec<&Arc<dyn MountHealth>> = self
            .upstreams
            .iter()
            .filter(|mount| mount.is_down() || mount.has_changed())
            .collect();
        if affected.is_empty() {
            return tools;
        }
        Cow::Owned(
            tools
                .iter()
                .filter_map(|tool| {
                    let Some(mount) = affected.iter().find(|mount| mount.owns(&tool.name)) else {
                        return Some(tool.clone());
                    };
                    if mount.is_down() {
                        return None;
                    }
                    match mount.listed_now(&tool.name) {
                        ListedNow::AsBuilt => Some(tool.clone()),
                        ListedNow::As(now) => Some(*now),
                        ListedNow::Not => None,
                    }
                })
                .collect(),
        )
    }
}

/// The tools the mounted upstreams added after the server started, by listed name: each
/// one registered as a tool of the registry is (its policy, breaker, cache and counters
/// kept from one refresh to the next while the upstream says the same of it), and listed
/// after the registry's tools.
pub(crate) struct AddedTools<C> {
    tools: RwLock<HashMap<&'static str, Added<C>>>,
    /// Counts the changes of the table: what was built from it (tool search's index) is
    /// built again when it moved.
    generation: AtomicU64,
    /// Whether any added tool has a `task_after` (`task_deadline`).
    any_task_deadline: AtomicBool,
}

/// A tool an upstream added since start, as tool search indexes it.
pub(crate) struct SearchedTool {
    /// As `tools/list` describes it.
    pub(crate) wire: rmcp::model::Tool,
    /// The name it is listed under.
    pub(crate) name: &'static str,
    /// Its tags (`upstream` and its prefix): words the listing does not show.
    pub(crate) tags: &'static [&'static str],
}

/// One tool an upstream added after start.
pub(crate) struct Added<C> {
    /// The prefix of the upstream that lists it.
    #[cfg_attr(not(feature = "upstream"), allow(dead_code))]
    pub(crate) prefix: Arc<str>,
    pub(crate) registered: Arc<RegisteredTool<C>>,
    /// How `tools/list` describes it.
    pub(crate) wire: rmcp::model::Tool,
}

impl<C> Default for AddedTools<C> {
    fn default() -> Self {
        Self {
            tools: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
            any_task_deadline: AtomicBool::new(false),
        }
    }
}

impl<C> AddedTools<C> {
    /// The added tool listed as `name`, if the caller is `shown` it.
    pub(crate) fn find(
        &self,
        name: &str,
        shown: impl Fn(&ToolSpec) -> bool,
    ) -> Option<Arc<RegisteredTool<C>>> {
        let tools = self.tools.read().ok()?;
        let added = tools.get(name)?;
        shown(&added.registered.definition.spec).then(|| Arc::clone(&added.registered))
    }

    /// How `tools/list` describes the added tools the caller is `shown` and `listed` lets
    /// through (an upstream that is down lists none), in name order.
    pub(crate) fn wire(
        &self,
        shown: impl Fn(&ToolSpec) -> bool,
        listed: impl Fn(&str) -> bool,
    ) -> Vec<rmcp::model::Tool> {
        let Ok(tools) = self.tools.read() else {
            return Vec::new();
        };
        let mut wire: Vec<rmcp::model::Tool> = tools
            .iter()
            .filter(|(name, added)| listed(name) && shown(&added.registered.definition.spec))
            .map(|(_, added)| added.wire.clone())
            .collect();
        wire.sort_by(|a, b| a.name.cmp(&b.name));
        wire
    }

    /// The added tools' records, in name order (for the metrics).
    pub(crate) fn registered(&self) -> Vec<Arc<RegisteredTool<C>>> {
        let Ok(tools) = self.tools.read() else {
            return Vec::new();
        };
        let mut named: Vec<(&'static str, Arc<RegisteredTool<C>>)> = tools
            .iter()
            .map(|(name, added)| (*name, Arc::clone(&added.registered)))
            .collect();
        named.sort_by_key(|(name, _)| *name);
        named
            .into_iter()
            .map(|(_, registered)| registered)
            .collect()
    }

    /// Whether no upstream added a tool.
    pub(crate) fn is_empty(&self) -> bool {
        self.tools.read().map_or(true, |tools| tools.is_empty())
    }

    /// Runs `change` on the table, under its lock (a refresh, `upstream/refresh.rs`).
    #[cfg_attr(not(feature = "upstream"), allow(dead_code))]
    pub(crate) fn change<R>(
        &self,
        change: impl FnOnce(&mut HashMap<&'static str, Added<C>>) -> R,
    ) -> Option<R> {
        let changed = self.tools.write().ok().map(|mut tools| {
            let changed = change(&mut tools);
            let any = tools
                .values()
                .any(|added| added.registered.task_deadline().is_some());
            self.any_task_deadline.store(any, Ordering::Release);
            changed
        });
        self.generation.fetch_add(1, Ordering::Release);
        changed
    }

    /// The `task_after` of the added tool `name`, if it has one: as the tasks of the tools
    /// known at build have theirs (`Tasks::new`). One atomic read while no added tool has
    /// one, so that a call to a tool that is no task costs what it did.
    pub(crate) fn task_deadline(&self, name: &str) -> Option<std::time::Duration> {
        if !self.any_task_deadline.load(Ordering::Acquire) {
            return None;
        }
        let tools = self.tools.read().ok()?;
        let (_, after) = tools.get(name)?.registered.task_deadline()?;
        Some(after)
    }

    /// How many times the table changed: read before the table, it names what was read.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The added tools a caller is `shown`, as `tools/list` describes them, with their
    /// listed name and the tags the listing does not show, in name order: what tool search
    /// indexes.
    pub(crate) fn searched(&self, shown: impl Fn(&ToolSpec) -> bool) -> Vec<SearchedTool> {
        let Ok(tools) = self.tools.read() else {
            return Vec::new();
        };
        let mut searched: Vec<SearchedTool> = tools
            .iter()
            .filter(|(_, added)| shown(&added.registered.definition.spec))
            .map(|(name, added)| SearchedTool {
                wire: added.wire.clone(),
                name,
                tags: added.registered.definition.spec.tags,
            })
            .collect();
        searched.sort_by_key(|tool| tool.name);
        searched
    }
}

/// What a tool added after start is registered with: what the builder completes every tool
/// with (the server's default policy and output limit, its global middleware). Middleware
/// scoped to a group or a tool names tools known at build, so none applies to it.
#[cfg_attr(not(feature = "upstream"), allow(dead_code))]
pub(crate) struct Completion<C> {
    pub(crate) policy: Policy,
    pub(crate) max_output: usize,
    pub(crate) global: Vec<Arc<dyn Middleware<C>>>,
}

#[cfg_attr(not(feature = "upstream"), allow(dead_code))]
impl<C> Completion<C> {
    pub(crate) fn register(&self, definition: crate::tool::ToolDefinition<C>) -> RegisteredTool<C> {
        let mut registered = RegisteredTool::new(definition);
        registered.complete(self.policy, self.max_output, self.global.clone(), None);
        registered
    }
}

/// Ends the tasks that refresh the mounted upstreams' tools (`upstream/refresh.rs`) when the
/// server that owns it is dropped.
#[derive(Default)]
pub(crate) struct RefreshStop(tokio_util::sync::CancellationToken);

impl RefreshStop {
    /// A token cancelled when this is dropped.
    #[cfg_attr(not(feature = "upstream"), allow(dead_code))]
    pub(crate) fn token(&self) -> tokio_util::sync::CancellationToken {
        self.0.clone()
    }
}

impl Drop for RefreshStop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}
