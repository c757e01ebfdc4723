//! An upstream's tools, listed again while the server runs: when the upstream sends
//! `notifications/tools/list_changed`, every [`Upstream::refresh_every`], and, for an
//! upstream not reached at start, until it answers.
//!
//! One task per mount, ended when the server is dropped; it also holds an HTTP upstream's
//! session GET stream (`get_stream.rs`), where such an upstream sends `list_changed` on its
//! own, so that the stream ends with the server too. A listing replaces what the mount
//! offers (`mount.rs`): a tool it had at start stays in the registry, listed as the upstream
//! describes it now, or left out when it is gone; a tool it added is registered in
//! [`AddedTools`], its record (breaker, cache, counters) kept while the upstream says the
//! same of its safety. Sessions are told (`list_changed`) when anything changed.
//!
//! What an upstream controls is bounded: a flood of `list_changed` costs one listing in
//! flight and at most one every [`MIN_SPACING`] (the notifications are one stored permit);
//! a listing is at most 1,000 tools, read under the connect timeout; the names are interned
//! and capped (`offered.rs`).

use std::{collections::HashSet, sync::Arc, time::Duration};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{
    Upstream,
    listing::{FIRST_RETRY, LAST_RETRY, list_tools},
    mount::{Mount, Texts, definition},
    offered::{Offered, same_treatment},
};
use crate::setup::mounts::{Added, AddedTools, Completion};

/// The least time between two listings of one upstream.
pub(crate) const MIN_SPACING: Duration = Duration::from_secs(1);

/// What a mount's refresh needs, made at start before the server is built.
pub(crate) struct Refresher<C> {
    pub(crate) mount: Arc<Mount>,
    pub(crate) upstream: Upstream,
    pub(crate) tags: &'static [&'static str],
    /// Whether the upstream answered at start.
    pub(crate) reached: bool,
    pub(crate) completion: Arc<Completion<C>>,
}

