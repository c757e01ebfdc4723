//! Other MCP servers' tools, served as this server's own under its policies
//! ([`ServerBuilder::upstream`](crate::ServerBuilder::upstream), feature `upstream`).
//!
//! An [`Upstream`] says where a server is (a URL for Streamable HTTP, or a program fusion
//! starts and talks to over stdio) and how its tools are called: the policy (timeout,
//! retries, circuit breaker), the cache of its read-only tools, the credentials, the
//! largest answer read. When the server starts, it connects to each upstream, lists its
//! tools and registers each one as `<prefix>_<name>`, with the upstream's description,
//! schemas and annotations. While the server runs, the tools are listed again when the
//! upstream says they changed (on a stdio upstream's stdout, in an HTTP call's answer, or on
//! the HTTP session's GET stream), at the upstream's refresh interval, and until an upstream
//! that was down at start answers (`refresh.rs`). From there an upstream's tool is called through the same
//! pipeline as a local one: validation of the call's shape, middleware, visibility, the
//! timeout, retries of transient failures, the breaker, the cache with stale answers, the
//! output limit, the call log and the metrics.
//!
//! Inside:
//! - `link_error.rs`: what can go wrong on a connection (`LinkError`);
//! - `link.rs`: one connection to an upstream, whichever transport;
//! - `rpc.rs`: the JSON-RPC messages a gateway sends and reads;
//! - `stdio.rs`: a child process, restarted when it dies;
//! - `http.rs`: Streamable HTTP, JSON or SSE answers, the session and its renewal;
//! - `sse.rs`: the events of an answer or of the GET stream, read under `max_message`;
//! - `get_stream.rs`: the session's GET stream, held open while the server runs, where an
//!   HTTP upstream sends `notifications/tools/list_changed` on its own: opened only when the
//!   upstream gave a session id and declared `tools.listChanged`, and is called with its
//!   configured credential (one called as each caller has no caller for a stream that
//!   outlives the calls); not asked again on a session that refused it, reopened with
//!   backoff when it ends;
//! - `offered.rs`: what an upstream offers at one moment, and the names its tools are
//!   listed under (interned, capped);
//! - `listing.rs`: the upstream's tools listed page by page, and the waits between the
//!   tries to reach one;
//! - `mount.rs`: an upstream's tools as tool definitions, called through the link, and
//!   its one breaker;
//! - `outcome.rs`: the upstream's answers, and the link's failures, as outcomes;
//! - `refresh.rs`: the upstream's tools listed again (on `list_changed`, at an interval, and
//!   until an upstream not reached at start answers);
//! - `identity.rs`: who the upstream is told calls (the configured credential, the caller's
//!   own token for its audience, or an exchanged one);
//! - `builder.rs`: [`ServerBuilder::upstream`](crate::ServerBuilder::upstream), and the
//!   mounting at start.

pub(crate) mod builder;
mod get_stream;
mod http;
mod identity;
pub(crate) mod link;
mod link_error;
mod listing;
mod mount;
mod offered;
mod outcome;
mod refresh;
mod rpc;
mod sse;
mod stdio;

use std::{collections::HashMap, time::Duration};

use crate::policy::{CircuitPolicy, Policy, RetryPolicy, cache::CachePolicy};

/// The largest answer read from an upstream unless [`Upstream::max_message`] says
/// otherwise: 16 MiB, the limit fusion's own transports put on a message.
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// How long a server's start waits for an upstream to answer `initialize` and
/// `tools/list` unless [`Upstream::connect_timeout`] says otherwise: 10 s.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The policy of an upstream's tools unless [`Upstream::policy`] says otherwise: a
/// 60 s timeout, 3 runs with backoff from 100 ms for a tool safe to repeat (a read-only or
/// idempotent one; fusion never repeats any other), and a breaker for the whole upstream
/// that opens after 5 transport failures within 30 s, for 10 s.
pub const DEFAULT_POLICY: Policy = Policy {
    timeout: Some(Duration::from_secs(60)),
    retry: Some(RetryPolicy::new(3, Duration::from_millis(100))),
    circuit: Some(CircuitPolicy {
        failures: 5,
        window: CircuitPolicy::DEFAULT_WINDOW,
        cooldown: CircuitPolicy::DEFAULT_COOLDOWN,
    }),
    heartbeat: None,
    task_after: None,
};

