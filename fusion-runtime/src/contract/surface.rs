//! A built server's surface as a [`Contract`]: what `tools/list`, `resources/list`,
//! `resources/templates/list` and `prompts/list` show, with each tool's effective policy,
//! scopes and task support, the schemas normalized so that registration order and map
//! order do not change it.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::{
    contract::model::{
        CacheContract, CircuitContract, Contract, FORMAT, Hints, PolicyContract,
        PromptArgumentContract, PromptContract, ResourceContract, RetryContract, TaskSupport,
        ToolContract, ToolSearchContract,
    },
    policy::DEFAULT_TIMEOUT,
    setup::registered::RegisteredTool,
    setup::registry::Listing,
    setup::server::Server,
};

/// The key of the `initialize` and `server/discover` results' `_meta` that carries the
/// surface's digest: `{"fusion/surface": {"digest": "<sha-256 hex>"}}`.
pub const SURFACE_META_KEY: &str = "fusion/surface";

impl<C: Send + Sync + 'static> Server<C> {
    /// The server's surface as canonical, serializable data: every tool (a grouped tool
    /// with each action), its schemas, hints, scopes, recovery policy and task support,
    /// and the resources, resource templates and prompts. See [`crate::contract`].
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Add two integers.
    /// #[mcp_tool(retry(attempts = 3))]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// let contract = Server::builder("calc", "1.0.0").tool(add).build().contract();
    /// let policy = contract.tools["add"].policy.clone().expect("a tool has a policy");
    /// assert_eq!(policy.retry.map(|retry| retry.attempts), Some(3));
    /// assert_eq!(contract.tools["add"].input_schema.as_ref().expect("a schema")["required"], serde_json::json!(["a", "b"]));
    /// // What `tools/list` sends for it, in bytes and tokens.
    /// let cost = contract.tools["add"].cost.expect("measured");
    /// assert!(cost.tokens > 0 && cost.tokens < cost.bytes);
    /// ```
    ///
    /// The costs ([`TokenCost`](crate::contract::TokenCost)) are counted with a tokenizer
    /// whose vocabulary is loaded on the first call in a process (about 0.15 s).
    pub fn contract(&self) -> Contract {
        let mut contract = self.surface_contract();
        crate::contract::measure(&mut contract, &self.inner.registry.wire_in_name_order());
        contract
    }

    /// The contract without its costs: all the digest covers, made without the tokenizer.
    pub(crate) fn surface_contract(&self) -> Contract {
        let registry = &self.inner.registry;
        let mut tools = BTreeMap::new();
        for listed in &registry.wire {
            let name = listed.name.to_string();
            let Some(listing) = registry.listing(&name) else {
                continue;
            };
            let mut tool = match listing {
                Listing::Single(index) => handler_contract(&registry.tools[index]),
                Listing::Group {
                    actions,
                    description,
                } => ToolContract {
                    description: description.unwrap_or_default().to_owned(),
                    annotations: hints(listed.annotations.as_ref()),
                    actions: actions
                        .iter()
                        .map(|(action, index)| {
                            (
                                (*action).to_owned(),
                                handler_contract(&registry.tools[*index]),
                            )
                        })
                        .collect(),
                    ..ToolContract::default()
                },
            };
            tool.task = self.inner.tasks.tasking(&name).map(|tasking| {
                if tasking.is_required() {
                    TaskSupport::Required
                } else {
                    TaskSupport::Optional
                }
            });
            tools.insert(name, tool);
        }
        let catalog = self.catalog();
        let resources = catalog
            .resources
            .resources()
            .into_iter()
            .map(|resource| {
                let described = resource_contract(
                    resource.name,
                    resource.title,
                    resource.description,
                    resource.mime_type,
                );
                (resource.uri, described)
            })
            .collect();
        let resource_templates = catalog
            .resources
            .templates()
            .into_iter()
            .map(|template| {
                let described = resource_contract(
                    template.name,
                    template.title,
                    template.description,
                    template.mime_type,
                );
                (template.uri_template, described)
            })
            .collect();
        let prompts = catalog
            .prompts
            .list()
            .into_iter()
            .map(|prompt| {
                let arguments = prompt
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|argument| {
                        (
                            argument.name,
                            PromptArgumentContract {
                                description: argument.description,
                                required: argument.required == Some(true),
                            },
                        )
                    })
                    .collect();
                (
                    prompt.name,
                    PromptContract {
                        title: prompt.title,
                        description: prompt.description,
                        arguments,
                    },
                )
            })
            .collect();
        let tool_search = self.inner.tool_search.as_ref().map(|search| {
            let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            ToolSearchContract {
                default_limit: count(search.settings().limit()),
                max_limit: count(crate::search::MAX_LIMIT),
            }
        });
        Contract {
            format: FORMAT,
            tools,
            resources,
            resource_templates,
            prompts,
            tool_search,
            cost: None,
        }
    }

    /// The SHA-256 of the server's [`contract`](Self::contract), in hex: the same on every
    /// replica built from the same code. Served in `/readyz`, as the metric
    /// `fusion_surface_info{digest=".."}`, and in `_meta["fusion/surface"]` of the
    /// `initialize` and `server/discover` results.
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Echo the text back.
    /// #[mcp_tool]
    /// async fn echo(text: String) -> String {
    ///     text
    /// }
    ///
    /// let server = Server::builder("demo", "1.0.0").tool(echo).build();
    /// assert_eq!(server.surface_digest(), server.contract().digest());
    /// ```
    pub fn surface_digest(&self) -> &str {
        self.inner
            .surface_digest
            .get_or_init(|| self.surface_contract().digest())
    }
}

