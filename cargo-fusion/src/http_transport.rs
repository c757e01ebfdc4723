//! MCP over Streamable HTTP for `cargo fusion call --url`: each message POSTed to the
//! endpoint, the answers read from the response (JSON, or an event stream), the session id
//! and protocol revision sent back on every later request, the session ended at the end.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::Value;

use crate::error::{CliError, CliResult};
use crate::session::Transport;

/// The header that carries the session's id (MCP Streamable HTTP).
const SESSION_HEADER: &str = "mcp-session-id";
/// The header that carries the negotiated protocol revision.
const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// How much of an error response's body is shown: enough for its message.
const SHOWN_BODY_BYTES: u64 = 1_000;

/// A session with a server at a Streamable HTTP endpoint.
pub(crate) struct HttpTransport {
    client: Client,
    url: String,
    /// When every request, its answer read, must be done.
    deadline: Instant,
    session_id: Option<String>,
    protocol_version: Option<String>,
    /// Messages read from a JSON response, not yet received.
    queued: VecDeque<Value>,
    /// The event stream of the last response that answered with one.
    stream: Option<BufReader<Response>>,
}

impl HttpTransport {
    /// A transport to `url`; every request, its answer read, must be done by `deadline`.
    ///
    /// # Errors
    /// When the HTTP client cannot be set up.
    pub(crate) fn connect(url: &str, deadline: Instant) -> CliResult<Self> {
        let client = Client::builder()
            .tls_backend_preconfigured(tls_config()?)
            .user_agent(concat!("cargo-fusion/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| CliError::new(format!("cannot set up the HTTP client: {error}")))?;
        Ok(Self {
            client,
            url: url.to_owned(),
            deadline,
            session_id: None,
            protocol_version: None,
            queued: VecDeque::new(),
            stream: None,
        })
    }

    /// `request` with the session's headers, and the time left before the deadline.
    fn with_session(&self, mut request: RequestBuilder) -> RequestBuilder {
        // A zero timeout would mean none: past the deadline, a request still gets a moment.
        let left = self.deadline.saturating_duration_since(Instant::now());
        request = request.timeout(left.max(Duration::from_millis(1)));
        if let Some(id) = &self.session_id {
            request = request.header(SESSION_HEADER, id);
        }
        if let Some(version) = &self.protocol_version {
            request = request.header(PROTOCOL_HEADER, version);
        }
        request
    }

    /// The next event's data from the open stream: `None` at its end. Events without data
    /// (a stream's priming event) are skipped.
    fn next_event(&mut self) -> std::io::Result<Option<String>> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(None);
        };
        let mut data: Vec<String> = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            if stream.read_line(&mut line)? == 0 {
                self.stream = None;
                return Ok((!data.is_empty()).then(|| data.join("\n")));
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Ok(Some(data.join("\n")));
                }
                continue;
            }
            if let Some(value) = line.strip_prefix("data:") {
                data.push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
            // `event:`, `id:`, `retry:` and `:` comments say nothing this client needs.
        }
    }
}

impl Transport for HttpTransport {
    fn send(&mut self, message: &Value) -> CliResult<()> {
        let request = self
            .client
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(message.to_string());
        let response = self.with_session(request).send().map_err(|error| {
            CliError::new(format!(
                "cannot reach {}: {}",
                self.url,
                with_causes(&error)
            ))
        })?;
        if self.session_id.is_none()
            && let Some(id) = response.headers().get(SESSION_HEADER)
            && let Ok(id) = id.to_str()
        {
            self.session_id = Some(id.to_owned());
        }
        let status = response.status();
        if status == StatusCode::ACCEPTED {
            return Ok(());
        }
        if !status.is_success() {
            let mut body = String::new();
            // The body only explains the status; one that cannot be read explains nothing.
            let _ = response.take(SHOWN_BODY_BYTES).read_to_string(&mut body);
            return Err(CliError::new(format!(
                "{} answered HTTP {status}: {}",
                self.url,
                body.trim()
            )));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if content_type.starts_with("text/event-stream") {
            self.stream = Some(BufReader::new(response));
            return Ok(());
        }
        let body = response.text().map_err(|error| {
            CliError::new(format!("cannot read {}'s answer: {error}", self.url))
        })?;
        match serde_json::from_str(&body) {
            Ok(Value::Array(messages)) => self.queued.extend(messages),
            Ok(message) => self.queued.push_back(message),
            Err(error) => {
                return Err(CliError::new(format!(
                    "{} answered with something that is not JSON ({error})",
                    self.url
                )));
            }
        }
        Ok(())
    }

    fn receive(&mut self, method: &str) -> CliResult<Value> {
        if let Some(message) = self.queued.pop_front() {
            return Ok(message);
        }
        loop {
            let event = self.next_event().map_err(|error| {
                CliError::new(format!(
                    "cannot read the answer to `{method}` from {}: {error}",
                    self.url
                ))
            })?;
            let Some(data) = event else {
                return Err(CliError::new(format!(
                    "{} ended its answer without answering `{method}`",
                    self.url
                )));
            };
            // Data that is not JSON is not a message; the next event may be.
            if let Ok(message) = serde_json::from_str(&data) {
                return Ok(message);
            }
        }
    }

    fn negotiated(&mut self, version: &str) {
        self.protocol_version = Some(version.to_owned());
    }
}

impl Drop for HttpTransport {
    /// Ends the session, so the server can free it now rather than when it expires; a
    /// server that refuses (or has none) is fine.
    fn drop(&mut self) {
        self.stream = None;
        if self.session_id.is_some() {
            let _ = self.with_session(self.client.delete(&self.url)).send();
        }
    }
}

/// An error with the errors that caused it: reqwest's own message ("error sending
/// request") says which step failed, its sources why (connection refused, a bad
/// certificate).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}

/// TLS through rustls with the *ring* provider and the platform's root certificates (as
/// fusion-runtime's own HTTP clients have it).
fn tls_config() -> CliResult<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| {
            rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(builder)
        })
        .map_err(|error| CliError::new(format!("cannot set up TLS: {error}")))?
        .with_no_client_auth())
}
