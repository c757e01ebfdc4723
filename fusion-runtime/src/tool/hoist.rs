//! Listed schemas that repeat themselves less: a subschema that appears more than once in
//! one tool's schema (the same `filter` object in three actions of a grouped tool, one
//! enum of statuses in the input and the output's items) is written once under `$defs` and
//! referenced, when that makes the listing shorter.
//!
//! The model reads every listed byte before its first call; G-Core's 741-tool server saved
//! 25% of its tokens this way (REFERENCE.md). Everything else stays inline, as fusion lists
//! it by default, so a schema with nothing repeated is listed exactly as before.
//!
//! Two uses of one type usually differ only in what they say of it (`from` and `to`, each
//! with its own description), so occurrences are compared without their `description` and
//! `title`, and each reference keeps its own. Those two are annotations: a draft-07
//! validator, which ignores what stands beside a `$ref`, validates exactly what a 2020-12
//! one does, and the model still reads every description.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// A repeat smaller than this, in bytes of compact JSON, is left inline: its `$ref` would
/// cost about as much as it saves.
const MIN_HOISTED_BYTES: usize = 48;

/// How deep the walk goes: deeper than any schema a derive writes; a hostile user-written
/// schema stops here rather than the stack.
const MAX_DEPTH: usize = 64;

/// At most this many definitions are hoisted into one schema.
const MAX_HOISTED: usize = 64;

/// The keywords an occurrence keeps beside its `$ref`: annotations, which change what a
/// reader is told but never what validates.
const OWN_ANNOTATIONS: [&str; 2] = ["description", "title"];

/// Hoists into `schema`'s `$defs` each subschema that appears more than once, largest
/// first, while doing so shortens the schema's compact JSON. A hoisted type is named as
/// `names` names its spelling (schemars' own `$defs` names), or after the property it
/// first appears under. True when it hoisted any.
pub(crate) fn hoist_shared(
    schema: &mut Map<String, Value>,
    names: &HashMap<String, String>,
) -> bool {
    let mut hoisted = false;
    for _ in 0..MAX_HOISTED {
        let mut seen = HashMap::new();
        visit_children(schema, &mut |node, hint| {
            let spelled = spelling(node);
            let hint = names.get(&spelled).map_or(hint, String::as_str).to_owned();
            let entry = seen.entry(spelled).or_insert(Repeat { count: 0, hint });
            entry.count += 1;
        });
        let Some((spelled, hint)) = best(seen) else {
            break;
        };
        let Ok(Value::Object(shared)) = serde_json::from_str::<Value>(&spelled) else {
            break;
        };
        hoisted = true;
        let name = free_name(schema, &hint);
        let reference = format!("#/$defs/{name}");
        replace(schema, &spelled, &reference, 0);
        let defs = schema
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(defs) = defs {
            defs.insert(name, Value::Object(shared));
        }
    }
    hoisted
}

