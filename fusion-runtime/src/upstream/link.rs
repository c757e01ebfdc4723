//! One connection to an upstream, whichever its transport, and what can go wrong on it.

use std::time::Duration;

use serde_json::Value;

use super::{Endpoint, Upstream, http::HttpLink, rpc::Progress, stdio::StdioLink};

/// Where the upstream's progress on one request goes: the token the request carries in
/// `_meta.progressToken`, and a bounded queue to the call (full: a notification is
/// dropped, as the caller would lose one on a slow link anyway).
pub(crate) struct ProgressRoute {
    pub(crate) token: String,
    pub(crate) sender: tokio::sync::mpsc::Sender<Progress>,
}

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

/// A connection to one upstream.
pub(crate) enum Link {
    Stdio(StdioLink),
    Http(HttpLink),
}

impl Link {
    pub(crate) fn new(upstream: &Upstream) -> Result<Self, String> {
        Ok(match &upstream.endpoint {
            Endpoint::Stdio { program, args, env } => Self::Stdio(StdioLink::new(
                program.clone(),
                args.clone(),
                env.clone(),
                upstream.max_message,
            )),
            Endpoint::Http {
                url,
                headers,
                bearer,
            } => Self::Http(HttpLink::new(
                url,
                headers,
                bearer.as_deref(),
                upstream.max_message,
            )?),
        })
    }

    /// Sends one request and waits for its answer's `result`. Dropping the future withdraws
    /// the request: the upstream is sent `notifications/cancelled` for it.
    pub(crate) async fn request(&self, method: &str, params: Value) -> Result<Value, LinkError> {
        self.request_as(method, params, None, None).await
    }

    /// [`request`](Self::request), sent with `token` as the bearer credential (`None`: the
    /// configured one). A stdio upstream has no credentials: `token` is not sent. The
    /// upstream's progress on it goes to `progress`.
    pub(crate) async fn request_as(
        &self,
        method: &str,
        params: Value,
        token: Option<&str>,
        progress: Option<&ProgressRoute>,
    ) -> Result<Value, LinkError> {
        match self {
            Self::Stdio(link) => link.request(method, params, progress).await,
            Self::Http(link) => link.request(method, params, token, progress).await,
        }
    }

    /// The upstream's `initialize` result, connecting first if need be: what the mount reads
    /// the server's name from.
    pub(crate) async fn connect(&self) -> Result<Value, LinkError> {
        match self {
            Self::Stdio(link) => link.connect().await,
            Self::Http(link) => link.connect().await,
        }
    }
}
