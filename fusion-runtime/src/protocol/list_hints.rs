//! The freshness hints of list results under the 2026-07-28 revision (SEP-2549): how long a
//! client may treat the list as fresh (`ttlMs`: [`ServerBuilder::list_ttl`](crate::ServerBuilder::list_ttl))
//! and who may share it (`cacheScope`: `private` when the tools a caller is shown depend on
//! who asks). Left off for clients of earlier revisions, which have no such fields.

use rmcp::{
    model::CacheScope,
    service::{RequestContext, RoleServer},
};

use super::input_required;

/// The hints of one list result: `None` for a client of an earlier revision.
pub(super) fn hints(
    context: &RequestContext<RoleServer>,
    ttl: std::time::Duration,
    depends_on_caller: bool,
) -> Option<(u64, CacheScope)> {
    if !input_required::is_current(context) {
        return None;
    }
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    let scope = if depends_on_caller {
        CacheScope::Private
    } else {
        CacheScope::Public
    };
    Some((ttl_ms, scope))
}

/// Sets a list result's `ttlMs` and `cacheScope` from [`hints`].
macro_rules! with_hints {
    ($result:expr, $hints:expr) => {{
        let mut result = $result;
        if let Some((ttl_ms, scope)) = $hints {
            result.ttl_ms = Some(ttl_ms);
            result.cache_scope = Some(scope);
        }
        result
    }};
}

pub(super) use with_hints;
