//! The lane of connections over a budget (issue 57): a connection from a peer that holds
//! as many as it may, or one that comes while every other connection slot is taken, is
//! still accepted and answered, never reset: `/healthz` and `/readyz` as always (an
//! orchestrator must not restart a healthy replica because one client is greedy), and
//! anything else `503 Service Unavailable` with `Retry-After`, after which the connection
//! closes. The lane has slots of its own (a sixteenth of the connection cap, 2 to 32,
//! `conn.rs`), and a connection in it has a short time to send its request: a client
//! that sends its headers at once (every real one) is answered, and a stalled one is
//! closed soon, so a flood of them cycles through the lane in seconds.

use std::time::Duration;

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse as _, Response},
};

/// How long a connection in the lane may take to send its request's headers, and then
/// its body (read and dropped, so that closing does not reset the answer).
pub(super) const LANE_READ_TIMEOUT: Duration = Duration::from_secs(1);

/// The most of a refused request's body read before the answer; a longer body is left
/// unread.
const LANE_BODY_BYTES: usize = 64 * 1024;

/// How long a refused client is asked to wait before it tries again, in seconds.
const RETRY_AFTER_SECONDS: &str = "1";

/// The slots of the lane for a connection cap of `max_connections`.
pub(super) fn lane_slots(max_connections: usize) -> usize {
    (max_connections / 16).clamp(2, 32)
}

/// Why a connection is in the lane.
#[derive(Clone, Copy, Debug)]
pub(super) enum Refusal {
    /// Its peer holds this many connections, as many as one may.
    PeerFull(usize),
    /// Every one of this many connection slots is taken.
    ServerFull(usize),
}

impl Refusal {
    /// `503` with `Retry-After`, closing the connection.
    pub(super) fn into_response(self) -> Response {
        let why = match self {
            Self::PeerFull(max) => {
                format!("this address holds {max} connections, as many as one may")
            }
            Self::ServerFull(max) => {
                format!("the server serves {max} connections, as many as it may")
            }
        };
        (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (
                    header::RETRY_AFTER,
                    HeaderValue::from_static(RETRY_AFTER_SECONDS),
                ),
                (header::CONNECTION, HeaderValue::from_static("close")),
            ],
            format!("Service Unavailable: {why}; try again later\n"),
        )
            .into_response()
    }
}

/// Reads what `body` holds, up to [`LANE_BODY_BYTES`] and [`LANE_READ_TIMEOUT`], and drops
/// it: a request answered without its body read would have the connection reset on close,
/// and the client might lose the answer with it.
pub(super) async fn drain(body: hyper::body::Incoming) {
    let read = axum::body::to_bytes(axum::body::Body::new(body), LANE_BODY_BYTES);
    // Await: dropped on the timeout (a body still coming is left unread; the connection
    // closes either way).
    let _ = tokio::time::timeout(LANE_READ_TIMEOUT, read).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_asks_to_come_back_and_closes() {
        for refusal in [Refusal::PeerFull(256), Refusal::ServerFull(512)] {
            let response = refusal.into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(response.headers()[header::RETRY_AFTER], "1");
            assert_eq!(response.headers()[header::CONNECTION], "close");
        }
    }

    #[test]
    fn the_lane_is_a_sixteenth_of_the_cap_within_bounds() {
        assert_eq!(lane_slots(1), 2);
        assert_eq!(lane_slots(192), 12);
        assert_eq!(lane_slots(512), 32);
        assert_eq!(lane_slots(100_000), 32);
    }
}
