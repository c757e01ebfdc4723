//! The connection loop under the front door (`front.rs`): what `axum::serve` does, plus the
//! bounds a server facing hostile peers needs (issue 15). Headers must arrive within a
//! timeout (hyper's `header_read_timeout`, which also closes a keep-alive connection that
//! sends no next request in that time), and at most `max_connections` connections are
//! open at once: with every slot taken the loop stops accepting, so new connections wait
//! in the kernel's backlog until one closes, instead of costing a file descriptor each.
//! One peer (an IP address) holds at most `max_connections_per_peer` of them (issue 35),
//! so that one client cannot take them all; a proxy trusted to name its clients is not
//! bounded so (`clients.rs`).
//!
//! A connection over a budget (its peer's, or the usual slots all taken) is still
//! accepted while the lane has a slot, and answered there (`refusal.rs`, issue 57): the
//! probes as always, anything else `503` with `Retry-After`. Before, it was closed at once,
//! and the client, `/healthz` included, saw a reset.

use std::{net::IpAddr, sync::Arc, time::Duration};

use hyper::{server::conn::http1, service::service_fn};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
};
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{OwnedSemaphorePermit, Semaphore},
};
use tokio_util::sync::CancellationToken;

use super::{
    clients::{Held, Holdings},
    front::FrontDoor,
    refusal::{LANE_READ_TIMEOUT, Refusal, lane_slots},
};

/// The bounds of the connection loop.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnLimits {
    pub(super) header_read_timeout: Duration,
    pub(super) max_connections: usize,
    pub(super) max_connections_per_peer: usize,
}

/// The most descriptors kept out of the connection cap for everything else a server
/// opens: the listener, stdio, the tools' files, a Redis or database pool.
const RESERVED_DESCRIPTORS: u64 = 64;

/// `max_connections`, lowered to fit the process's open-file limit (`RLIMIT_NOFILE`'s soft
/// limit) less a reserve: a quarter of the limit, at most [`RESERVED_DESCRIPTORS`].
pub(super) fn within_descriptor_limit(max_connections: usize) -> usize {
    match open_file_limit() {
        Some(limit) => {
            let reserve = (limit / 4).min(RESERVED_DESCRIPTORS);
            let room = usize::try_from(limit.saturating_sub(reserve)).unwrap_or(usize::MAX);
            max_connections.min(room).max(1)
        }
        None => max_connections,
    }
}

/// The soft limit on open files, when the platform has one.
#[cfg(unix)]
fn open_file_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

#[cfg(not(unix))]
fn open_file_limit() -> Option<u64> {
    None
}

/// How long the loop waits after `accept` fails for want of resources (no file
/// descriptor left, no memory) before it tries again: long enough not to spin, short
/// enough to serve again soon after the flood ends.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How one accepted connection is served.
enum Lane {
    /// As usual, holding a slot and its peer's place (none for a trusted proxy).
    Served(OwnedSemaphorePermit, Option<Held<IpAddr>>),
    /// Answered once and closed (`refusal.rs`), holding a slot.
    Refused(OwnedSemaphorePermit, Refusal),
}

/// The connection slots: the usual ones, and the lane's for connections over a budget.
struct Slots {
    served: Arc<Semaphore>,
    lane: Arc<Semaphore>,
    /// The usual slots in all, for the refusal's words.
    max_served: usize,
}

impl Slots {
    fn new(max_connections: usize) -> Self {
        let max_connections = max_connections.max(1);
        // The lane's slots come out of the cap, so that the descriptors in use stay
        // within it; a cap too small to spare them keeps one usual slot.
        let lane = lane_slots(max_connections);
        let max_served = max_connections.saturating_sub(lane).max(1);
        Self {
            served: Arc::new(Semaphore::new(max_served)),
            lane: Arc::new(Semaphore::new(lane)),
            max_served,
        }
    }

    /// A slot of either kind, the usual first; `None` once closed.
    async fn any(&self) -> Option<(OwnedSemaphorePermit, bool)> {
        tokio::select! {
            biased;
            served = Arc::clone(&self.served).acquire_owned() => served.ok().map(|slot| (slot, true)),
            lane = Arc::clone(&self.lane).acquire_owned() => lane.ok().map(|slot| (slot, false)),
        }
    }

