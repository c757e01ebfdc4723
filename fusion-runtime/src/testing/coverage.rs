//! Which tools the tests reached: [`Tester::untested`].

use serde_json::{Map, Value};

use super::Tester;
use crate::identity::RequestInfo;

impl<C: Send + Sync + 'static> Tester<C> {
    /// The tools, and the actions of grouped tools (as `tool.action`), that no call
    /// through this tester or its [`as_caller`](Tester::as_caller) copies has reached, in
    /// the order they were registered. A call reaches a tool when it resolves to it (the
    /// tool or action exists and the caller is shown it), whatever happens next: a
    /// refusal of its arguments, of its scopes or of a middleware, a fault, or a success.
    ///
    /// Assert it empty at the end of a test that means to cover every tool, so that a
    /// tool added later fails it until a test calls it.
    ///
    /// ```
    /// use fusion_runtime::{prelude::*, testing::Tester};
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// /// Subtract two integers.
    /// #[mcp_tool]
    /// async fn sub(a: i64, b: i64) -> i64 { a - b }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let tester = Tester::new(Server::builder("calc", "1").tool(add).tool(sub).build());
    /// assert_eq!(tester.untested(), ["add", "sub"]);
    /// tester.call("add", serde_json::json!({"a": 1, "b": 2})).await;
    /// assert_eq!(tester.untested(), ["sub"]);
    /// # });
    /// ```
    pub fn untested(&self) -> Vec<String> {
        let reached = self.shared.reached();
        self.server
            .inner
            .registry
            .tools
            .iter()
            .enumerate()
            .filter(|(index, _)| !reached.contains(index))
            .map(|(_, tool)| qualified_name(&tool.definition.spec))
            .collect()
    }

    /// Notes the tool (or action) a call to `tool` resolves to, as the pipeline resolves
    /// it for `request`'s caller.
    pub(super) fn reach(
        &self,
        tool: &str,
        action: Option<&str>,
        args: &Value,
        request: &RequestInfo,
    ) {
        // Resolving may take the action out of the arguments: a copy is resolved.
        let mut args = match args {
            Value::Null => Value::Object(Map::new()),
            other => other.clone(),
        };
        let registry = &self.server.inner.registry;
        let resolved = match self.server.shown(request) {
            None => registry.resolve(tool, action, &mut args),
            Some(shown) => registry.resolve_shown(tool, action, &mut args, &shown),
        };
        if let Ok((index, _)) = resolved {
            self.shared.reach(index);
        }
    }

    /// Whether the server has a tool named `tool` (a group's name counts) and, when
    /// `action` is given, a group `tool` with that action.
    pub(super) fn has(&self, tool: &str, action: Option<&str>) -> bool {
        self.server.inner.registry.tools.iter().any(|registered| {
            let spec = &registered.definition.spec;
            match (spec.group, action) {
                (Some(group), Some(action)) => group == tool && spec.action == Some(action),
                (Some(group), None) => group == tool,
                (None, None) => spec.name == tool,
                (None, Some(_)) => false,
            }
        })
    }

    /// Every name [`untested`](Tester::untested) can return.
    pub(super) fn all_names(&self) -> Vec<String> {
        let registry = &self.server.inner.registry;
        registry
            .tools
            .iter()
            .map(|tool| qualified_name(&tool.definition.spec))
            .collect()
    }
}

/// `tool`, or `tool.action` for an action of a grouped tool.
fn qualified_name(spec: &crate::tool::ToolSpec) -> String {
    match (spec.group, spec.action) {
        (Some(group), Some(action)) => format!("{group}.{action}"),
        _ => spec.name.to_owned(),
    }
}
