//! This replica's subscribers, and its end of the change bus: a change made here is told
//! to them at once and published; a change published by another replica is told to them
//! when it arrives. Messages carry the replica that sent them, so that a replica does not
//! tell its subscribers twice of its own change.

use std::sync::{
    Arc, Mutex, PoisonError, RwLock,
    atomic::{AtomicU64, Ordering},
};

use rmcp::{
    Peer, RoleServer,
    model::{
        PromptListChangedNotification, ResourceListChangedNotification,
        ResourceUpdatedNotification, ResourceUpdatedNotificationParam, ServerNotification,
        TaskStatusNotification, TaskStatusNotificationParams, ToolListChangedNotification,
    },
    service::SubscriptionSink,
};
use serde::{Deserialize, Serialize};

use super::{
    memory::MemoryChangeBus,
    model::{Change, ChangeBus, OUTGOING},
    outlet::{Outlet, Target},
};

/// Where the transports serving the server find their sessions (an HTTP session's id, and
/// its peer), for list changes and task statuses: one source each.
pub(crate) type SessionSource =
    Arc<dyn Fn() -> Vec<(Option<String>, Peer<RoleServer>)> + Send + Sync>;

/// A message on the bus.
#[derive(Serialize, Deserialize)]
struct Message {
    /// The replica that sent it.
    from: String,
    #[serde(flatten)]
    body: Body,
}

/// What a message tells.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Body {
    /// A change, for every subscriber that asked for it.
    Change(Change),
    /// A task's new status (`notifications/tasks`), for the session that created it,
    /// wherever its runner runs now.
    TaskStatus {
        session: String,
        params: serde_json::Value,
    },
}

pub(crate) struct Hub {
    bus: RwLock<Arc<dyn ChangeBus>>,
    /// This replica's name on the bus.
    origin: String,
    /// Sessions that subscribed to resources, or were told of a list change.
    sessions: Mutex<Vec<Arc<Outlet>>>,
    /// Open `subscriptions/listen` streams.
    listens: Mutex<Vec<Arc<Outlet>>>,
    sources: Mutex<Vec<SessionSource>>,
    dropped: Arc<AtomicU64>,
    /// The task listening on the bus, once the server serves.
    listening: Mutex<Option<tokio::task::AbortHandle>>,
    /// Whether the server started serving once.
    started: std::sync::atomic::AtomicBool,
    /// The changes on their way to the bus (`carry`).
    outgoing: std::sync::OnceLock<tokio::sync::mpsc::Sender<String>>,
}

impl Default for Hub {
    fn default() -> Self {
        Self {
            bus: RwLock::new(Arc::new(MemoryChangeBus::new())),
            origin: crate::tasks::task_id(),
            sessions: Mutex::default(),
            listens: Mutex::default(),
            sources: Mutex::default(),
            dropped: Arc::default(),
            listening: Mutex::default(),
            started: std::sync::atomic::AtomicBool::new(false),
            outgoing: std::sync::OnceLock::new(),
        }
    }
}

impl Hub {
    pub(crate) fn set_bus(&self, bus: Arc<dyn ChangeBus>) {
        *self.bus.write().unwrap_or_else(PoisonError::into_inner) = bus;
    }

