//! One subscriber's way out: a bounded queue of notifications and the task that sends them,
//! one at a time, in order. A subscriber that does not read holds up only its own queue;
//! when the queue is full the oldest notification is dropped and counted.

use std::{
    collections::{BTreeSet, VecDeque},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use rmcp::{
    Peer, RoleServer,
    model::{ServerNotification, SubscriptionFilter},
    service::SubscriptionSink,
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::model::{Change, SUBSCRIBER_QUEUE};

/// Where an outlet's notifications go.
pub(super) enum Target {
    /// A session of a client before 2026-07-28: list changes, and updates of the resources
    /// it subscribed to with `resources/subscribe` (`uris`).
    Session {
        peer: Peer<RoleServer>,
        uris: Mutex<BTreeSet<String>>,
    },
    /// A `subscriptions/listen` request of a 2026-07-28 client: what its accepted filter
    /// names. The sink adds the subscription's id to each notification.
    Listen(SubscriptionSink),
}

pub(super) struct Outlet {
    pub(super) target: Target,
    queue: Mutex<VecDeque<ServerNotification>>,
    wake: Notify,
    /// Cancelled when the subscriber is gone: its pump stops, and the hub forgets it.
    pub(super) closed: CancellationToken,
    dropped: Arc<AtomicU64>,
}

impl Outlet {
    /// An outlet to `target`, with its pump running on a task of its own until the
    /// subscriber goes away or `closed` is cancelled.
    pub(super) fn open(target: Target, dropped: Arc<AtomicU64>) -> Arc<Self> {
        let outlet = Arc::new(Self {
            target,
            queue: Mutex::new(VecDeque::new()),
            wake: Notify::new(),
            closed: CancellationToken::new(),
            dropped,
        });
        tokio::spawn(pump(Arc::clone(&outlet)));
        outlet
    }

    /// Whether the subscriber is gone.
    pub(super) fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
            || match &self.target {
                Target::Session { peer, .. } => peer.is_transport_closed(),
                Target::Listen(_) => false,
            }
    }

    /// Whether this outlet is the session of `peer`.
    pub(super) fn is_session_of(&self, peer: &Peer<RoleServer>) -> bool {
        match &self.target {
            Target::Session { peer: own, .. } => same_peer(own, peer),
            Target::Listen(_) => false,
        }
    }

    /// The legacy subscriptions of a session outlet (none for a listen stream).
    pub(super) fn uris(&self) -> Option<std::sync::MutexGuard<'_, BTreeSet<String>>> {
        match &self.target {
            Target::Session { uris, .. } => {
                Some(uris.lock().unwrap_or_else(PoisonError::into_inner))
            }
            Target::Listen(_) => None,
        }
    }

    /// Whether this subscriber asked to hear of `change`. Every session hears of list
    /// changes (it was told `listChanged` at its handshake); a listen stream hears of what
    /// its accepted filter names.
    pub(super) fn wants(&self, change: &Change) -> bool {
        match &self.target {
            Target::Session { uris, .. } => match change {
                Change::ResourceUpdated { uri } => uris
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .contains(uri),
                _ => true,
            },
            Target::Listen(sink) => accepts(sink.accepted(), change),
        }
    }

    /// Queues `notification`; when the queue is full, the oldest waiting one is dropped
    /// (and counted) for it.
    pub(super) fn push(&self, notification: ServerNotification) {
        {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            if queue.len() >= SUBSCRIBER_QUEUE {
                queue.pop_front();
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            queue.push_back(notification);
        }
        self.wake.notify_one();
    }

    fn pop(&self) -> Option<ServerNotification> {
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

fn accepts(filter: &SubscriptionFilter, change: &Change) -> bool {
    match change {
        Change::ResourceUpdated { uri } => filter
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| uris.iter().any(|accepted| accepted == uri)),
        Change::ToolsListChanged => filter.tools_list_changed == Some(true),
        Change::PromptsListChanged => filter.prompts_list_changed == Some(true),
        Change::ResourcesListChanged => filter.resources_list_changed == Some(true),
    }
}

/// Sends the outlet's notifications in order until its subscriber is gone. Each send is
/// awaited: a subscriber that does not read holds its own pump here, and its queue fills.
async fn pump(outlet: Arc<Outlet>) {
    loop {
        let Some(notification) = outlet.pop() else {
            tokio::select! {
                () = outlet.wake.notified() => continue,
                () = outlet.closed.cancelled() => return,
            }
        };
        let sent = match &outlet.target {
            Target::Session { peer, .. } => tokio::select! {
                sent = peer.send_notification(notification) => sent.map_err(|error| error.to_string()),
                () = outlet.closed.cancelled() => return,
            },
            Target::Listen(sink) => tokio::select! {
                sent = sink.send(notification) => sent.map_err(|error| error.to_string()),
                () = outlet.closed.cancelled() => return,
            },
        };
        if let Err(error) = sent {
            tracing::debug!(target: "fusion::changes", %error, "a subscriber is gone; its notifications stop");
            outlet.closed.cancel();
            return;
        }
    }
}

/// Whether two peers are one session's: their handshakes are one.
pub(crate) fn same_peer(a: &Peer<RoleServer>, b: &Peer<RoleServer>) -> bool {
    match (a.peer_info(), b.peer_info()) {
        (Some(a), Some(b)) => Arc::ptr_eq(&a, &b),
        _ => false,
    }
}
