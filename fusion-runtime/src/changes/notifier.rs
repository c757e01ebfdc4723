//! The application's door: a [`Notifier`] tells the subscribers of every replica of a
//! change.

use std::sync::Arc;

use super::{hub::Hub, model::Change};

/// Tells the subscribers of every replica of a change. Cheap to clone; it may be made
/// before the server is built ([`ServerBuilder::notifier`](crate::ServerBuilder::notifier)),
/// to be handed to the tools.
#[derive(Clone)]
pub struct Notifier {
    pub(crate) hub: Arc<Hub>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Notifier").finish_non_exhaustive()
    }
}

impl Notifier {
    /// Tells this replica's subscribers of `change` now, and hands it to the bus for the
    /// others; it never waits for the bus. A bus that cannot be reached (or that is more
    /// than [`OUTGOING`](super::OUTGOING) changes behind) is logged (`fusion::changes`) and does not fail
    /// the caller: the subscribers of this replica were told, and those of the others
    /// re-list when they reconnect.
    pub async fn publish(&self, change: Change) {
        self.hub.publish(change);
    }

    /// [`publish`](Self::publish) of [`Change::ResourceUpdated`].
    pub async fn resource_updated(&self, uri: &str) {
        self.publish(Change::ResourceUpdated {
            uri: uri.to_owned(),
        })
        .await;
    }
}
