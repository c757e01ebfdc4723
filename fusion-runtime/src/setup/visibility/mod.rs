//! Which tools a caller is shown: every tool, unless the server hides what a caller may not
//! call ([`ServerBuilder::hide_unauthorized`](crate::ServerBuilder::hide_unauthorized)) or
//! has rules of its own ([`ServerBuilder::visibility`](crate::ServerBuilder::visibility)).
//!
//! A hidden tool is hidden everywhere: `tools/list` leaves it out (a grouped tool lists only
//! its shown actions, its schema and description rebuilt from them), and a call to it is
//! answered as a call to a tool that does not exist, with no did-you-mean that names it
//! (`registry.rs`). Lists are built once per set of shown handlers and kept: callers with
//! the same grants share one.

mod builder;

use std::{
    collections::HashMap,
    hash::{Hash, Hasher},
    sync::{Arc, Mutex},
};

use crate::{
    identity::{RequestInfo, TransportKind},
    tool::ToolSpec,
};

/// A rule of the user's: whether a caller is shown a tool.
pub(crate) type VisibilityRule = Arc<dyn Fn(&ToolSpec, &RequestInfo) -> bool + Send + Sync>;

/// At most this many distinct lists are kept; past it the cache starts over (callers with
/// that many different grants are rare, and a list is rebuilt in microseconds).
const MAX_CACHED_LISTS: usize = 256;

/// The handlers shown to one caller, by index in the registry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Shown(Vec<bool>);

impl Shown {
    /// Whether the handler at `index` is shown.
    pub(crate) fn has(&self, index: usize) -> bool {
        self.0.get(index).copied().unwrap_or(false)
    }

    /// A number that differs, as far as a 64-bit hash can tell, between two sets: what a
    /// session remembers of the list it was last shown.
    pub(crate) fn fingerprint(&self) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.0.hash(&mut hasher);
        // Never 0, which a session's slot uses for "nothing shown yet".
        hasher.finish() | 1
    }
}

/// The server's visibility settings, and the lists built for them.
#[derive(Default)]
pub(crate) struct Visibility {
    hide_unauthorized: bool,
    rules: Vec<VisibilityRule>,
    lists: Mutex<HashMap<Shown, Arc<[rmcp::model::Tool]>>>,
}

impl Visibility {
    pub(crate) fn new(hide_unauthorized: bool, rules: Vec<VisibilityRule>) -> Self {
        Self {
            hide_unauthorized,
            rules,
            lists: Mutex::default(),
        }
    }

    /// Whether what a caller is shown can depend on the caller: otherwise every caller is
    /// shown every tool, and nothing here runs.
    pub(crate) fn depends_on_caller(&self) -> bool {
        self.hide_unauthorized || !self.rules.is_empty()
    }

    /// Whether `request`'s caller is shown the handler `spec`.
    pub(crate) fn shows(&self, spec: &ToolSpec, request: &RequestInfo) -> bool {
        (!self.hide_unauthorized || may_call(spec.scopes, request))
            && self.rules.iter().all(|rule| rule(spec, request))
    }

    /// The handlers `request`'s caller is shown, or `None` when every caller is shown all.
    pub(crate) fn shown<'a>(
        &self,
        specs: impl Iterator<Item = &'a ToolSpec>,
        request: &RequestInfo,
    ) -> Option<Shown> {
        self.depends_on_caller()
            .then(|| Shown(specs.map(|spec| self.shows(spec, request)).collect()))
    }

    /// The list for `shown`, built by `build` the first time.
    pub(crate) fn list(
        &self,
        shown: &Shown,
        build: impl FnOnce() -> Vec<rmcp::model::Tool>,
    ) -> Arc<[rmcp::model::Tool]> {
        if let Some(list) = self.cached(shown) {
            return list;
        }
        let list: Arc<[rmcp::model::Tool]> = build().into();
        if let Ok(mut lists) = self.lists.lock() {
            if lists.len() >= MAX_CACHED_LISTS {
                lists.clear();
            }
            lists.insert(shown.clone(), Arc::clone(&list));
        }
        list
    }

    fn cached(&self, shown: &Shown) -> Option<Arc<[rmcp::model::Tool]>> {
        self.lists.lock().ok()?.get(shown).cloned()
    }
}

/// Whether a caller may call a tool that needs `scopes`, by the rule of the scope check
/// (`middleware/access.rs`): a verified token must grant them all; without a token, a caller
/// over HTTP may not (no token was verified) and one over stdio or in memory may (the
/// process's owner).
fn may_call(scopes: &[&str], request: &RequestInfo) -> bool {
    if scopes.is_empty() {
        return true;
    }
    match request.claims() {
        Some(claims) => claims.missing_scopes(scopes).is_empty(),
        None => request.transport() != TransportKind::Http,
    }
}
