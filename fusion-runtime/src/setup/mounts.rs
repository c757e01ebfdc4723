//! The health of the upstream servers whose tools are mounted (`upstream/`), as `tools/list`
//! needs it: the tools of an upstream that is down are left out of the list, and come back
//! when it recovers. Their calls still reach the pipeline, which answers them with when to
//! retry. Compiled without the `upstream` feature too, as an empty list.

use std::{borrow::Cow, sync::Arc};

/// One mounted upstream, as the listing sees it.
pub(crate) trait MountHealth: Send + Sync {
    /// Whether the upstream is down now (its breaker is open).
    fn is_down(&self) -> bool;
    /// Whether the listed tool `name` is one of its tools.
    fn owns(&self, name: &str) -> bool;
    /// The prefix its tools are listed under.
    fn prefix(&self) -> &str;
}

/// Every mounted upstream of a server.
#[derive(Clone, Default)]
pub(crate) struct Mounts(pub(crate) Vec<Arc<dyn MountHealth>>);

impl Mounts {
    /// A line for each upstream, as `/readyz` reports them: `upstream <prefix> up` (or
    /// `down`). A server with an upstream down is still ready: its other tools answer.
    pub(crate) fn report(&self) -> String {
        self.0
            .iter()
            .map(|mount| {
                let state = if mount.is_down() { "down" } else { "up" };
                format!("upstream {} {state}\n", mount.prefix())
            })
            .collect()
    }

    /// `tools` without the tools of the upstreams that are down: borrowed as it is while
    /// none is (the usual case costs one look at each breaker).
    pub(crate) fn listed<'a>(
        &self,
        tools: Cow<'a, [rmcp::model::Tool]>,
    ) -> Cow<'a, [rmcp::model::Tool]> {
        let down: Vec<&Arc<dyn MountHealth>> =
            self.0.iter().filter(|mount| mount.is_down()).collect();
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