/// Another MCP server whose tools this server serves as its own (feature `upstream`).
///
/// Made with [`Upstream::http`] or [`Upstream::stdio`], then mounted under a prefix with
/// [`ServerBuilder::upstream`](crate::ServerBuilder::upstream).
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::{policy::Policy, upstream::Upstream};
///
/// let billing = Upstream::http("https://billing.internal/mcp")
///     .bearer_token("s3cr3t")
///     .header("X-Tenant", "acme")
///     .policy(Policy { timeout: Some(Duration::from_secs(20)), ..Default::default() });
/// let notes = Upstream::stdio("python3", ["notes_server.py"]).env("NOTES_DIR", "/srv/notes");
/// # let _ = (billing, notes);
/// ```
#[derive(Clone, Debug)]
pub struct Upstream {
    pub(crate) endpoint: Endpoint,
    pub(crate) policy: Policy,
    pub(crate) tool_policies: HashMap<String, Policy>,
    pub(crate) cache: Option<CachePolicy>,
    pub(crate) max_message: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) identity: identity::Identity,
    pub(crate) refresh_every: Option<Duration>,
    pub(crate) required: bool,
}

/// Where an upstream is, and what is sent along with every request.
#[derive(Clone)]
pub(crate) enum Endpoint {
    Http {
        url: String,
        headers: Vec<(String, String)>,
        bearer: Option<String>,
    },
    Stdio {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
}

// By hand: a header's value or a token is a credential, never printed.
impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Http { url, headers, .. } => f
                .debug_struct("Http")
                .field("url", url)
                .field(
                    "headers",
                    &headers.iter().map(|(name, _)| name).collect::<Vec<_>>(),
                )
                .finish_non_exhaustive(),
            Self::Stdio { program, args, .. } => f
                .debug_struct("Stdio")
                .field("program", program)
                .field("args", args)
                .finish_non_exhaustive(),
        }
    }
}

impl Upstream {
    fn at(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            policy: DEFAULT_POLICY,
            tool_policies: HashMap::new(),
            cache: None,
            max_message: DEFAULT_MAX_MESSAGE,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            identity: identity::Identity::Configured,
            refresh_every: None,
            required: false,
        }
    }

    /// A server reached over Streamable HTTP at `url` (its MCP endpoint, such as
    /// `https://host/mcp`).
    pub fn http(url: impl Into<String>) -> Self {
        Self::at(Endpoint::Http {
            url: url.into(),
            headers: Vec::new(),
            bearer: None,
        })
    }

    /// A server that fusion runs as a child process, `program` with `args`, and talks to
    /// over its stdin and stdout (its stderr is this process's). It is started when this
    /// server starts, started again by the next call after it dies, and ends when this
    /// process does (its stdin closes) or when the server is dropped.
    pub fn stdio<I, S>(program: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::at(Endpoint::Stdio {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        })
    }

    /// A header sent with every HTTP request (an API key, a tenant). No effect on a stdio
    /// upstream.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Endpoint::Http { headers, .. } = &mut self.endpoint {
            headers.push((name.into(), value.into()));
        }
        self
    }

    /// A static credential, sent as `Authorization: Bearer <token>` with every HTTP
    /// request. The callers' own tokens are never sent on. No effect on a stdio upstream.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let Endpoint::Http { bearer, .. } = &mut self.endpoint {
            *bearer = Some(token.into());
        }
        self
    }

    /// An environment variable of the child process. No effect on an HTTP upstream.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let Endpoint::Stdio { env, .. } = &mut self.endpoint {
            env.push((name.into(), value.into()));
        }
        self
    }

    /// The policy of every tool of this upstream: the parts it sets replace
    /// [`DEFAULT_POLICY`]'s. Its `circuit` is the upstream's one breaker: transport
    /// failures of any of its tools open it, and while it is open its tools are left out
    /// of `tools/list` and their calls answered at once with when to retry.
    ///
    /// To take a part off: `retry: Some(RetryPolicy::NONE)` sends each call once, and
    /// `circuit: Some(CircuitPolicy::NONE)` keeps the tools listed and called whatever
    /// fails. A call always has a deadline (as a local tool's does): a long `timeout` is
    /// how an upstream's slow tools are given the time they take.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::{policy::{CircuitPolicy, Policy, RetryPolicy}, upstream::Upstream};
    ///
    /// let batch = Upstream::http("https://batch.internal/mcp").policy(Policy {
    ///     timeout: Some(Duration::from_secs(3600)),
    ///     retry: Some(RetryPolicy::NONE),
    ///     circuit: Some(CircuitPolicy::NONE),
    ///     ..Default::default()
    /// });
    /// # let _ = batch;
    /// ```
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy.or(DEFAULT_POLICY);
        self
    }

    /// The timeout and retries of one tool, by its name upstream, over the upstream's.
    pub fn tool_policy(mut self, tool: impl Into<String>, policy: Policy) -> Self {
        self.tool_policies.insert(tool.into(), policy);
        self
    }

    /// Caches the answers of the upstream's read-only tools (those it annotates
    /// `readOnlyHint: true`), with stale answers while it fails (see
    /// [`cache`](crate::cache)).
    pub fn cache(mut self, cache: CachePolicy) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The largest answer read from the upstream, in bytes ([`DEFAULT_MAX_MESSAGE`]). A
    /// larger one is not read further, and the call fails with the limit named.
    pub fn max_message(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }

    /// How long the server's start waits for the upstream's `initialize` and `tools/list`
    /// ([`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Lists the upstream's tools again every `interval`, besides each time it sends
    /// `notifications/tools/list_changed` (which an upstream over HTTP can send only inside
    /// the answer to a request). Tools it added appear, tools it removed disappear (a call
    /// to one is answered that the upstream no longer offers it), and new descriptions and
    /// schemas are listed; sessions are sent `notifications/tools/list_changed`. A listing
    /// that fails leaves the tools as they were. Listings are at least a second apart,
    /// whatever the interval. Without it, the tools change only on `list_changed`.
    ///
    /// A tool whose `readOnlyHint`, `destructiveHint` or `idempotentHint` changed is not
    /// called under the retries and cache of its old hints: one the server had at start is
    /// left out until the server restarts; one added since is registered anew.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::upstream::Upstream;
    ///
    /// let billing = Upstream::http("https://billing.internal/mcp").refresh_every(Duration::from_secs(300));
    /// # let _ = billing;
    /// ```
    pub fn refresh_every(mut self, interval: Duration) -> Self {
        self.refresh_every = Some(interval);
        self
    }

    /// Makes the upstream required: a start that cannot reach it within its
    /// [`connect_timeout`](Self::connect_timeout) fails with
    /// [`StartupError::Upstream`](crate::StartupError::Upstream) (`serve` exits with 78,
    /// `EX_CONFIG`), naming it.
    ///
    /// Without it, an upstream that cannot be reached at start does not stop the server:
    /// the server starts with none of its tools (a warning in the log says why), tries again
    /// in the background (after 1 s, backing off to every 30 s), and adds its tools when it
    /// answers, with `notifications/tools/list_changed` to the sessions. Until then
    /// `/readyz` reports it `down`, the server's other tools answer, and a call to a name
    /// under its prefix is answered with a transient
    /// [`FailureKind::UpstreamUnreachable`](crate::failure::FailureKind::UpstreamUnreachable)
    /// that says when it is tried again.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::upstream::Upstream;
    ///
    /// // The gateway is useless without billing: fail the deploy rather than start.
    /// let billing = Upstream::http("https://billing.internal/mcp")
    ///     .required()
    ///     .connect_timeout(Duration::from_secs(30));
    /// # let _ = billing;
    /// ```
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Whether a tool this upstream adds after start may run as a task: its policy, one
    /// of its tools', or the server's `defaults` has a `task_after`.
    pub(crate) fn may_add_tasks(&self, defaults: Policy) -> bool {
        let has = |policy: Policy| policy.task_after.is_some_and(|after| !after.is_zero());
        has(self.policy.or(defaults))
            || self
                .tool_policies
                .values()
                .any(|own| has(own.or(self.policy).or(defaults)))
    }

    /// The name of the upstream in messages and logs: its URL, or its program.
    pub(crate) fn describe(&self) -> &str {
        match &self.endpoint {
            Endpoint::Http { url, .. } => url,
            Endpoint::Stdio { program, .. } => program,
        }
    }
}

