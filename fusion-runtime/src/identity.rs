//! Who is calling: what the transport knows about the caller of one request.
//!
//! Over Streamable HTTP that is the request's headers and extensions, the session id, and,
//! when the server is an OAuth resource server, the verified access token's [`Claims`].
//! Over stdio the caller is whoever started the process: no headers, no session, no
//! claims. The in-memory [`Tester`](crate::testing::Tester) sets one with
//! [`Tester::as_caller`](crate::testing::Tester::as_caller).
//!
//! The per-call context can be built from it
//! ([`ServerBuilder::context_from_request`](crate::ServerBuilder::context_from_request)),
//! middleware reads it from [`CallInfo::request`](crate::middleware::CallInfo), and a tool
//! reads it through [`Call::request`](crate::Call::request).

use std::{net::IpAddr, sync::Arc};

use http::{Extensions, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};

/// The transport a request came over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportKind {
    /// Standard input and output: the caller is the process's owner.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// No transport: the in-memory [`Tester`](crate::testing::Tester).
    InMemory,
}

/// The address of the client an HTTP request comes from, in the request's extensions:
/// the connection's peer, or, behind a proxy listed in
/// [`HttpOptions::trusted_proxies`](crate::HttpOptions::trusted_proxies), the client that
/// proxy names. [`Server::serve_http_with`](crate::Server::serve_http_with) inserts it; an
/// app that mounts [`Server::router`](crate::Server::router) behind its own listener may
/// insert its own. Read it with [`RequestInfo::client_addr`].
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
/// use fusion_runtime::identity::{ClientAddr, RequestInfo};
///
/// let client = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7));
/// let request = RequestInfo::in_memory().with_extension(ClientAddr(client));
/// assert_eq!(request.client_addr(), Some(client));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ClientAddr(pub IpAddr);

/// The claims of a verified access token: the subject, the scopes, and every claim as
/// the token carried it.
///
/// ```
/// use fusion_runtime::identity::Claims;
///
/// let claims = Claims::from_json(serde_json::json!({
///     "sub": "alice",
///     "scope": "db:read admin",
///     "iss": "https://id.example.com",
/// }));
/// assert_eq!(claims.subject(), Some("alice"));
/// assert!(claims.has_scope("admin"));
/// assert!(!claims.has_scope("db:write"));
/// assert_eq!(claims.get("iss"), Some(&serde_json::json!("https://id.example.com")));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Claims {
    subject: Option<String>,
    scopes: Vec<String>,
    all: Map<String, Value>,
}

impl Claims {
    /// Claims from a token's JSON payload. The subject is `sub`; the scopes are `scope`
    /// (RFC 8693 and RFC 9068: one space-separated string) or, as some identity providers
    /// write them, `scp` (an array of strings or one string).
    pub fn from_json(payload: Value) -> Self {
        let all = match payload {
            Value::Object(all) => all,
            _ => Map::new(),
        };
        let subject = all.get("sub").and_then(Value::as_str).map(str::to_owned);
        let scopes = match all.get("scope").or_else(|| all.get("scp")) {
            Some(Value::String(scopes)) => scopes.split_whitespace().map(str::to_owned).collect(),
            Some(Value::Array(scopes)) => scopes
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Self {
            subject,
            scopes,
            all,
        }
    }

    /// Claims for a subject with these scopes (tests, and callers known by other means).
    ///
    /// ```
    /// use fusion_runtime::identity::Claims;
    ///
    /// let admin = Claims::for_subject("alice", ["admin"]);
    /// assert_eq!(admin.scopes(), ["admin"]);
    /// ```
    pub fn for_subject<I, S>(subject: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let subject = subject.into();
        let scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        let mut all = Map::new();
        all.insert("sub".to_owned(), Value::String(subject.clone()));
        all.insert("scope".to_owned(), Value::String(scopes.join(" ")));
        Self {
            subject: Some(subject),
            scopes,
            all,
        }
    }

    /// The token's subject (`sub`): who the caller is, as the issuer names them.
    pub fn subject(&self) -> Option<&str> {
        self.subject.as_deref()
    }

    /// The scopes the token grants.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Whether the token grants `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|granted| granted == scope)
    }