/// A subschema's spelling without its own annotations: canonical JSON, keys in order.
pub(crate) fn spelling(node: &Value) -> String {
    match node {
        Value::Object(object) => {
            let bare: Map<String, Value> = object
                .iter()
                .filter(|(key, _)| !OWN_ANNOTATIONS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect();
            crate::canonical_json::canonical(&Value::Object(bare)).to_string()
        }
        other => crate::canonical_json::canonical(other).to_string(),
    }
}

/// How often one spelling of a subschema occurs, and a name to give it: the property it
/// first appears under.
struct Repeat {
    count: usize,
    hint: String,
}

/// The repeated subschema whose hoisting saves the most bytes, if any saves some.
fn best(seen: HashMap<String, Repeat>) -> Option<(String, String)> {
    seen.into_iter()
        .filter(|(spelled, repeat)| repeat.count > 1 && spelled.len() >= MIN_HOISTED_BYTES)
        .map(|(spelled, repeat)| {
            // n copies become n references and one definition under its name.
            let reference = r##"{"$ref":"#/$defs/"}"##.len() + repeat.hint.len();
            let kept = spelled.len() + repeat.hint.len() + 4;
            let saved =
                (repeat.count * spelled.len()).saturating_sub(repeat.count * reference + kept);
            (saved, spelled, repeat.hint)
        })
        .filter(|(saved, _, _)| *saved > 0)
        // Ties broken by the spelling, so a listing is the same on every build.
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        .map(|(_, spelled, hint)| (spelled, hint))
}

/// Calls `visit` on each subschema below `schema`'s root, with the name of the property it
/// sits under (or `shared`). The root's own `$defs` entries are not offered themselves
/// (they are definitions already), only what is inside them.
fn visit_children(schema: &Map<String, Value>, visit: &mut dyn FnMut(&Value, &str)) {
    for (key, value) in schema {
        if key == "$defs" {
            if let Value::Object(defs) = value {
                for def in defs.values() {
                    if let Value::Object(def) = def {
                        visit_children(def, visit);
                    }
                }
            }
            continue;
        }
        for_each_subschema(key, value, &mut |hint, node| {
            walk(node, hint.unwrap_or("shared"), visit, 1)
        });
    }
}

fn walk(node: &Value, hint: &str, visit: &mut dyn FnMut(&Value, &str), depth: usize) {
    let Value::Object(object) = node else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    if is_a_type(object) {
        visit(node, hint);
    }
    for (key, value) in object {
        for_each_subschema(key, value, &mut |inner_hint, inner| {
            walk(inner, inner_hint.unwrap_or(hint), visit, depth + 1)
        });
    }
}

/// Whether a subschema describes a type of its own (a struct's properties, an enum's
/// values, a union's branches): only those are worth a name. A constrained scalar (an
/// `i64`'s range) stays inline, where the model reads it at a glance.
fn is_a_type(object: &Map<String, Value>) -> bool {
    !object.contains_key("$ref")
        && ["properties", "enum", "oneOf", "anyOf", "allOf"]
            .iter()
            .any(|key| object.contains_key(*key))
}

/// Replaces every subschema below `schema`'s root spelled `spelled` by a `$ref` to
/// `reference`, with the subschema's own annotations beside it.
fn replace(schema: &mut Map<String, Value>, spelled: &str, reference: &str, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for (key, value) in schema.iter_mut() {
        if depth == 0 && key == "$defs" {
            if let Value::Object(defs) = value {
                for def in defs.values_mut() {
                    if let Value::Object(def) = def {
                        replace(def, spelled, reference, depth + 1);
                    }
                }
            }
            continue;
        }
        for_each_subschema_mut(key, value, &mut |node| {
            let occurs = matches!(node, Value::Object(object) if is_a_type(object))
                && spelling(node) == spelled;
            if occurs && let Value::Object(object) = node {
                let mut referring = Map::new();
                referring.insert("$ref".to_owned(), Value::String(reference.to_owned()));
                for key in OWN_ANNOTATIONS {
                    if let Some(own) = object.remove(key) {
                        referring.insert(key.to_owned(), own);
                    }
                }
                *object = referring;
            } else if let Value::Object(inner) = node {
                replace(inner, spelled, reference, depth + 1);
            }
        });
    }
}

/// The keywords whose value maps names to schemas.
const NAMED_SCHEMAS: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];
/// The keywords whose value is a list of schemas.
const LISTED_SCHEMAS: [&str; 4] = ["anyOf", "oneOf", "allOf", "prefixItems"];
/// The keywords whose value is one schema.
const ONE_SCHEMA: [&str; 10] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// The schemas held by the keyword `key` whose value is `value`, each with the property
/// name it describes, if it describes one. Data keywords (`enum`, `const`, `default`,
/// `examples`) hold no schemas.
fn for_each_subschema<'a>(
    key: &'a str,
    value: &'a Value,
    each: &mut dyn FnMut(Option<&'a str>, &'a Value),
) {
    match value {
        Value::Object(map) if NAMED_SCHEMAS.contains(&key) => {
            for (name, schema) in map {
                each(Some(name), schema);
            }
        }
        Value::Array(items) if LISTED_SCHEMAS.contains(&key) => {
            items.iter().for_each(|item| each(None, item));
        }
        Value::Object(_) if ONE_SCHEMA.contains(&key) => each(None, value),
        _ => {}
    }
}

/// [`for_each_subschema`], with each schema mutable.
fn for_each_subschema_mut(key: &str, value: &mut Value, each: &mut dyn FnMut(&mut Value)) {
    match value {
        Value::Object(map) if NAMED_SCHEMAS.contains(&key) => {
            map.values_mut().for_each(&mut *each);
        }
        Value::Array(items) if LISTED_SCHEMAS.contains(&key) => {
            items.iter_mut().for_each(&mut *each);
        }
        Value::Object(_) if ONE_SCHEMA.contains(&key) => each(value),
        _ => {}
    }
}

