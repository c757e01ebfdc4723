//! One listed tool for a whole group (grouped [`Exposure`](crate::tool::Exposure)): its
//! description, hints and input schema, and the declarations that would make that schema lie.
//!
//! The schema says exactly what the runtime accepts (issue 21): a payload validates against
//! it when, and only when, the call is routed to an action whose own schema it fits. So it
//! has two layers:
//! - the top level lists every action's properties, each with its one schema (the values),
//!   `action` (an enum of the names) required, nothing else allowed: what a client that reads
//!   only `properties` needs, and what the model reads;
//! - `oneOf` has one branch per action: `action` equal to its name, its parameters allowed
//!   (`{}`: the top level has checked their values), its required ones required, nothing
//!   else allowed. Only the called action's branch can match, since the names differ.
//!
//! A property's schema is the same in every action that takes it, or the top level could
//! not hold it: [`conflicts`] makes two different declarations of one name a build error
//! naming both actions, instead of the first one silently winning.

use serde_json::{Map, Value};

use crate::{
    setup::error::{BuildError, BuildWarning},
    tool::{ACTION_KEY, Annotations, ToolDefinition},
};

/// What the registry lists for a group, before it becomes an rmcp `Tool`.
pub(crate) struct GroupTool {
    pub(crate) description: String,
    pub(crate) schema: Map<String, Value>,
    pub(crate) hints: Annotations,
    /// Set when read-only and destructive actions share the listed tool's hints.
    pub(crate) warning: Option<BuildWarning>,
}

