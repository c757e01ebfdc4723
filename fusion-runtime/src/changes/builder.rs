//! The builder's and the server's doors to the change bus: [`ServerBuilder::change_bus`],
//! [`ServerBuilder::notifier`] and [`Server::notifier`].

use std::sync::Arc;

use super::{model::ChangeBus, notifier::Notifier};
use crate::setup::{builder::ServerBuilder, server::Server};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// The bus that carries change notifications between replicas
    /// ([`changes`](crate::changes)): a resource updated, a list changed. By default this
    /// process alone ([`MemoryChangeBus`](crate::changes::MemoryChangeBus)); a fleet
    /// shares one, such as `fusion_runtime::redis::RedisStore` (feature `redis`), so that
    /// a subscriber on one replica hears of a change made through another.
    ///
    /// ```
    /// use fusion_runtime::{changes::MemoryChangeBus, prelude::*};
    ///
    /// let server = Server::builder("stock", "1.0.0")
    ///     .change_bus(MemoryChangeBus::new())
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn change_bus(self, bus: impl ChangeBus) -> Self {
        self.catalog.changes.set_bus(Arc::new(bus));
        self
    }

    /// The [`Notifier`] of the server this builder makes, to hand to the tools (in their
    /// context, say) before it is built. Its changes reach subscribers once the server
    /// serves; it follows a [`change_bus`](Self::change_bus) set later.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// let builder = Server::builder("stock", "1.0.0");
    /// let notifier = builder.notifier();
    /// let server = builder.build();
    /// # let _ = (notifier, server);
    /// ```
    pub fn notifier(&self) -> Notifier {
        Notifier {
            hub: Arc::clone(&self.catalog.changes),
        }
    }
}

impl<C: Send + Sync + 'static> Server<C> {
    /// Starts what the change bus needs while the server serves: the listener of the
    /// other replicas' changes, and (once) the hooks that tell the sessions when a mounted
    /// upstream goes down or up (each replica has its own view of its upstreams, so that
    /// change is told on this replica only) and when one of their tasks changes status.
    pub(crate) fn start_changes(&self) {
        let hub = &self.catalog().changes;
        hub.start();
        if !hub.first_start() {
            return;
        }
        if !self.inner.mounts.is_empty() {
            let hub = Arc::clone(hub);
            self.inner.mounts.changed.listen(Arc::new(move || {
                hub.tell(&super::model::Change::ToolsListChanged);
            }));
        }
        // A task's session is told of each of its statuses, wherever it runs.
        let hub = Arc::clone(hub);
        self.inner.tasks.on_status(Arc::new(move |record| {
            if let Some(session) = &record.session {
                let task = crate::tasks::detailed(record, None);
                let params = rmcp::model::TaskStatusNotificationParams::new(task);
                if let Ok(params) = serde_json::to_value(params) {
                    hub.task_status(session, params);
                }
            }
        }));
    }

    /// The [`Notifier`] that tells this server's subscribers, and those of every replica
    /// on its change bus, of a change.
    ///
    /// ```
    /// use fusion_runtime::{changes::Change, prelude::*};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let server = Server::builder("stock", "1.0.0").build();
    /// server.notifier().publish(Change::ToolsListChanged).await;
    /// # });
    /// ```
    pub fn notifier(&self) -> Notifier {
        Notifier {
            hub: Arc::clone(&self.catalog().changes),
        }
    }
}
