//! [`HttpOptions`]' bounds against hostile or broken peers: how long headers may take,
//! the connections, event streams and sessions served at once, and the calls of one
//! session (the guide's "Bounds against hostile peers", `guide/src/limits.md`).

use std::time::Duration;

use super::options::HttpOptions;

impl HttpOptions {
    /// How long a client may take to send a request's headers (10 s by default); the
    /// connection closes after it. The same bound applies to a keep-alive connection
    /// between two requests.
    ///
    /// Without it a client that sends one header byte a second (slowloris) holds a
    /// connection, and a file descriptor, for as long as it likes. Headers are a few
    /// hundred bytes: a real client sends them in milliseconds, even over a slow link, so
    /// 10 s leaves ample room while a flood of stalled clients is cut within seconds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().header_read_timeout(Duration::from_secs(5));
    /// # drop(options);
    /// ```
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The most connections served at once (512 by default, at least 1). At the cap
    /// the server stops accepting: new connections wait in the kernel's backlog until
    /// one closes, and cost no file descriptor meanwhile.
    ///
    /// 512 is half the usual soft limit on open files (1024), which leaves descriptors
    /// for the tools' own files, sockets and database pools; a server that raises its
    /// limit can raise this one. Each open SSE stream (a session's `GET`, a call's
    /// answer) holds a connection. Serving lowers it to what the open-file limit
    /// (`RLIMIT_NOFILE`) allows, less a reserve of a quarter of that limit (at most 64
    /// descriptors), and says so in the log.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_connections(4096);
    /// # drop(options);
    /// ```
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// The most connections one peer (an IP address) may hold at once; by default half of
    /// [`max_connections`](Self::max_connections), at least 1. A connection over it is
    /// still answered, in a lane kept for that (a sixteenth of `max_connections`, 2 to
    /// 32 connections): `/healthz` and `/readyz` as usual, anything else `503 Service
    /// Unavailable` with `Retry-After`, and the connection then closes. So one client
    /// cannot take every connection, and neither the health probes nor a new client are
    /// ever shut out without an answer.
    ///
    /// Behind a proxy listed in [`trusted_proxies`](Self::trusted_proxies) the proxy's
    /// connections are not bounded by this (it carries every client); the same number
    /// then bounds each client's open requests, by the address the proxy names.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_connections(1024).max_connections_per_peer(64);
    /// # drop(options);
    /// ```
    pub fn max_connections_per_peer(mut self, connections: usize) -> Self {
        self.max_connections_per_peer = Some(connections.max(1));
        self
    }

    /// The most event streams open at once: the sessions' `GET` streams and their
    /// resumptions (`Last-Event-ID`). By default half of
    /// [`max_connections`](Self::max_connections), at least 1. A stream holds its
    /// connection for as long as the client keeps it, and keep-alive pings keep it from
    /// timing out; below the connection cap, streams alone cannot fill it. A new stream
    /// over it gets `503 Service Unavailable` with `Retry-After`.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_streams(100);
    /// # drop(options);
    /// ```
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = Some(streams.max(1));
        self
    }

    /// The most event streams one session may hold (2 by default, at least 1): a new one
    /// over it ends the session's oldest, so a client that reconnects gets its stream, and
    /// one that opens streams in a loop only replaces its own.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_streams_per_session(1);
    /// # drop(options);
    /// ```
    pub fn max_streams_per_session(mut self, streams: usize) -> Self {
        self.max_streams_per_session = streams.max(1);
        self
    }

    /// The most event streams one client (an address, or the client a trusted proxy
    /// names) may hold at once, over all its sessions; by default a quarter of
    /// [`max_streams`](Self::max_streams), and at least one session's share
    /// ([`max_streams_per_session`](Self::max_streams_per_session)). A new one over it ends that
    /// client's oldest stream, as a session's does: a client that opens sessions in a loop
    /// to hold more streams only replaces its own, and never holds more than its share.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_streams_per_client(16);
    /// # drop(options);
    /// ```
    pub fn max_streams_per_client(mut self, streams: usize) -> Self {
        self.max_streams_per_client = Some(streams.max(1));
        self
    }

    /// The most event streams one authenticated subject (the `sub` of a verified OAuth
    /// token) may hold at once, over all its sessions and addresses (8 by default, at
    /// least 1). A new one over it ends that subject's oldest stream.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_streams_per_subject(4);
    /// # drop(options);
    /// ```
    pub fn max_streams_per_subject(mut self, streams: usize) -> Self {
        self.max_streams_per_subject = streams.max(1);
        self
    }

    /// The streams one client may hold, as configured or by default.
    pub(super) fn effective_streams_per_client(&self) -> usize {
        self.max_streams_per_client
            .unwrap_or((self.effective_max_streams() / 4).max(self.max_streams_per_session))
            .max(1)
    }

    /// The connections one peer may hold, as configured or by default.
    pub(super) fn effective_connections_per_peer(&self) -> usize {
        self.max_connections_per_peer
            .unwrap_or(self.max_connections / 2)
            .max(1)
    }

    /// The streams open at once, as configured or by default.
    pub(super) fn effective_max_streams(&self) -> usize {
        self.max_streams.unwrap_or(self.max_connections / 2).max(1)
    }

    /// The most sessions open at once (1024 by default); over it, an `initialize` gets
    /// `503 Service Unavailable` with `Retry-After`. A session costs about 56 kB, so the
    /// default bounds them to about 56 MB. No effect in [`stateless`](Self::stateless) mode.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_sessions(100);
    /// # drop(options);
    /// ```
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long a session may stay idle, with no request from its client and no call
    /// in flight, before it ends (10 minutes by default; `None` keeps idle sessions
    /// for good). Its next request then gets `404`, upon which MCP clients initialize a
    /// new session.
    ///
    /// Clients that leave without `DELETE` are the common case; without expiry their
    /// sessions would fill [`max_sessions`](Self::max_sessions) for good. Ten minutes
    /// outlasts a person's pause in a conversation with an agent.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().session_idle_timeout(Some(Duration::from_secs(60)));
    /// # drop(options);
    /// ```
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// The most requests running at once in one session (32 by default, at least 1). A
    /// request over it waits, first come first served, until one ends
    /// ([`max_queued_per_session`](Self::max_queued_per_session) bounds the wait).
    ///
    /// Without a cap one client could hold the whole runtime with its calls. Agents rarely
    /// run more than a few calls at once; 32 leaves room for bursts.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_calls_per_session(8);
    /// # drop(options);
    /// ```
    pub fn max_calls_per_session(mut self, calls: usize) -> Self {
        self.max_calls_per_session = calls.max(1);
        self
    }

    /// The most requests of one session that may wait for their turn behind the calls
    /// running ([`max_calls_per_session`](Self::max_calls_per_session)); 256 by default, 0
    /// to refuse at once. A request over it gets `429 Too Many Requests` with
    /// `Retry-After: 1` and a JSON-RPC error (`-32000`) that carries its id and says so.
    ///
    /// Each waiting request holds its connection and its body, so the connection cap
    /// ([`max_connections`](Self::max_connections)) and the body limit bound what the queue
    /// can cost.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_calls_per_session(8).max_queued_per_session(64);
    /// # drop(options);
    /// ```
    pub fn max_queued_per_session(mut self, requests: usize) -> Self {
        self.max_queued_per_session = requests;
        self
    }
}