/// Keywords that describe a schema without constraining its values: two declarations that
/// differ only in them are the same parameter.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// The declarations of one name that differ across the actions of `group`: each
/// parameter (and each shared `$defs` type) whose schema, annotations aside, is not the
/// same in every action that declares it.
pub(crate) fn conflicts<C>(
    group: &str,
    actions: &[(&'static str, usize)],
    handlers: &[ToolDefinition<C>],
) -> Vec<BuildError> {
    let mut errors = Vec::new();
    for section in ["properties", "$defs"] {
        // Name → the first action that declared it, and its schema without annotations.
        let mut seen: Vec<(&str, &str, Value)> = Vec::new();
        for (action, index) in actions {
            let Some(Value::Object(declared)) = handlers[*index].input_schema.get(section) else {
                continue;
            };
            for (name, schema) in declared {
                let schema = without_annotations(schema);
                match seen.iter().find(|(known, _, _)| known == name) {
                    Some((_, first, first_schema)) if *first_schema != schema => {
                        errors.push(BuildError::ConflictingParameter {
                            group: group.to_owned(),
                            parameter: if section == "properties" {
                                format!("`{name}`")
                            } else {
                                format!("the type `{name}`")
                            },
                            first: (*first).to_owned(),
                            second: (*action).to_owned(),
                        });
                    }
                    Some(_) => {}
                    None => seen.push((name, action, schema)),
                }
            }
        }
    }
    errors
}

/// A schema with the annotation keywords removed at every level (a nested object's
/// property descriptions included).
fn without_annotations(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .filter(|(key, _)| !ANNOTATIONS.contains(&key.as_str()))
                .map(|(key, value)| {
                    // `properties` and `$defs` hold names, not keywords: a property may be
                    // called `description`.
                    let value = match (key.as_str(), value) {
                        ("properties" | "$defs" | "patternProperties", Value::Object(named)) => {
                            Value::Object(
                                named
                                    .iter()
                                    .map(|(name, inner)| (name.clone(), without_annotations(inner)))
                                    .collect(),
                            )
                        }
                        _ => without_annotations(value),
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_annotations).collect()),
        other => other.clone(),
    }
}

/// The listed tool of `group`: the actions' properties at the top level (each noting which
/// actions use and require it), and one `oneOf` branch per action.
pub(crate) fn group_tool<'h, C: 'h>(
    group: &str,
    description: Option<&String>,
    actions: &[(&'static str, usize)],
    handler: impl Fn(usize) -> &'h ToolDefinition<C>,
) -> GroupTool {
    let mut properties: Map<String, Value> = Map::new();
    let mut used_by: Vec<(String, Vec<&str>, Vec<&str>)> = Vec::new();
    let mut defs = Map::new();
    let mut action_lines = Vec::new();
    let mut branches = Vec::new();
    for (action, index) in actions {
        let schema = &handler(*index).input_schema;
        let description = handler(*index).spec.description;
        let summary = first_line(description).trim_end_matches('.');
        action_lines.push(format!("`{action}`: {summary}"));
        if let Some(Value::Object(action_defs)) = schema.get("$defs") {
            for (name, def) in action_defs {
                defs.entry(name.clone()).or_insert_with(|| def.clone());
            }
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut allowed = Map::new();
        allowed.insert(ACTION_KEY.into(), serde_json::json!({ "const": action }));
        if let Some(Value::Object(action_properties)) = schema.get("properties") {
            for (name, property) in action_properties {
                allowed.insert(name.clone(), Value::Object(Map::new()));
                match used_by.iter_mut().find(|(known, _, _)| known == name) {
                    Some((_, users, requirers)) => {
                        users.push(action);
                        if required.contains(&name.as_str()) {
                            requirers.push(action);
                        }
                    }
                    None => {
                        properties.insert(name.clone(), property.clone());
                        let requirers = if required.contains(&name.as_str()) {
                            vec![*action]
                        } else {
                            Vec::new()
                        };
                        used_by.push((name.clone(), vec![*action], requirers));
                    }
                }
            }
        }
        let mut branch_required = vec![Value::from(ACTION_KEY)];
        branch_required.extend(required.iter().map(|name| Value::from(*name)));
        let mut branch = Map::new();
        branch.insert(
            "title".into(),
            Value::String(format!("{ACTION_KEY} = {action}")),
        );
        branch.insert("description".into(), Value::String(summary.to_owned()));
        branch.insert("properties".into(), Value::Object(allowed));
        branch.insert("required".into(), Value::Array(branch_required));
        branch.insert("additionalProperties".into(), Value::Bool(false));
        branches.push(Value::Object(branch));
    }
    for (name, users, requirers) in &used_by {
        if let Some(Value::Object(property)) = properties.get_mut(name) {
            let mut note = format!("Used by: {}.", users.join(", "));
            if !requirers.is_empty() {
                note.push_str(&format!(" Required for: {}.", requirers.join(", ")));
            }
            let text = match property.get("description").and_then(Value::as_str) {
                Some(existing) => format!("{existing} ({note})"),
                None => note,
            };
            property.insert("description".into(), Value::String(text));
        }
    }
    let names: Vec<Value> = actions
        .iter()
        .map(|(name, _)| Value::String((*name).to_owned()))
        .collect();
    let mut action_property = Map::new();
    action_property.insert("type".into(), "string".into());
    action_property.insert("enum".into(), Value::Array(names));
    action_property.insert(
        "description".into(),
        Value::String(format!("The operation to run: {}", action_lines.join("; "))),
    );
    let mut all = Map::new();
    all.insert(ACTION_KEY.into(), Value::Object(action_property));
    all.extend(properties);
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(all));
    schema.insert("required".into(), Value::Array(vec![ACTION_KEY.into()]));
    schema.insert("additionalProperties".into(), Value::Bool(false));
    schema.insert("oneOf".into(), Value::Array(branches));
    if !defs.is_empty() {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    let description = description.cloned().unwrap_or_else(|| {
        format!(
            "Operations on {group}. Choose one with `action`: {}",
            action_lines.join("; ")
        )
    });
    let specs: Vec<Annotations> = actions
        .iter()
        .map(|(_, index)| handler(*index).spec.annotations)
        .collect();
    let (hints, warning) = listed_hints(group, actions, &specs);
    GroupTool {
        description,
        schema,
        hints,
        warning,
    }
}

/// The hints of the one tool that lists a group, and the warning when they misstate its
/// reads. Read-only only if every action is; idempotent only if all are; open-world if
/// any is. Destructive if any action says so; not destructive when every action that
/// writes says `destructive = false`; else unset, which MCP reads as destructive for a
/// tool that is not read-only. So a group with reads and a write that may destroy is
/// destructive for the reads too: [`BuildWarning::MixedGroupHints`].
fn listed_hints(
    group: &str,
    actions: &[(&'static str, usize)],
    specs: &[Annotations],
) -> (Annotations, Option<BuildWarning>) {
    let every = |get: fn(&Annotations) -> Option<bool>| specs.iter().all(|a| get(a) == Some(true));
    let any = |get: fn(&Annotations) -> Option<bool>| specs.iter().any(|a| get(a) == Some(true));
    let reads = |hints: &Annotations| hints.read_only == Some(true);
    // As a client reads one tool's hints: a tool that is not read-only is destructive
    // unless it says otherwise.
    let may_destroy = |hints: &Annotations| !reads(hints) && hints.destructive != Some(false);
    let named = |keep: &dyn Fn(&Annotations) -> bool| -> Vec<String> {
        actions
            .iter()
            .zip(specs)
            .filter(|(_, hints)| keep(hints))
            .map(|((action, _), _)| (*action).to_owned())
            .collect()
    };
    let (read_only, destructive) = (named(&reads), named(&may_destroy));
    let all_read = every(|a| a.read_only);
    let hints = Annotations {
        read_only: all_read.then_some(true),
        destructive: if any(|a| a.destructive) {
            Some(true)
        } else if !all_read && destructive.is_empty() {
            Some(false)
        } else {
            None
        },
        idempotent: every(|a| a.idempotent).then_some(true),
        open_world: any(|a| a.open_world).then_some(true),
    };
    let warning =
        (!read_only.is_empty() && !destructive.is_empty()).then(|| BuildWarning::MixedGroupHints {
            group: group.to_owned(),
            read_only,
            destructive,
        });
    (hints, warning)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::without_annotations;

    #[test]
    fn annotations_go_and_constraints_stay() {
        let schema = json!({
            "type": "integer", "minimum": 1, "description": "How many.", "default": 10,
            "title": "Take", "examples": [5]
        });
        assert_eq!(
            without_annotations(&schema),
            json!({"type": "integer", "minimum": 1})
        );
    }

    #[test]
    fn a_property_named_like_a_keyword_is_kept() {
        let schema = json!({
            "type": "object",
            "properties": {"description": {"type": "string", "description": "The text."}},
            "required": ["description"]
        });
        assert_eq!(
            without_annotations(&schema),
            json!({
                "type": "object",
                "properties": {"description": {"type": "string"}},
                "required": ["description"]
            })
        );
    }

    #[test]
    fn nested_schemas_lose_their_annotations_too() {
        let schema = json!({"anyOf": [{"type": "string", "title": "A"}, {"type": "null"}]});
        assert_eq!(
            without_annotations(&schema),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
    }
}