/// One handler as the contract shows it: its own description, schemas, hints, scopes and
/// effective policy.
fn handler_contract<C>(tool: &RegisteredTool<C>) -> ToolContract {
    let definition = &tool.definition;
    let spec = &definition.spec;
    let policy = tool.policy;
    let mut scopes: Vec<String> = spec
        .scopes
        .iter()
        .map(|scope| (*scope).to_owned())
        .collect();
    scopes.sort();
    scopes.dedup();
    let mut tags: Vec<String> = spec.tags.iter().map(|tag| (*tag).to_owned()).collect();
    tags.sort();
    ToolContract {
        title: spec.title.map(str::to_owned),
        description: spec.description.to_owned(),
        input_schema: Some(normalized(&definition.input_schema)),
        output_schema: definition.output_schema.as_deref().map(normalized),
        annotations: spec.annotations.into(),
        scopes,
        tags,
        policy: Some(PolicyContract {
            timeout_ms: millis(policy.timeout.unwrap_or(DEFAULT_TIMEOUT)),
            retry: policy
                .retry
                .filter(|retry| retry.attempts > 1)
                .map(|retry| RetryContract {
                    attempts: retry.attempts,
                    backoff_ms: millis(retry.backoff),
                    max_backoff_ms: millis(retry.max_backoff),
                }),
            // As retries of one run are none: `CircuitPolicy::NONE` is no breaker.
            circuit: policy
                .circuit
                .filter(|circuit| circuit.failures > 0)
                .map(|circuit| CircuitContract {
                    failures: circuit.failures,
                    window_ms: millis(circuit.window),
                    cooldown_ms: millis(circuit.cooldown),
                }),
            idempotency_key: spec.idempotency_key.map(str::to_owned),
            serialize: spec.serialize.map(str::to_owned),
            max_output_bytes: u64::try_from(tool.max_output).unwrap_or(u64::MAX),
            cache: spec.cache.map(|cache| CacheContract {
                ttl_ms: millis(cache.ttl),
                stale_if_error_ms: millis(cache.stale_if_error),
                scope: cache.scope.as_str().to_owned(),
            }),
            invalidates: {
                let mut names: Vec<String> = spec
                    .invalidates
                    .iter()
                    .map(|name| (*name).to_owned())
                    .collect();
                names.sort();
                names
            },
        }),
        task: None,
        actions: BTreeMap::new(),
        cost: None,
    }
}

/// A resource or a template as the contract keeps it: what `resources/list` and
/// `resources/templates/list` show of it.
fn resource_contract(
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
) -> ResourceContract {
    ResourceContract {
        name,
        title,
        description,
        mime_type,
    }
}

fn hints(annotations: Option<&rmcp::model::ToolAnnotations>) -> Hints {
    annotations.map_or_else(Hints::default, |annotations| Hints {
        read_only: annotations.read_only_hint,
        destructive: annotations.destructive_hint,
        idempotent: annotations.idempotent_hint,
        open_world: annotations.open_world_hint,
    })
}

fn millis(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A schema as the contract keeps it: references inlined, every object's keys in order, and
/// every `required` list sorted (its order means nothing).
pub(crate) fn normalized(schema: &Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    crate::tool::schema::inline_refs(&mut schema);
    let mut value = crate::canonical_json::canonical(&Value::Object(schema));
    sort_required(&mut value);
    value
}

fn sort_required(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, child) in object.iter_mut() {
                if key == "required"
                    && let Value::Array(names) = child
                    && names.iter().all(Value::is_string)
                {
                    names.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                    names.dedup();
                } else {
                    sort_required(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_required),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schema_is_normalized_whatever_its_key_and_required_order() {
        let one = json!({"type": "object", "required": ["b", "a"], "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}});
        let other = json!({"properties": {"b": {"type": "integer"}, "a": {"type": "string"}}, "required": ["a", "b"], "type": "object"});
        let (Value::Object(one), Value::Object(other)) = (one, other) else {
            unreachable!("objects")
        };
        assert_eq!(normalized(&one), normalized(&other));
        assert_eq!(normalized(&one)["required"], json!(["a", "b"]));
    }
}
