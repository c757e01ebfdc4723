//! What can go wrong on a connection to an upstream, whichever its transport: the words
//! both transports use, below them (`link.rs` chooses between them).

use std::time::Duration;

/// Why a request to an upstream got no usable answer. What the caller is told, whether the
/// call is retried, and whether the upstream's breaker counts it, follow from the variant
/// (`mount.rs`).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum LinkError {
    /// The request never left: the upstream cannot have acted on it (a connection refused,
    /// a process that would not start).
    #[error("{0}")]
    NotSent(String),
    /// The request may have reached the upstream, and no answer came (a connection reset,
    /// a process that died mid-call).
    #[error("{0}")]
    Lost(String),
    /// [`Lost`](Self::Lost), in the same failure as another call's (one process death
    /// with several calls in flight): told as `Lost`, counted once by the breaker.
    #[error("{0}")]
    AlsoLost(String),
    /// The upstream's HTTP server answered with an error status.
    #[error("HTTP {status}")]
    Status {
        status: u16,
        /// Its `Retry-After`, in seconds.
        retry_after: Option<Duration>,
    },
    /// The upstream answered the request with a JSON-RPC error.
    #[error("{message} (JSON-RPC error {code})")]
    Rpc { code: i64, message: String },
    /// The answer was larger than the upstream's `max_message`; it was not read further.
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The answer was not the JSON-RPC expected.
    #[error("{0}")]
    Garbage(String),
}

impl LinkError {
    /// Whether the failure says the upstream is unwell (what its breaker counts), rather
    /// than that this one request was wrong.
    pub(crate) fn is_unwell(&self) -> bool {
        match self {
            Self::NotSent(_) | Self::Lost(_) | Self::Garbage(_) => true,
            Self::Status { status, .. } => *status == 429 || *status >= 500,
            Self::AlsoLost(_) | Self::Rpc { .. } | Self::TooLarge { .. } => false,
        }
    }
}
