//! The built server: its registry, context factory, middleware chains, per-tool policies
//! and counters, and what it answers about itself. The builder is in `setup/builder.rs`;
//! the call pipeline that every transport and the tester go through is in `pipeline/`.

use std::{sync::Arc, time::Duration};

use crate::{
    failure::Failure, failure::panic as recover, idempotency::IdempotencyStore,
    metrics::MetricsSnapshot, policy::Circuit, setup::catalog::Catalog, setup::registry::Registry,
    tool::ToolDefinition, validate::Limits,
};

/// A built MCP server: its tools and how to make a context for each call.
///
/// Cheap to clone (one `Arc`). Serve it with [`Server::serve_stdio`], or test it in memory
/// with [`Tester`](crate::testing::Tester).
pub struct Server<C = ()> {
    pub(crate) inner: Arc<Inner<C>>,
    /// Told each session's peer, when a transport serves calls past rmcp (Streamable
    /// HTTP's sessions); set on the copies that transport hands rmcp.
    pub(crate) session_peers: Option<Arc<dyn SessionPeers>>,
}

impl<C> Clone for Server<C> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            session_peers: self.session_peers.clone(),
        }
    }
}

/// Keeps the peer of each session a transport serves, for the calls it serves itself.
pub(crate) trait SessionPeers: Send + Sync {
    /// The client of the session whose request carried `extensions` said it is
    /// initialized; `peer` reaches it.
    fn initialized(
        &self,
        extensions: &rmcp::model::Extensions,
        peer: &rmcp::Peer<rmcp::RoleServer>,
    );

    /// Records what the caller of the session whose request carried `extensions` is shown
    /// of the tools (a [`Shown`](crate::setup::visibility::Shown)'s fingerprint); what it
    /// was shown before, if the session was shown anything yet.
    fn swap_shown(&self, extensions: &rmcp::model::Extensions, fingerprint: u64) -> Option<u64>;
}

impl<C> Server<C> {
    #[cfg(feature = "http")]
    /// This server, telling `peers` of each session's peer.
    pub(crate) fn with_session_peers(&self, peers: Arc<dyn SessionPeers>) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            session_peers: Some(peers),
        }
    }
}