    fn bus(&self) -> Arc<dyn ChangeBus> {
        Arc::clone(&self.bus.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Notifications dropped from the queues of subscribers that did not read.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Starts listening on the bus, once, while a runtime is there to run it.
    pub(crate) fn start(self: &Arc<Self>) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let mut listening = self
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if listening.is_some() {
            return;
        }
        let hub = Arc::downgrade(self);
        let listener = Arc::new(move |text: &str| {
            if let Some(hub) = hub.upgrade() {
                hub.arrived(text);
            }
        });
        if let Some(task) = self.bus().subscribe(listener) {
            *listening = Some(tokio::spawn(task).abort_handle());
        }
    }

    /// Whether this is the first time the server starts serving (what is hooked up once).
    pub(crate) fn first_start(&self) -> bool {
        !self.started.swap(true, Ordering::SeqCst)
    }

    /// Stops listening on the bus (the server stops serving).
    pub(crate) fn stop(&self) {
        if let Some(task) = self
            .listening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }

    /// Tells this replica's subscribers, then hands the change to the task that publishes
    /// to the others (started on first use), without waiting for the bus.
    pub(crate) fn publish(self: &Arc<Self>, change: Change) {
        self.tell(&change);
        self.send(Body::Change(change));
    }

    /// Tells the session `session` (on this replica, or through the bus on the one that
    /// holds it) of a task's new status.
    pub(crate) fn task_status(self: &Arc<Self>, session: &str, params: serde_json::Value) {
        self.tell_session(session, &params);
        self.send(Body::TaskStatus {
            session: session.to_owned(),
            params,
        });
    }

    /// Hands `body` to the task that publishes to the other replicas.
    fn send(self: &Arc<Self>, body: Body) {
        let message = Message {
            from: self.origin.clone(),
            body,
        };
        let Ok(text) = serde_json::to_string(&message) else {
            return;
        };
        let outgoing = self.outgoing.get_or_init(|| {
            let (sender, receiver) = tokio::sync::mpsc::channel(OUTGOING);
            tokio::spawn(carry(Arc::downgrade(self), receiver));
            sender
        });
        if outgoing.try_send(text).is_err() {
            tracing::warn!(target: "fusion::changes", "the change bus is {OUTGOING} changes behind: a change was not published to the other replicas");
        }
    }

    /// A message from the bus: told here unless this replica sent it.
    fn arrived(&self, text: &str) {
        match serde_json::from_str::<Message>(text) {
            Ok(message) if message.from == self.origin => {}
            Ok(Message {
                body: Body::Change(change),
                ..
            }) => self.tell(&change),
            Ok(Message {
                body: Body::TaskStatus { session, params },
                ..
            }) => self.tell_session(&session, &params),
            Err(error) => {
                tracing::debug!(target: "fusion::changes", %error, "a message on the change bus that this build does not read");
            }
        }
    }

    /// Queues `change` for each of this replica's subscribers that wants it.
    pub(crate) fn tell(&self, change: &Change) {
        if !matches!(change, Change::ResourceUpdated { .. }) {
            // Every session hears of list changes: make sure each has an outlet.
            for (_, peer) in self.session_peers() {
                self.session(&peer);
            }
        }
        let mut outlets = self.live(&self.sessions);
        outlets.extend(self.live(&self.listens));
        for outlet in outlets {
            if outlet.wants(change) {
                outlet.push(notification(change));
            }
        }
    }

    /// The outlets of `list` whose subscribers are still there; the others are forgotten.
    fn live(&self, list: &Mutex<Vec<Arc<Outlet>>>) -> Vec<Arc<Outlet>> {
        let mut list = list.lock().unwrap_or_else(PoisonError::into_inner);
        list.retain(|outlet| {
            let gone = outlet.is_closed();
            if gone {
                outlet.closed.cancel();
            }
            !gone
        });
        list.clone()
    }

    /// Queues `notifications/tasks` for the session `session`, if this replica holds it.
    fn tell_session(&self, session: &str, params: &serde_json::Value) {
        let Some((_, peer)) = self
            .session_peers()
            .into_iter()
            .find(|(id, _)| id.as_deref() == Some(session))
        else {
            return;
        };
        match serde_json::from_value::<TaskStatusNotificationParams>(params.clone()) {
            Ok(params) => self
                .session(&peer)
                .push(ServerNotification::TaskStatusNotification(
                    TaskStatusNotification::new(params),
                )),
            Err(error) => {
                tracing::debug!(target: "fusion::changes", %error, "a task status on the change bus that this build does not read");
            }
        }
    }

    /// The sessions open now whose clients made the handshake (`initialize`): a client
    /// of 2026-07-28 makes none, and hears of changes on its `subscriptions/listen`
    /// streams only, as that revision says.
    fn session_peers(&self) -> Vec<(Option<String>, Peer<RoleServer>)> {
        let sources = self
            .sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        sources
            .iter()
            .flat_map(|source| source())
            .filter(|(_, peer)| !peer.is_transport_closed() && peer.peer_info().is_some())
            .collect()
    }

    /// A transport's sessions, told of list changes from now on.
    pub(crate) fn add_sessions(&self, source: SessionSource) {
        self.sources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(source);
    }

    /// The outlet of the session of `peer`, opened on first use. A session is known by its
    /// handshake, which its callers make sure it has.
    fn session(&self, peer: &Peer<RoleServer>) -> Arc<Outlet> {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(outlet) = sessions.iter().find(|outlet| outlet.is_session_of(peer)) {
            return Arc::clone(outlet);
        }
        let outlet = Outlet::open(
            Target::Session {
                peer: peer.clone(),
                uris: Mutex::default(),
            },
            Arc::clone(&self.dropped),
        );
        sessions.push(Arc::clone(&outlet));
        outlet
    }

    /// `resources/subscribe` of a session.
    pub(crate) fn subscribe(&self, uri: &str, peer: &Peer<RoleServer>) {
        // Without a handshake there is no session to know the peer by again; rmcp serves
        // `resources/subscribe` only to the revisions that have one.
        if peer.peer_info().is_none() {
            return;
        }
        self.live(&self.sessions);
        if let Some(mut uris) = self.session(peer).uris() {
            uris.insert(uri.to_owned());
        }
    }

    /// `resources/unsubscribe` of a session.
    pub(crate) fn unsubscribe(&self, uri: &str, peer: &Peer<RoleServer>) {
        let sessions = self.live(&self.sessions);
        if let Some(outlet) = sessions.iter().find(|outlet| outlet.is_session_of(peer))
            && let Some(mut uris) = outlet.uris()
        {
            uris.remove(uri);
        }
    }

    /// Serves one `subscriptions/listen` stream until it ends.
    pub(crate) async fn listen(&self, sink: SubscriptionSink, ended: impl Future<Output = ()>) {
        let outlet = Outlet::open(Target::Listen(sink), Arc::clone(&self.dropped));
        self.listens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&outlet));
        // Forgotten however the stream ends, the request's future dropped included.
        let _forget = scopeguard(&outlet);
        ended.await;
    }
}

