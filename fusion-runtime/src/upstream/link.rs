//! One connection to an upstream, whichever its transport.

use std::sync::Arc;

use serde_json::Value;

use super::{
    Endpoint, Upstream, get_stream, http::HttpLink, link_error::LinkError, rpc::ProgressRoute,
    stdio::StdioLink,
};

/// A connection to one upstream.
pub(crate) enum Link {
    Stdio(StdioLink),
    Http(HttpLink),
}

impl Link {
    /// A link to `upstream`; `tools_changed` is told each time the upstream sends
    /// `notifications/tools/list_changed`.
    pub(crate) fn new(
        upstream: &Upstream,
        tools_changed: Arc<tokio::sync::Notify>,
    ) -> Result<Self, String> {
        Ok(match &upstream.endpoint {
            Endpoint::Stdio { program, args, env } => Self::Stdio(StdioLink::new(
                program.clone(),
                args.clone(),
                env.clone(),
                upstream.max_message,
                tools_changed,
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
                tools_changed,
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

    /// Listens to what the upstream sends on its own, for as long as the future is polled:
    /// an HTTP upstream's GET stream (`get_stream.rs`). A stdio upstream's messages all come
    /// on its stdout, read with its answers: this returns at once.
    pub(crate) async fn listen(&self) {
        match self {
            Self::Stdio(_) => {}
            Self::Http(link) => get_stream::listen(link).await,
        }
    }
}