impl<C> std::fmt::Debug for Server<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.name)
            .field("version", &self.inner.version)
            .field(
                "tools",
                &self
                    .inner
                    .registry
                    .wire
                    .iter()
                    .map(|t| &t.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Builds the context of one call from what the transport knows about its caller.
pub(crate) type ContextFactory<C> = Arc<dyn Fn(&crate::identity::RequestInfo) -> C + Send + Sync>;

pub(crate) struct Inner<C> {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    pub(crate) registry: Registry<C>,
    pub(crate) limits: Limits,
    pub(crate) context: ContextFactory<C>,
    /// Set once a handler returns a fatal error.
    pub(crate) fatal: tokio::sync::watch::Sender<bool>,
    pub(crate) idempotency: Arc<dyn IdempotencyStore>,
    pub(crate) idempotency_window: Duration,
    /// The locks of `#[mcp_tool(serialize = "..")]` (`pipeline/serialize.rs`).
    pub(crate) locks: Arc<dyn crate::lock::LockStore>,
    /// The cache of `#[mcp_tool(cache = "..")]` and its runs in progress (`cache/`).
    pub(crate) cache: crate::cache::Caching,
    /// The `ttlMs` of list results under 2026-07-28 (`protocol/list_hints.rs`).
    pub(crate) list_ttl: Duration,
    /// The level of the event of a successful call.
    pub(crate) ok_level: tracing::Level,
    /// Whether error results carry the draft standard failure key too
    /// (`failure/tool_failure.rs`).
    pub(crate) draft_tool_failure: bool,
    /// The tools linked to an MCP Apps view: the listed name and the view's URI.
    pub(crate) app_links: std::collections::HashMap<String, String>,
    /// The client's `logging/setLevel`. One per server: over stdio a server has one
    /// client; over HTTP the last session to set it wins.
    pub(crate) log_level: std::sync::Mutex<Option<crate::call::LogLevel>>,
    /// Resources, prompts and completions (`setup/catalog.rs`).
    pub(crate) catalog: Catalog,
    /// Signs the request state of multi-round calls (2026-07-28).
    pub(crate) sealer: crate::rounds::state::Sealer,
    /// The tools that run as tasks, and the tasks.
    pub(crate) tasks: crate::tasks::Tasks,
    /// The environment variables `require_env` declared, for the banner's snippets.
    pub(crate) required_env: Vec<String>,
    /// What the surface may cost in tokens, checked by `Tester::assert_contract`.
    pub(crate) token_budget: Option<crate::contract::TokenBudget>,
    /// The SHA-256 of the server's contract, made on first use (`contract/surface.rs`).
    pub(crate) surface_digest: std::sync::OnceLock<String>,
    /// Which tools each caller is shown (`setup/visibility.rs`).
    pub(crate) visibility: crate::setup::visibility::Visibility,
    /// Tool search, when the server lists `search_tools` and `call_tool` in place of its
    /// tools (`search/`).
    pub(crate) tool_search: Option<crate::search::index::Searching>,
    /// The mounted upstreams, whose tools are listed only while they are up.
    pub(crate) mounts: crate::setup::mounts::Mounts,
}

impl<C: Send + Sync + 'static> Server<C> {
    /// The server's name, as sent in `serverInfo`.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the server was built with but probably should not have been, such as a group
    /// listed as one tool whose reads clients will see as destructive. Each is also logged
    /// when the server is built and written to stderr when it starts serving.
    ///
    /// ```
    /// use fusion_runtime::{BuildWarning, prelude::*};
    ///
    /// /// Find notes.
    /// #[mcp_tool(group = "notes", action = "search", read_only)]
    /// async fn search_notes(text: String) -> String {
    ///     text
    /// }
    ///
    /// /// Delete a note.
    /// #[mcp_tool(group = "notes", action = "delete", destructive)]
    /// async fn delete_note(id: i64) -> String {
    ///     format!("deleted {id}")
    /// }
    ///
    /// let server = Server::builder("notes", "1")
    ///     .tool(search_notes)
    ///     .tool(delete_note)
    ///     .build();
    /// assert!(matches!(
    ///     server.warnings(),
    ///     [BuildWarning::MixedGroupHints { group, .. }] if group == "notes"
    /// ));
    /// ```
    pub fn warnings(&self) -> &[crate::setup::error::BuildWarning] {
        &self.inner.registry.warnings
    }

    /// The server's version, as sent in `serverInfo`.
    pub fn version(&self) -> &str {
        &self.inner.version
    }

    /// The instructions sent in the `initialize` result, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The registered tools' names, in registration order (then the tools mounted
    /// upstreams added since the server started, in name order).
    pub fn tool_names(&self) -> Vec<String> {
        let mut names = self.inner.registry.names();
        let added = &self.inner.registry.added;
        if !added.is_empty() {
            let wire = added.wire(|_| true, |_| true);
            names.extend(wire.into_iter().map(|tool| tool.name.into_owned()));
        }
        names
    }

    /// The handlers the caller of `request` is shown, or `None` when every caller is shown
    /// every tool.
    pub(crate) fn shown(
        &self,
        request: &crate::identity::RequestInfo,
    ) -> Option<crate::setup::visibility::Shown> {
        let registry = &self.inner.registry;
        self.inner.visibility.shown(
            registry.tools.iter().map(|tool| &tool.definition.spec),
            request,
        )
    }

    /// `tools/list` as the caller of `request` is shown it: with tool search,
    /// `search_tools` and `call_tool`.
    pub(crate) fn tools_for(
        &self,
        request: &crate::identity::RequestInfo,
    ) -> std::borrow::Cow<'_, [rmcp::model::Tool]> {
        if let Some(search) = &self.inner.tool_search {
            return std::borrow::Cow::Borrowed(search.listed());
        }
        let listed = match self.shown(request) {
            None => std::borrow::Cow::Borrowed(self.tools()),
            Some(shown) => {
                let registry = &self.inner.registry;
                let list = self
                    .inner
                    .visibility
                    .list(&shown, || registry.shown_wire(&shown));
                std::borrow::Cow::Owned(list.to_vec())
            }
        };
        let listed = self.inner.mounts.listed(listed);
        let added = &self.inner.registry.added;
        if added.is_empty() {
            return listed;
        }
        let visibility = &self.inner.visibility;
        let mut listed = listed.into_owned();
        listed.extend(added.wire(
            |spec| visibility.shows(spec, request),
            |name| self.inner.mounts.is_listed(name),
        ));
        std::borrow::Cow::Owned(listed)
    }

    /// The tools as `tools/list` describes them, as the server was built: its own, and the
    /// tools its upstreams offered at start. The tools an upstream added since are in
    /// [`tool_names`](Self::tool_names) and in each caller's `tools/list`, not here.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        &self.inner.registry.wire
    }

    /// One tool's definition.
    pub fn tool(&self, name: &str) -> Option<&ToolDefinition<C>> {
        self.inner
            .registry
            .tools
            .iter()
            .map(|tool| &tool.definition)
            .find(|handler| handler.spec.name == name)
    }

    /// A fresh context from the server's factory, for `request`'s caller.
    pub(crate) fn make_context(
        &self,
        request: &crate::identity::RequestInfo,
    ) -> Result<C, Failure> {
        let factory = &self.inner.context;
        recover::catch_sync(|| factory(request)).map_err(Failure::panic)
    }

    /// The resources, prompts and completions.
    pub(crate) fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The level the client set with `logging/setLevel`, if it did.
    pub(crate) fn log_level(&self) -> Option<crate::call::LogLevel> {
        self.inner.log_level.lock().ok().and_then(|level| *level)
    }

    /// Records the level the client set with `logging/setLevel`.
    pub(crate) fn set_log_level(&self, level: crate::call::LogLevel) {
        if let Ok(mut current) = self.inner.log_level.lock() {
            *current = Some(level);
        }
    }

    /// Resolves once a handler has returned a fatal error: the process must end (exit
    /// code 70) after the answer to that call is written.
    pub async fn fatal_error(&self) {
        let mut receiver = self.inner.fatal.subscribe();
        // `wait_for` fails only when the sender is gone, and the server owns it.
        let _ = receiver.wait_for(|fatal| *fatal).await;
    }

    /// The metrics of every tool handler: calls by outcome, latency percentiles, calls in
    /// flight, retries, circuit state.
    pub fn metrics(&self) -> MetricsSnapshot {
        let registry = &self.inner.registry;
        let snapshot = |tool: &crate::setup::registered::RegisteredTool<C>| {
            let spec = &tool.definition.spec;
            let name = match (spec.group, spec.action) {
                (Some(group), Some(action)) => format!("{group}/{action}"),
                _ => spec.name.to_owned(),
            };
            let open = tool.circuit.as_ref().is_some_and(Circuit::is_open);
            tool.metrics.snapshot(&name, open)
        };
        // Then the tools mounted upstreams added since the server started.
        let added = self.inner.registry.added.registered();
        MetricsSnapshot {
            tools: registry
                .tools
                .iter()
                .map(snapshot)
                .chain(added.iter().map(|tool| snapshot(tool)))
                .collect(),
            surface_digest: self.surface_digest().to_owned(),
            notifications_dropped: self.catalog().changes.dropped(),
        }
    }

    /// Whether a handler has returned a fatal error.
    pub fn has_failed_fatally(&self) -> bool {
        *self.inner.fatal.borrow()
    }
}