    /// The scopes of `required` that the token does not grant, in their order.
    pub fn missing_scopes<'a>(&self, required: &[&'a str]) -> Vec<&'a str> {
        required
            .iter()
            .copied()
            .filter(|scope| !self.has_scope(scope))
            .collect()
    }

    /// One claim, as the token carried it.
    pub fn get(&self, claim: &str) -> Option<&Value> {
        self.all.get(claim)
    }

    /// Every claim, as the token carried them.
    pub fn all(&self) -> &Map<String, Value> {
        &self.all
    }
}

/// What the transport knows about the caller of one request. Cheap to clone.
///
/// ```
/// use fusion_runtime::identity::{Claims, RequestInfo, TransportKind};
///
/// let request = RequestInfo::in_memory()
///     .with_claims(Claims::for_subject("bob", ["db:read"]))
///     .with_header("x-tenant", "acme");
/// assert_eq!(request.transport(), TransportKind::InMemory);
/// assert_eq!(request.subject(), Some("bob"));
/// assert_eq!(request.header("x-tenant"), Some("acme"));
/// ```
#[derive(Clone, Debug)]
pub struct RequestInfo {
    inner: Arc<Parts>,
}

#[derive(Clone, Debug)]
struct Parts {
    transport: TransportKind,
    session_id: Option<String>,
    headers: HeaderMap,
    extensions: Extensions,
    claims: Option<Claims>,
}

impl RequestInfo {
    fn new(transport: TransportKind) -> Self {
        Self {
            inner: Arc::new(Parts {
                transport,
                session_id: None,
                headers: HeaderMap::new(),
                extensions: Extensions::new(),
                claims: None,
            }),
        }
    }

    /// A request over stdio: the caller is the process's owner.
    pub fn stdio() -> Self {
        // The same for every call over stdio: one shared, so a call costs no allocation
        // here (the `with_*` methods copy it before changing it).
        static STDIO: std::sync::OnceLock<RequestInfo> = std::sync::OnceLock::new();
        STDIO
            .get_or_init(|| Self::new(TransportKind::Stdio))
            .clone()
    }

    /// A request without a transport (the in-memory tester), before any `with_*`.
    pub fn in_memory() -> Self {
        Self::new(TransportKind::InMemory)
    }

    /// The caller of a task whose work another replica took over: no headers, the claims
    /// the task was created with.
    pub(crate) fn resumed(claims: Option<Claims>) -> Self {
        let mut request = Self::new(TransportKind::Http);
        Arc::make_mut(&mut request.inner).claims = claims;
        request
    }

    /// A request over Streamable HTTP, from the request's parts (as rmcp hands them to
    /// the handler). The claims are the ones the OAuth guard verified and put in the
    /// extensions; the session id is the `Mcp-Session-Id` header.
    pub fn from_http(parts: &http::request::Parts) -> Self {
        let session_id = parts
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let claims = parts
            .extensions
            .get::<VerifiedClaims>()
            .map(|verified| verified.0.clone());
        Self {
            inner: Arc::new(Parts {
                transport: TransportKind::Http,
                session_id,
                headers: parts.headers.clone(),
                extensions: parts.extensions.clone(),
                claims,
            }),
        }
    }

    /// With these claims, as if a token carrying them had been verified.
    pub fn with_claims(mut self, claims: Claims) -> Self {
        Arc::make_mut(&mut self.inner).claims = Some(claims);
        self
    }