    /// How a connection from `peer` is served, given the slot taken before it was
    /// accepted (`usual`: one of the usual ones).
    fn lane_for(
        &self,
        slot: OwnedSemaphorePermit,
        usual: bool,
        peer: Option<Held<IpAddr>>,
        bounded: bool,
        per_peer: usize,
    ) -> Lane {
        match (usual, peer) {
            // Under its peer's budget (or a trusted proxy's): served, in a usual slot,
            // which may have freed since the lane's was taken.
            (true, peer) if peer.is_some() || !bounded => Lane::Served(slot, peer),
            (false, peer) if peer.is_some() || !bounded => {
                match Arc::clone(&self.served).try_acquire_owned() {
                    Ok(usual) => Lane::Served(usual, peer),
                    Err(_) => Lane::Refused(slot, Refusal::ServerFull(self.max_served)),
                }
            }
            // Over its peer's budget: answered in the lane, in a lane slot when one is
            // free, else in the usual slot it took (for the lane's short life only).
            (_, _) => {
                let slot = if usual {
                    Arc::clone(&self.lane).try_acquire_owned().unwrap_or(slot)
                } else {
                    slot
                };
                Lane::Refused(slot, Refusal::PeerFull(per_peer))
            }
        }
    }
}

/// Serves `front` on `listener` until `stop` is cancelled; then stops accepting and
/// waits for the open connections to finish (idle ones close at once, busy ones after
/// their answer).
pub(super) async fn serve(
    listener: TcpListener,
    front: FrontDoor,
    limits: ConnLimits,
    stop: CancellationToken,
) {
    let graceful = GracefulShutdown::new();
    let slots = Slots::new(limits.max_connections);
    let peers: Arc<Holdings<IpAddr>> = Holdings::new(limits.max_connections_per_peer);
    let mut served = http1::Builder::new();
    served
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let mut refused = http1::Builder::new();
    refused
        .timer(TokioTimer::new())
        .header_read_timeout(LANE_READ_TIMEOUT)
        .keep_alive(false);
    let mut starved_since: Option<tokio::time::Instant> = None;
    loop {
        // A slot first: with every slot taken, connections wait in the backlog,
        // unaccepted.
        let (slot, usual) = tokio::select! {
            slot = slots.any() => match slot {
                Some(slot) => slot,
                None => break,
            },
            () = stop.cancelled() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                if let Some(since) = starved_since.take() {
                    tracing::info!(target: "fusion::server", starved_ms = since.elapsed().as_millis() as u64, "accepting connections again");
                }
                accepted
            }
            Err(error) => {
                // A connection reset before it was accepted concerns that peer only.
                if !matches!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::Interrupted
                ) {
                    if starved_since.is_none() {
                        starved_since = Some(tokio::time::Instant::now());
                        tracing::warn!(target: "fusion::server", %error, "cannot accept connections (out of file descriptors?); retrying every 100 ms");
                    }
                    // Sleeping (not spinning) while no descriptor is free; the ones in
                    // use free up as their connections end or time out.
                    tokio::select! {
                        () = tokio::time::sleep(ACCEPT_BACKOFF) => {}
                        () = stop.cancelled() => break,
                    }
                }
                continue;
            }
        };
        let peer = peer.ip().to_canonical();
        // A trusted proxy carries many clients: its connections are not bounded per peer
        // (`clients.rs` bounds each client's requests instead).
        let bounded = !front.trusts(peer);
        let place = if bounded { peers.take(peer) } else { None };
        let lane = slots.lane_for(slot, usual, place, bounded, peers.max());
        let front = front.for_peer(peer);
        match lane {
            Lane::Served(slot, place) => {
                let connection = served.serve_connection(
                    TokioIo::new(nodelay(stream)),
                    service_fn(move |request| front.clone().serve(request)),
                );
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    // The slot and the peer's place are held for the connection's whole
                    // life and given back on drop.
                    let _slot = slot;
                    let _place = place;
                    if let Err(error) = connection.await {
                        tracing::debug!(target: "fusion::server", %error, "connection ended with an error");
                    }
                });
            }
            Lane::Refused(slot, why) => {
                tracing::debug!(target: "fusion::server", %peer, ?why, "a connection over a budget is answered in the lane");
                let connection = refused.serve_connection(
                    TokioIo::new(nodelay(stream)),
                    service_fn(move |request| front.clone().refuse(request, why)),
                );
                let connection = graceful.watch(connection);
                tokio::spawn(async move {
                    let _slot = slot;
                    if let Err(error) = connection.await {
                        tracing::debug!(target: "fusion::server", %error, "a connection in the lane ended with an error");
                    }
                });
            }
        }
    }
    drop(listener);
    graceful.shutdown().await;
}

/// `stream`, sending each write at once (answers are small and must not wait for
/// Nagle's algorithm).
fn nodelay(stream: TcpStream) -> TcpStream {
    let _ = stream.set_nodelay(true);
    stream
}
