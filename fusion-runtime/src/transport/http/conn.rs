//! The connection loop under the front door (`front.rs`): what `axum::serve` does, plus the two bounds a
//! server facing hostile peers needs (issue 15). Headers must arrive within a timeout
//! (hyper's `header_read_timeout`, which also closes a keep-alive connection that sends
//! no next request in that time), and at most `max_connections` connections are served
//! at once: at the cap the loop stops accepting, so new connections wait in the kernel's
//! backlog until one closes, instead of costing a file descriptor each. One peer (an IP
//! address) holds at most `max_connections_per_peer` of them (issue 35): its connections
//! over that are closed at once, so that one client cannot take them all.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use hyper::{server::conn::http1, service::service_fn};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tokio_util::sync::CancellationToken;

use super::front::FrontDoor;

/// The bounds of the connection loop.
#[derive(Clone, Copy, Debug)]
pub(super) struct ConnLimits {
    pub(super) header_read_timeout: Duration,
    pub(super) max_connections: usize,
    pub(super) max_connections_per_peer: usize,
}

/// The connections each peer holds now.
#[derive(Default)]
struct Peers(Mutex<HashMap<IpAddr, usize>>);

/// One connection's count in [`Peers`], given back on drop.
struct PeerSlot {
    peers: Arc<Peers>,
    peer: IpAddr,
}

impl Peers {
    /// A slot for one more connection of `peer`, unless it holds `max` already.
    fn take(self: &Arc<Self>, peer: IpAddr, max: usize) -> Option<PeerSlot> {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(peer).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            peers: Arc::clone(self),
            peer,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut held = self.peers.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.peer) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.peer);
            }
        }
    }
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
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let peers = Arc::new(Peers::default());
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let mut starved_since: Option<tokio::time::Instant> = None;
    loop {
        // A slot first: at the cap, connections wait in the backlog, unaccepted.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = stop.cancelled() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => break,
        };
        let (stream, peer_slot) = match accepted {
            Ok((stream, peer)) => {
                if let Some(since) = starved_since.take() {
                    tracing::info!(target: "fusion::server", starved_ms = since.elapsed().as_millis() as u64, "accepting connections again");
                }
                let Some(peer_slot) = peers.take(peer.ip(), limits.max_connections_per_peer) else {
                    // Closed at once (the stream is dropped): this peer holds its share.
                    tracing::debug!(target: "fusion::server", peer = %peer.ip(), "a connection was closed: its peer holds as many as one may");
                    continue;
                };
                (stream, peer_slot)
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
        let _ = stream.set_nodelay(true);
        let front = front.clone();
        let connection = builder.serve_connection(
            TokioIo::new(stream),
            service_fn(move |request| front.clone().serve(request)),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // The slots are held for the connection's whole life and given back on drop.
            let _slot = slot;
            let _peer_slot = peer_slot;
            if let Err(error) = connection.await {
                tracing::debug!(target: "fusion::server", %error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