    /// With this session id.
    pub fn with_session_id(mut self, session_id: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.inner).session_id = Some(session_id.into());
        self
    }

    /// With one more header. A name or value that HTTP does not allow is left out.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            Arc::make_mut(&mut self.inner).headers.append(name, value);
        }
        self
    }

    /// With one more extension (what a tower layer in front of the endpoint would insert).
    pub fn with_extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        Arc::make_mut(&mut self.inner).extensions.insert(value);
        self
    }

    /// The transport the request came over.
    pub fn transport(&self) -> TransportKind {
        self.inner.transport
    }

    /// The MCP session, over Streamable HTTP with sessions.
    pub fn session_id(&self) -> Option<&str> {
        self.inner.session_id.as_deref()
    }

    /// The HTTP request's headers (empty over stdio).
    pub fn headers(&self) -> &HeaderMap {
        &self.inner.headers
    }

    /// One header's value, when it is present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        // Over stdio there are none: the name is not parsed for nothing.
        if self.inner.headers.is_empty() {
            return None;
        }
        self.inner
            .headers
            .get(name)
            .and_then(|value| value.to_str().ok())
    }

    /// The HTTP request's extensions: what tower layers in front of the endpoint inserted.
    pub fn extensions(&self) -> &Extensions {
        &self.inner.extensions
    }

    /// The address of the HTTP client ([`ClientAddr`]); `None` over stdio, and over HTTP
    /// when nothing put it in the request.
    pub fn client_addr(&self) -> Option<IpAddr> {
        self.inner
            .extensions
            .get::<ClientAddr>()
            .map(|ClientAddr(client)| *client)
    }

    /// The verified access token's claims; `None` without OAuth (and over stdio).
    pub fn claims(&self) -> Option<&Claims> {
        self.inner.claims.as_ref()
    }

    /// The token's subject, when a token was verified.
    pub fn subject(&self) -> Option<&str> {
        self.claims().and_then(Claims::subject)
    }

    /// A key naming the caller, for per-caller limits: the token's subject, else the
    /// session, else the transport (every stdio caller is the same one).
    pub fn caller_key(&self) -> String {
        match (self.subject(), self.session_id()) {
            (Some(subject), _) => format!("sub:{subject}"),
            (None, Some(session)) => format!("session:{session}"),
            (None, None) => match self.transport() {
                TransportKind::Stdio => "stdio".to_owned(),
                TransportKind::Http => "http".to_owned(),
                TransportKind::InMemory => "in-memory".to_owned(),
            },
        }
    }
}

impl Default for RequestInfo {
    fn default() -> Self {
        Self::in_memory()
    }
}

/// The claims of a token the OAuth guard verified, as it leaves them in the HTTP
/// request's extensions for [`RequestInfo::from_http`].
#[derive(Clone, Debug)]
pub struct VerifiedClaims(pub Claims);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_come_from_scope_or_scp() {
        let spaced = Claims::from_json(serde_json::json!({"scope": "a  b"}));
        assert_eq!(spaced.scopes(), ["a", "b"]);
        let listed = Claims::from_json(serde_json::json!({"scp": ["a", 3, "c"]}));
        assert_eq!(listed.scopes(), ["a", "c"]);
        let none = Claims::from_json(serde_json::json!("not an object"));
        assert!(none.scopes().is_empty() && none.subject().is_none());
        assert_eq!(spaced.missing_scopes(&["b", "c", "d"]), ["c", "d"]);
    }

    #[test]
    fn the_caller_key_prefers_the_subject() {
        let request = RequestInfo::in_memory().with_session_id("s1");
        assert_eq!(request.caller_key(), "session:s1");
        let request = request.with_claims(Claims::for_subject("alice", ["x"]));
        assert_eq!(request.caller_key(), "sub:alice");
        assert_eq!(RequestInfo::stdio().caller_key(), "stdio");
    }

    #[test]
    fn bad_headers_are_left_out() {
        let request = RequestInfo::in_memory()
            .with_header("bad name", "v")
            .with_header("x-ok", "line\nbreak")
            .with_header("x-good", "yes");
        assert_eq!(request.headers().len(), 1);
        assert_eq!(request.header("x-good"), Some("yes"));
    }
}
