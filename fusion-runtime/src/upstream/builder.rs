//! [`ServerBuilder::upstream`], and the mounting of every upstream when the server starts.

use std::{collections::HashSet, sync::Arc};

use super::{Upstream, mount, refresh::Refresher};
use crate::{
    BuildError, ServerBuilder, StartupError,
    setup::{builder::MiddlewareScope, mounts::Completion},
};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Serves every tool of another MCP server as this server's own, named
    /// `<prefix>_<name>` (as a flat group's actions are), under this server's policies:
    /// the upstream's [`policy`](Upstream::policy) (a timeout, retries of what is safe to
    /// repeat, one breaker), its [`cache`](Upstream::cache), this server's middleware,
    /// visibility rules, output limit, call log and metrics. Its tools carry the tags
    /// `upstream` and `prefix`, for [`visibility`](Self::visibility) rules.
    ///
    /// The upstream is connected to when the server starts ([`start`](Self::start) and the
    /// `serve_*` methods; [`build`](Self::build) refuses a server with upstreams): its tools
    /// are listed then. One that cannot be reached within its
    /// [`connect_timeout`](Upstream::connect_timeout) is left out until it answers (its
    /// tools are added then), or, when it is [`required`](Upstream::required), fails the
    /// start with [`StartupError::Upstream`]. While its
    /// breaker is open, its tools are left out of `tools/list` and their calls answered at
    /// once with when to retry. Its tools are listed again when it sends
    /// `notifications/tools/list_changed` and every
    /// [`refresh_every`](Upstream::refresh_every): the sessions are told of each change.
    ///
    /// What the upstream answers is passed on: its results as they came, its error
    /// results as the tool's errors (transient when a fusion upstream marks them so). What
    /// goes wrong on the way is told as fusion tells its own tools' failures: a call that
    /// could not be sent is transient; one that may have reached the upstream and got no
    /// answer is retried only when the tool is read-only or idempotent, and otherwise
    /// answered as an unknown outcome, never sent twice.
    ///
    /// ```no_run
    /// use fusion_runtime::{prelude::*, upstream::Upstream};
    ///
    /// # async fn run() {
    /// let server = Server::builder("gateway", "1")
    ///     .upstream("billing", Upstream::http("https://billing.internal/mcp").bearer_token("s3cr3t"))
    ///     .upstream("notes", Upstream::stdio("python3", ["notes_server.py"]))
    ///     .start()
    ///     .await
    ///     .expect("both upstreams answer");
    /// assert!(server.tool_names().iter().any(|name| name.starts_with("billing_")));
    /// # }
    /// ```
    pub fn upstream(mut self, prefix: impl Into<String>, upstream: Upstream) -> Self {
        self.startup.upstreams.push((prefix.into(), upstream));
        self
    }
}

impl crate::setup::builder::Startup {
    /// What `build` says of each upstream, whose tools only `start` lists (`start` takes
    /// them out first).
    pub(crate) fn unstarted_upstreams(&self) -> impl Iterator<Item = BuildError> + '_ {
        self.upstreams
            .iter()
            .map(|(prefix, _)| BuildError::UpstreamNeedsStart(prefix.clone()))
    }
}

/// Mounts every upstream on `builder`: its tools added, its health given to the listing.
/// Returns what each mount's refresh needs ([`start_refreshes`] starts them once the server
/// is built).
pub(crate) async fn mount_all<C: Send + Sync + 'static>(
    mut builder: ServerBuilder<C>,
    upstreams: Vec<(String, Upstream)>,
) -> Result<(ServerBuilder<C>, Vec<Refresher<C>>), StartupError> {
    let completion = Arc::new(completion(&builder));
    let mut refreshers = Vec::new();
    for (prefix, upstream) in upstreams {
        let changed = Arc::clone(&builder.mounts.changed);
        let mounted = mount::mount::<C>(&prefix, &upstream, changed)
            .await
            .map_err(|reason| StartupError::Upstream {
                prefix: prefix.clone(),
                upstream: upstream.describe().to_owned(),
                reason,
            })?;
        if mounted.reached {
            tracing::info!(target: "fusion::upstream", prefix = %prefix, upstream = upstream.describe(), tools = mounted.definitions.len(), "upstream mounted");
        }
        for definition in mounted.definitions {
            builder = builder.add_definition(definition);
        }
        builder.mounts.tasks_later |= upstream.may_add_tasks(builder.policy);
        builder
            .mounts
            .upstreams
            .push(Arc::clone(&mounted.mount) as _);
        refreshers.push(Refresher {
            mount: mounted.mount,
            upstream,
            tags: mounted.tags,
            reached: mounted.reached,
            completion: Arc::clone(&completion),
        });
    }
    Ok((builder, refreshers))
}

/// What a tool an upstream adds after start is completed with (`setup/mounts.rs`): the
/// defaults and the global middleware as `builder` has them.
fn completion<C>(builder: &ServerBuilder<C>) -> Completion<C> {
    Completion {
        policy: builder.policy,
        max_output: builder.max_output,
        global: builder
            .middleware
            .iter()
            .filter(|(scope, _)| *scope == MiddlewareScope::All)
            .map(|(_, middleware)| Arc::clone(middleware))
            .collect(),
    }
}

/// Starts the refresh of each mount of `server` (`refresh.rs`), each ended when the server
/// is dropped.
pub(crate) fn start_refreshes<C: Send + Sync + 'static>(
    server: &crate::Server<C>,
    refreshers: Vec<Refresher<C>>,
) {
    let names: HashSet<String> = server.inner.registry.names().into_iter().collect();
    for refresher in refreshers {
        // Its own tools at start keep their names; any other name is another tool's.
        let mut taken = names.clone();
        for name in refresher.mount.at_start().tools.keys() {
            taken.remove(*name);
        }
        refresher.start(
            Arc::clone(&server.inner.registry.added),
            taken,
            server.inner.mounts.refresh_stop.token(),
        );
    }
}