/// A `$defs` name from `hint` that the schema does not use yet: letters, digits and `_`.
fn free_name(schema: &Map<String, Value>, hint: &str) -> String {
    let mut base: String = hint
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(40)
        .collect();
    if base.is_empty() {
        base = "shared".to_owned();
    }
    let taken = |name: &str| {
        schema
            .get("$defs")
            .and_then(Value::as_object)
            .is_some_and(|defs| defs.contains_key(name))
    };
    if !taken(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}{n}"))
        .find(|name| !taken(name))
        .unwrap_or(base)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::hoist_shared;

    fn hoisted(schema: Value) -> Value {
        let Value::Object(mut schema) = schema else {
            unreachable!("an object")
        };
        hoist_shared(&mut schema, &Default::default());
        Value::Object(schema)
    }

    fn filter() -> Value {
        json!({"type": "object", "properties": {
            "title_contains": {"type": "string", "description": "Only notes with this word in their title."},
            "changed_after": {"type": "string", "format": "date"}
        }})
    }

    #[test]
    fn a_repeated_subschema_is_listed_once_and_referenced() {
        let schema = hoisted(json!({"type": "object", "properties": {
            "filter": filter(),
            "exclude": filter(),
            "limit": {"type": "integer"}
        }}));
        assert_eq!(
            schema["properties"]["filter"],
            json!({"$ref": "#/$defs/filter"})
        );
        assert_eq!(
            schema["properties"]["exclude"],
            json!({"$ref": "#/$defs/filter"})
        );
        assert_eq!(schema["properties"]["limit"], json!({"type": "integer"}));
        assert_eq!(
            crate::canonical_json::canonical(&schema["$defs"]["filter"]),
            crate::canonical_json::canonical(&filter())
        );
    }

    #[test]
    fn what_is_small_single_scalar_or_data_stays_where_it_is() {
        let small = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}
        }});
        assert_eq!(hoisted(small.clone()), small);
        // Two `i64`s: long enough to hoist, but a number's range is read where it is.
        let int = json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX});
        let scalars = json!({"type": "object", "properties": {"a": int.clone(), "b": int}});
        assert_eq!(hoisted(scalars.clone()), scalars);
        let single = json!({"type": "object", "properties": {"filter": filter()}});
        assert_eq!(hoisted(single.clone()), single);
        // The same object as a default value and as a schema: the default is data.
        let data = json!({"type": "object", "properties": {
            "filter": filter(),
            "other": {"type": "object", "default": filter()}
        }});
        assert_eq!(hoisted(data.clone()), data);
    }

    #[test]
    fn a_repeat_inside_a_hoisted_one_is_not_hoisted_again() {
        let outer = json!({"type": "object", "properties": {"filter": filter(), "also": filter()}});
        let schema = hoisted(json!({"type": "object", "properties": {
            "first": outer.clone(),
            "second": outer,
        }}));
        assert_eq!(
            schema["properties"]["first"],
            json!({"$ref": "#/$defs/first"})
        );
        // Inside the one definition, `filter` repeats twice: hoisted too, under its name.
        let first = &schema["$defs"]["first"]["properties"];
        assert_eq!(first["filter"], json!({"$ref": "#/$defs/filter"}));
        assert_eq!(first["also"], json!({"$ref": "#/$defs/filter"}));
        assert_eq!(schema["$defs"].as_object().map(|defs| defs.len()), Some(2));
    }

    #[test]
    fn uses_that_differ_only_in_what_they_say_share_one_definition() {
        let described = |text: &str| {
            let mut filter = filter();
            filter["description"] = json!(text);
            filter
        };
        let schema = hoisted(json!({"type": "object", "properties": {
            "include": described("Notes to keep."),
            "exclude": described("Notes to leave out."),
        }}));
        assert_eq!(
            schema["properties"]["include"],
            json!({"$ref": "#/$defs/include", "description": "Notes to keep."})
        );
        assert_eq!(
            schema["properties"]["exclude"],
            json!({"$ref": "#/$defs/include", "description": "Notes to leave out."})
        );
        assert!(schema["$defs"]["include"].get("description").is_none());
    }

    #[test]
    fn a_name_in_use_is_not_reused() {
        let schema = hoisted(json!({"type": "object",
            "properties": {"filter": filter(), "again": filter()},
            "$defs": {"filter": {"type": "string", "description": "a recursive type kept by name"}}
        }));
        assert_eq!(
            schema["properties"]["filter"],
            json!({"$ref": "#/$defs/filter2"})
        );
        assert_eq!(schema["$defs"]["filter"]["type"], "string");
    }
}