impl<C: Send + Sync + 'static> Refresher<C> {
    /// Starts the refresh task: it adds to `added`, never under a name in `taken` (the
    /// server's other tools), and ends when `stop` is cancelled.
    pub(crate) fn start(
        self,
        added: Arc<AddedTools<C>>,
        taken: HashSet<String>,
        stop: CancellationToken,
    ) {
        let mount = Arc::clone(&self.mount);
        let listens = self.upstream.identity.is_configured();
        tokio::spawn(async move {
            // The upstream's own messages (an HTTP upstream's GET stream) are heard by the
            // same task: they end together, with the server.
            let listen = async {
                if listens {
                    mount.link.listen().await;
                }
            };
            tokio::select! {
                () = stop.cancelled() => {}
                _ = async { tokio::join!(self.run(&added, &taken), listen) } => {}
            }
        });
    }

    async fn run(self, added: &AddedTools<C>, taken: &HashSet<String>) {
        let mut reached = self.reached;
        let mut retry = FIRST_RETRY;
        let mut last: Option<Instant> = None;
        loop {
            if !reached {
                self.mount.retry_in(retry);
            }
            let wait = if reached {
                self.upstream.refresh_every
            } else {
                Some(retry)
            };
            let told = self.mount.tools_changed.notified();
            match wait {
                Some(wait) => {
                    tokio::select! {
                        () = told => {}
                        () = tokio::time::sleep(wait) => {}
                    }
                }
                None => told.await,
            }
            if let Some(last) = last {
                tokio::time::sleep_until(last + MIN_SPACING).await;
            }
            last = Some(Instant::now());
            let listed =
                tokio::time::timeout(self.upstream.connect_timeout, list_tools(&self.mount.link))
                    .await;
            match listed {
                Ok(Ok(listed)) => {
                    if !reached {
                        tracing::info!(target: "fusion::upstream", prefix = %self.mount.prefix, upstream = self.upstream.describe(), "upstream reached: its tools are added");
                    }
                    reached = true;
                    retry = FIRST_RETRY;
                    // Up (`/readyz`, the listing) before its tools are added and the
                    // sessions told: a session that lists them at once sees them.
                    self.mount.mark_reached();
                    self.apply(listed, added, taken);
                }
                Ok(Err(error)) => self.missed(&mut retry, reached, &error.to_string()),
                Err(_) => self.missed(
                    &mut retry,
                    reached,
                    "no tool list within the connect timeout",
                ),
            }
        }
    }

    /// A listing that failed: what was listed before stays (the breaker, not the refresh,
    /// says when the upstream is down); an upstream not reached yet is tried again later.
    fn missed(&self, retry: &mut Duration, reached: bool, why: &str) {
        if reached {
            tracing::debug!(target: "fusion::upstream", prefix = %self.mount.prefix, reason = why, "the upstream's tools could not be listed again; they stay as they were");
        } else {
            tracing::debug!(target: "fusion::upstream", prefix = %self.mount.prefix, reason = why, retry_in = ?*retry, "upstream still not reached");
            *retry = (*retry * 2).min(LAST_RETRY);
        }
    }

    /// Makes `listed` what the upstream offers: its added tools registered, updated or
    /// dropped, and the sessions told if anything changed.
    fn apply(
        &self,
        listed: Vec<serde_json::Value>,
        added: &AddedTools<C>,
        taken: &HashSet<String>,
    ) {
        let prefix = self.mount.prefix.as_str();
        let mut offered = {
            let mut names = match self.mount.names.lock() {
                Ok(names) => names,
                Err(poisoned) => poisoned.into_inner(),
            };
            super::offered::offered(prefix, listed, &mut names)
        };
        leave_out(&mut offered, |name| taken.contains(name));
        let at_start = self.mount.at_start();
        let changed = added.change(|table| {
            // Another upstream's tool under the same name (prefixes `a` and `a_b` can both
            // make `a_b_c`) keeps it: the first to list it.
            leave_out(&mut offered, |name| {
                table
                    .get(name)
                    .is_some_and(|other| *other.prefix != *prefix)
            });
            table.retain(|name, entry| {
                *entry.prefix != *prefix
                    || (offered.tools.contains_key(name) && !at_start.tools.contains_key(name))
            });
            for name in &offered.order {
                let (Some(tool), false) =
                    (offered.tools.get(name), at_start.tools.contains_key(name))
                else {
                    continue;
                };
                match table.get_mut(name) {
                    // The same tool, described anew: its record (breaker, cache, counters)
                    // stays.
                    Some(entry)
                        if same_treatment(
                            entry.registered.definition.spec.annotations,
                            tool.hints(),
                        ) =>
                    {
                        entry.wire = tool.wire.clone();
                    }
                    _ => {
                        let definition = definition::<C>(
                            &self.mount,
                            &self.upstream,
                            name,
                            tool,
                            self.tags,
                            Texts::Left,
                        );
                        let registered = Arc::new(self.completion.register(definition));
                        table.insert(
                            name,
                            Added {
                                prefix: Arc::from(prefix),
                                registered,
                                wire: tool.wire.clone(),
                            },
                        );
                    }
                }
            }
            let tools = offered.tools.len();
            let changed = self.mount.offer(offered);
            if changed {
                tracing::info!(target: "fusion::upstream", prefix, tools, "the upstream's tools changed");
            }
            changed
        });
        if changed == Some(true) {
            self.mount.changed.notify();
        }
    }
}

/// Removes from `offered` the tools whose listed name `taken` says is another's.
fn leave_out(offered: &mut Offered, taken: impl Fn(&str) -> bool) {
    let before = offered.order.len();
    offered.order.retain(|name| {
        let keep = !taken(name);
        if !keep {
            offered.tools.remove(name);
        }
        keep
    });
    if offered.order.len() < before {
        tracing::warn!(target: "fusion::upstream", left_out = before - offered.order.len(), "tools whose listed name another tool of this server has are left out");
    }
}