/// Publishes the changes handed to it, in order: all that wait at once (up to 256) in one
/// call of the bus. Ends with the hub.
async fn carry(hub: std::sync::Weak<Hub>, mut outgoing: tokio::sync::mpsc::Receiver<String>) {
    let mut batch = Vec::new();
    while outgoing.recv_many(&mut batch, 256).await > 0 {
        let Some(bus) = hub.upgrade().map(|hub| hub.bus()) else {
            return;
        };
        if let Err(error) = bus.publish(&batch).await {
            tracing::warn!(target: "fusion::changes", %error, changes = batch.len(), "changes were not published to the other replicas");
        }
        batch.clear();
    }
}

/// Closes the outlet when dropped; the hub forgets it at its next look.
fn scopeguard(outlet: &Arc<Outlet>) -> tokio_util::sync::DropGuard {
    outlet.closed.clone().drop_guard()
}

fn notification(change: &Change) -> ServerNotification {
    match change {
        Change::ResourceUpdated { uri } => ServerNotification::ResourceUpdatedNotification(
            ResourceUpdatedNotification::new(ResourceUpdatedNotificationParam::new(uri.clone())),
        ),
        Change::ToolsListChanged => {
            ServerNotification::ToolListChangedNotification(ToolListChangedNotification::default())
        }
        Change::PromptsListChanged => ServerNotification::PromptListChangedNotification(
            PromptListChangedNotification::default(),
        ),
        Change::ResourcesListChanged => ServerNotification::ResourceListChangedNotification(
            ResourceListChangedNotification::default(),
        ),
    }
}
