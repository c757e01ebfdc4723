//! What an upstream offers at one moment: its tools as this server lists them, read from
//! one `tools/list` (at start, and at each refresh, `refresh.rs`), and the names they are
//! listed under, made `'static` once each and never more than [`MAX_NAMES`] of them.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use serde_json::Value;

use crate::tool::Annotations;

/// The longest tool name MCP allows.
const MAX_TOOL_NAME: usize = 128;

/// The most distinct names one mount ever lists its tools under. A [`ToolSpec`] holds its
/// name as `&'static str`, so each name is leaked the first time it is seen: an upstream
/// that renames its tools at every refresh would otherwise grow this process without end.
/// Past the limit a new name is left out, and said so in the log.
///
/// [`ToolSpec`]: crate::tool::ToolSpec
pub(crate) const MAX_NAMES: usize = 4096;

/// One tool the upstream offers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct OfferedTool {
    /// As the upstream describes it, under its own name.
    pub(crate) tool: rmcp::model::Tool,
    /// As `tools/list` lists it here: the same, named `<prefix>_<name>`.
    pub(crate) wire: rmcp::model::Tool,
}

impl OfferedTool {
    /// Its name upstream.
    pub(crate) fn upstream_name(&self) -> Arc<str> {
        Arc::from(self.tool.name.as_ref())
    }

    /// Its hints as fusion reads them (`hints`).
    pub(crate) fn hints(&self) -> Annotations {
        hints(&self.tool)
    }
}

/// The hints of an upstream's tool, as fusion reads them: what it says, and destructive when
/// it says neither read-only nor destructive, as MCP's default is. Written out, so that fusion
/// never repeats a tool the upstream did not say is safe to repeat.
pub(crate) fn hints(tool: &rmcp::model::Tool) -> Annotations {
    let hints = tool.annotations.as_ref();
    let read_only = hints.and_then(|hints| hints.read_only_hint);
    Annotations {
        read_only,
        destructive: hints
            .and_then(|hints| hints.destructive_hint)
            .or((read_only != Some(true)).then_some(true)),
        idempotent: hints.and_then(|hints| hints.idempotent_hint),
        open_world: hints.and_then(|hints| hints.open_world_hint),
    }
}

/// Whether a call of a tool with `now`'s hints is treated as one with `then`'s: the same
/// retries (what is safe to repeat), the same cache (read-only).
pub(crate) fn same_treatment(then: Annotations, now: Annotations) -> bool {
    then.read_only == now.read_only
        && then.destructive == now.destructive
        && then.idempotent == now.idempotent
}

/// The tools an upstream offers, by the name they are listed under.
#[derive(Debug, Default)]
pub(crate) struct Offered {
    pub(crate) tools: HashMap<&'static str, OfferedTool>,
    /// Their names in the order the upstream listed them.
    pub(crate) order: Vec<&'static str>,
}

/// The names a mount has listed tools under, each leaked once.
#[derive(Default)]
pub(crate) struct Names(HashSet<&'static str>);

impl Names {
    /// `name`, `'static`: the one leaked before, or leaked now if there is room left.
    fn intern(&mut self, name: String) -> Option<&'static str> {
        if let Some(known) = self.0.get(name.as_str()) {
            return Some(known);
        }
        if self.0.len() >= MAX_NAMES {
            return None;
        }
        let leaked: &'static str = Box::leak(name.into_boxed_str());
        self.0.insert(leaked);
        Some(leaked)
    }
}

/// What the upstream under `prefix` offers, from the tools its `tools/list` gave: each one
/// that can be read and listed, named `<prefix>_<name>`. The others are left out, each said
/// in the log.
pub(crate) fn offered(prefix: &str, listed: Vec<Value>, names: &mut Names) -> Offered {
    let mut offered = Offered::default();
    for tool in listed {
        let tool = match serde_json::from_value::<rmcp::model::Tool>(tool) {
            Ok(tool) => tool,
            Err(error) => {
                tracing::warn!(target: "fusion::upstream", prefix, %error, "a tool the upstream listed cannot be read; it is left out");
                continue;
            }
        };
        let name = format!("{prefix}_{}", tool.name);
        let valid = name.len() <= MAX_TOOL_NAME
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'));
        if !valid || offered.tools.contains_key(name.as_str()) {
            tracing::warn!(target: "fusion::upstream", prefix, tool = %crate::limits::name(&tool.name), "a tool whose name cannot be listed (or is listed twice) is left out");
            continue;
        }
        let Some(name) = names.intern(name) else {
            tracing::warn!(target: "fusion::upstream", prefix, tool = %crate::limits::name(&tool.name), limit = MAX_NAMES, "the upstream has listed more distinct tool names than this server keeps; this one is left out");
            continue;
        };
        let mut wire = tool.clone();
        wire.name = name.into();
        offered.tools.insert(name, OfferedTool { tool, wire });
        offered.order.push(name);
    }
    offered
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_name_is_leaked_once_and_no_more_names_than_the_limit() {
        let mut names = Names::default();
        let first = names.intern("a_x".to_owned()).expect("room");
        let again = names.intern("a_x".to_owned()).expect("known");
        assert!(std::ptr::eq(first, again));
        for index in 1..MAX_NAMES {
            assert!(names.intern(format!("a_{index}")).is_some());
        }
        assert!(names.intern("a_one_too_many".to_owned()).is_none());
        assert!(
            names.intern("a_x".to_owned()).is_some(),
            "a known name is still had"
        );
    }

    #[test]
    fn tools_are_named_under_the_prefix_and_the_unlistable_left_out() {
        let mut names = Names::default();
        let listed = vec![
            json!({"name": "add", "inputSchema": {"type": "object"}}),
            json!({"name": "add", "inputSchema": {"type": "object"}}),
            json!({"name": "bad name", "inputSchema": {"type": "object"}}),
            json!({"name": 3}),
        ];
        let offered = offered("calc", listed, &mut names);
        assert_eq!(offered.tools.len(), 1);
        let add = &offered.tools["calc_add"];
        assert_eq!(add.wire.name, "calc_add");
        assert_eq!(&*add.upstream_name(), "add");
        assert_eq!(add.hints().destructive, Some(true));
    }
}
