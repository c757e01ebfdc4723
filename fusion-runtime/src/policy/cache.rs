//! A tool's cache policy, as `#[mcp_tool(cache = "30s", stale_if_error = "10m",
//! cache_scope = "public")]` writes it into its [`ToolSpec`](crate::tool::ToolSpec); public
//! as `fusion_runtime::cache::{CachePolicy, CacheScope}`, where the cache itself is.

use std::time::Duration;

/// What `#[mcp_tool(cache = "30s", stale_if_error = "10m", cache_scope = "public")]` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CachePolicy {
    /// How long a stored answer is fresh: identical calls within it are answered from the
    /// store.
    pub ttl: Duration,
    /// How much longer an answer is kept to be served, marked stale, when a run fails with
    /// a transient error, a timeout or an open circuit; zero serves nothing stale.
    pub stale_if_error: Duration,
    /// Whose calls share an entry.
    pub scope: CacheScope,
}

impl CachePolicy {
    /// How long an entry is kept: fresh, then stale.
    pub fn keep(&self) -> Duration {
        self.ttl.saturating_add(self.stale_if_error)
    }
}

/// Whose identical calls share a stored answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CacheScope {
    /// The caller's own: entries are keyed by the token's subject, else the session (the
    /// default; an answer may hold what only its caller may see).
    #[default]
    Private,
    /// Every caller's: for answers that do not depend on who asks.
    Public,
}

impl CacheScope {
    /// `private` or `public`, as the attribute and the contract write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Private => "private",
            Self::Public => "public",
        }
    }
}
