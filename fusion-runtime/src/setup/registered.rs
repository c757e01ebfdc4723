//! One registered tool: its definition and all the server keeps for it (the middleware
//! chain, the effective policy, the circuit breaker, the counters), in one record that the
//! pipeline's stages are handed.

use std::sync::Arc;

use crate::{
    metrics::ToolMetrics,
    middleware::Middleware,
    policy::{Circuit, CircuitPolicy, Policy},
    tool::ToolDefinition,
};

pub(crate) struct RegisteredTool<C> {
    /// What `#[mcp_tool]` built: the spec, the schemas, the validator, the handler.
    pub(crate) definition: ToolDefinition<C>,
    /// Middleware: global, then group, then tool (set when the server is built).
    pub(crate) chain: Vec<Arc<dyn Middleware<C>>>,
    /// The tool's own policy over the server's defaults (set when the server is built).
    pub(crate) policy: Policy,
    /// The most bytes its result may carry: its own limit, else the server's (set when the
    /// server is built).
    pub(crate) max_output: usize,
    /// The breaker, when the policy has one.
    pub(crate) circuit: Option<Circuit>,
    /// Calls by outcome, latency, calls in flight, retries.
    pub(crate) metrics: ToolMetrics,
    /// How a caller would check what this tool did when its outcome is unknown: a read-only
    /// action of the same group, as the model should call it (set when the server is built).
    pub(crate) check_with: Option<String>,
    /// What the cache knows this tool (or action) by: its name, or `group.action`.
    pub(crate) cache_name: Arc<str>,
    /// The cache names of the tools whose entries this one's success drops
    /// (`invalidates = [..]`, resolved when the server is built: `setup/invalidation.rs`).
    pub(crate) invalidates: Vec<Arc<str>>,
}

impl<C> RegisteredTool<C> {
    /// The tool as registered, before the server's defaults and middleware are known.
    pub(crate) fn new(definition: ToolDefinition<C>) -> Self {
        Self {
            policy: definition.spec.policy,
            max_output: definition
                .spec
                .max_output
                .unwrap_or(crate::limits::DEFAULT_MAX_OUTPUT),
            chain: Vec::new(),
            circuit: None,
            metrics: ToolMetrics::new(
                definition.spec.group.unwrap_or(definition.spec.name),
                definition.spec.action,
            ),
            check_with: None,
            cache_name: match (definition.spec.group, definition.spec.action) {
                (Some(group), Some(action)) => format!("{group}.{action}").into(),
                _ => definition.spec.name.into(),
            },
            invalidates: Vec::new(),
            definition,
        }
    }

    /// Completes the record when the server is built: the server's `defaults` under the
    /// tool's own policy, the server's output limit unless the tool has its own, a breaker if that policy has one, the middleware `chain`, and the
    /// read-only sibling that `check_with` names.
    pub(crate) fn complete(
        &mut self,
        defaults: Policy,
        max_output: usize,
        chain: Vec<Arc<dyn Middleware<C>>>,
        check_with: Option<String>,
    ) {
        self.policy = self.definition.spec.policy.or(defaults);
        self.max_output = self.definition.spec.max_output.unwrap_or(max_output);
        self.circuit = self.policy.circuit.and_then(CircuitPolicy::breaker);
        self.chain = chain;
        self.check_with = check_with;
    }

    /// The tool's name and its `task_after` (its own, or the server's), when it has one:
    /// the call becomes a task at that deadline. A group's actions share one listed tool,
    /// so they have none.
    pub(crate) fn task_deadline(&self) -> Option<(&'static str, std::time::Duration)> {
        let spec = &self.definition.spec;
        let after = self.policy.task_after.filter(|after| !after.is_zero())?;
        spec.group.is_none().then_some((spec.name, after))
    }
}
