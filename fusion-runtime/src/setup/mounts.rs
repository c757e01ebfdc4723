//! The health of the upstream servers whose tools are mounted (`upstream/`), as `tools/list`
//! needs it: the tools of an upstream that is down are left out of the list, and come back
//! when it recovers. Their calls still reach the pipeline, which answers them with when to
//! retry. The sessions' clients are told (`notifications/tools/list_changed`) each time.
//! Compiled without the `upstream` feature too, as an empty list.

use std::{borrow::Cow, sync::Arc};

/// One mounted upstream, as the listing sees it.
pub(crate) trait MountHealth: Send + Sync {
    /// Whether the upstream is down now (its breaker is open).
    fn is_down(&self) -> bool;
    /// Whether the listed tool `name` is one of its tools.
    fn owns(&self, name: &str) -> bool;
    /// The prefix its tools are listed under (`/readyz`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    fn prefix(&self) -> &str;
}

/// Every mounted upstream of a server, and who is told when one goes down or up.
#[derive(Clone, Default)]
pub(crate) struct Mounts {
    pub(crate) upstreams: Vec<Arc<dyn MountHealth>>,
    pub(crate) changed: Arc<ToolsChanged>,
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

    /// Whether the tool `name` is listed now: it is no tool of an upstream that is down.
    pub(crate) fn is_listed(&self, name: &str) -> bool {
        !self
            .upstreams
            .iter()
            .any(|mount| mount.is_down() && mount.owns(name))
    }

    /// `tools` without the tools of the upstreams that are down: borrowed as it is while
    /// none is (the usual case costs one look at each breaker).
    pub(crate) fn listed<'a>(
        &self,
        tools: Cow<'a, [rmcp::model::Tool]>,
    ) -> Cow<'a, [rmcp::model::Tool]> {
        let down: Vec<&Arc<dyn MountHealth>> = self
            .upstreams
            .iter()
            .filter(|mount| mount.is_down())
            .collect();
        if down.is_empty() {
            return tools;
        }
        Cow::Owned(
            tools
                .iter()
                .filter(|tool| !down.iter().any(|mount| mount.owns(&tool.name)))
                .cloned()
                .collect(),
        )
    }
}