/// Who the upstream is told calls (`identity.rs`).
impl Upstream {
    /// Sends each call with the caller's own bearer token, which must have been verified
    /// by this server's OAuth guard and name `audience` (the upstream's resource
    /// identifier) in its `aud` claim. A call whose caller has no such token is refused
    /// (`unauthorized`) before anything is sent: a token is never passed to a server it was
    /// not issued for. Streamable HTTP only. The tools are listed at start with the
    /// configured credential ([`bearer_token`](Self::bearer_token), if any).
    pub fn callers_token(mut self, audience: impl Into<String>) -> Self {
        self.identity = identity::Identity::CallersToken {
            audience: audience.into(),
        };
        self
    }

    /// Sends each call with the token `exchange` returns for its caller (an RFC 8693 token
    /// exchange at the application's authorization server, or a lookup): a token issued
    /// for the upstream, never the caller's own. An `Err` refuses the call
    /// (`unauthorized`, its text in the log) before anything is sent. Streamable HTTP only.
    ///
    /// ```
    /// use fusion_runtime::upstream::Upstream;
    ///
    /// let billing = Upstream::http("https://billing.internal/mcp").token_exchange(|caller| async move {
    ///     match caller.subject() {
    ///         Some(subject) => Ok(format!("token-for-{subject}")),
    ///         None => Err("the caller has no verified token".to_owned()),
    ///     }
    /// });
    /// # let _ = billing;
    /// ```
    pub fn token_exchange<F, Fut>(mut self, exchange: F) -> Self
    where
        F: Fn(crate::identity::RequestInfo) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
    {
        self.identity = identity::Identity::Exchanged(std::sync::Arc::new(move |request| {
            Box::pin(exchange(request))
        }));
        self
    }
}
