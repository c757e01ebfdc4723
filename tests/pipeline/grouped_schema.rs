//! The published schema of every tool of the demo (the examples' grouped tools, `db_user` and
//! `system`), in both exposures, agrees with the runtime: a payload is accepted exactly when
//! it validates against the tool's `inputSchema`. The `jsonschema` crate is the oracle; the
//! payloads are generated from the schemas themselves (each action's required parameters
//! with a valid value, then every parameter of the tool, its own or another action's, set to
//! each value of a pool of valid, boundary and wrong values; each required parameter left
//! out; unknown keys; the action missing, unknown or not a string), and every disagreement
//! is listed. Also: two actions declaring one parameter differently is a build error.

use std::collections::BTreeSet;

use fusion_demo::Role;
use fusion_runtime::{BuildError, Server, prelude::*, testing::Tester, tool::Exposure};
use serde_json::{Map, Value, json};

/// The failures that mean "the arguments were refused" (routing or validation); any other
/// outcome (success, or the handler's own error) means they were accepted.
const REFUSED: &[&str] = &["invalid_arguments", "missing_action", "unknown_action"];

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(schema)
        .unwrap_or_else(|error| panic!("the schema does not compile: {error}\n{schema:#}"))
}

/// Values every parameter is tried with: each JSON type, numbers at the edges of the integer
/// widths and of the demo's bounds, strings of the lengths its constraints name.
fn common_pool() -> Vec<Value> {
    let text = |n: usize| Value::String("x".repeat(n));
    vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(2),
        json!(10),
        json!(50),
        json!(51),
        json!(4_294_967_295_u64),
        json!(4_294_967_296_u64),
        json!(-2_147_483_649_i64),
        json!(1.5),
        json!(1.0),
        json!(1e300),
        json!(""),
        json!("a"),
        json!("Ada Lovelace"),
        json!("ada@example.com"),
        json!("not-an-email"),
        json!("10"),
        json!("true"),
        text(40),
        text(41),
        text(80),
        text(81),
        json!([]),
        json!([1]),
        json!({}),
        json!({"a": 1}),
    ]
}

/// The pool for one parameter: its own enum values and bounds (and one past them), then
/// the common values.
fn pool(schema: &Value) -> Vec<Value> {
    let mut values = Vec::new();
    if let Some(Value::Array(choices)) = schema.get("enum") {
        values.extend(choices.iter().cloned());
    }
    for (key, step) in [("minimum", -1), ("maximum", 1)] {
        if let Some(bound) = schema.get(key).and_then(Value::as_i64) {
            values.extend([json!(bound), json!(bound.saturating_add(step))]);
        }
    }
    for key in ["minLength", "maxLength"] {
        if let Some(length) = schema.get(key).and_then(Value::as_u64) {
            let length = usize::try_from(length).unwrap_or(0);
            for n in [length.saturating_sub(1), length, length + 1] {
                values.push(Value::String("y".repeat(n)));
            }
        }
    }
    values.extend(common_pool());
    values
}

/// One listed tool, as the generator sees it.
struct Listed {
    name: String,
    schema: Value,
    /// Every parameter of the tool (all actions'), with its schema.
    properties: Map<String, Value>,
    /// `(action, its parameters, its required ones)`; one entry with no action for a tool
    /// without actions.
    actions: Vec<(Option<String>, Vec<String>, Vec<String>)>,
}

fn listed(server: &Server<fusion_demo::Ctx>) -> Vec<Listed> {
    server
        .tools()
        .iter()
        .map(|tool| {
            let schema = Value::Object((*tool.input_schema).clone());
            let mut properties = schema["properties"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let names = |value: &Value| -> Vec<String> {
                value
                    .as_array()
                    .map(|list| {
                        list.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let actions = match schema.get("oneOf").and_then(Value::as_array) {
                Some(branches) => {
                    properties.remove("action");
                    branches
                        .iter()
                        .map(|branch| {
                            let action = branch["properties"]["action"]["const"]
                                .as_str()
                                .map(str::to_owned);
                            let own: Vec<String> = branch["properties"]
                                .as_object()
                                .map(|map| map.keys().filter(|k| *k != "action").cloned().collect())
                                .unwrap_or_default();
                            let required: Vec<String> = names(&branch["required"])
                                .into_iter()
                                .filter(|name| name != "action")
                                .collect();
                            assert!(action.is_some(), "a branch without a constant action");
                            (action, own, required)
                        })
                        .collect()
                }
                None => vec![(
                    None,
                    properties.keys().cloned().collect(),
                    names(&schema["required"]),
                )],
            };
            Listed {
                name: tool.name.to_string(),
                schema,
                properties,
                actions,
            }
        })
        .collect()
}

/// The payloads for one tool.
fn payloads(tool: &Listed) -> Vec<Value> {
    let valid_value = |name: &str| -> Value {
        let schema = &tool.properties[name];
        let check = validator(schema);
        pool(schema)
            .into_iter()
            .find(|value| check.is_valid(value))
            .unwrap_or_else(|| panic!("no valid value for `{name}` in the pool: {schema}"))
    };
    let mut out = Vec::new();
    for (action, own, required) in &tool.actions {
        let mut base = Map::new();
        if let Some(action) = action {
            base.insert("action".into(), json!(action));
        }
        for name in required {
            base.insert(name.clone(), valid_value(name));
        }
        let with = |key: &str, value: Value| {
            let mut payload = base.clone();
            payload.insert(key.to_owned(), value);
            Value::Object(payload)
        };
        out.push(Value::Object(base.clone()));
        // Every parameter of the tool, this action's or another's, with every pool value.
        for (name, schema) in &tool.properties {
            for value in pool(schema) {
                out.push(with(name, value));
            }
        }
        // Each required one left out.
        for name in required {
            let mut payload = base.clone();
            payload.remove(name);
            out.push(Value::Object(payload));
        }
        // Every optional parameter at once, with valid values.
        let mut full = base.clone();
        for name in own {
            full.insert(name.clone(), valid_value(name));
        }
        out.push(Value::Object(full));
        // Keys no action has.
        out.push(with("unknown_key", json!(1)));
        out.push(with("Take", json!(1)));
        if action.is_some() {
            // The action missing, misspelt, of another case, not a string.
            let mut payload = base.clone();
            payload.remove("action");
            out.push(Value::Object(payload));
            for wrong in [
                json!("nope"),
                json!(""),
                json!(1),
                json!(null),
                json!(["find_many"]),
            ] {
                out.push(with("action", wrong));
            }
            if let Some(Value::String(name)) = base.get("action") {
                out.push(with("action", json!(name.to_uppercase())));
            }
        }
    }
    out.push(json!({}));
    out
}

/// Runs every payload of every tool of `server` through the pipeline and the oracle:
/// `(payloads, disagreements)`. `without_branches` judges against the schema as it was
/// published before issue 21 (the same, without `oneOf`), to show what the branches fix.
async fn judge(server: Server<fusion_demo::Ctx>, without_branches: bool) -> (usize, Vec<String>) {
    let tools = listed(&server);
    let tester = Tester::new(server);
    let mut count = 0;
    let mut disagreements = Vec::new();
    for tool in &tools {
        let mut schema = tool.schema.clone();
        if without_branches && let Some(object) = schema.as_object_mut() {
            object.remove("oneOf");
        }
        let oracle = validator(&schema);
        let mut seen = BTreeSet::new();
        for payload in payloads(tool) {
            if !seen.insert(payload.to_string()) {
                continue;
            }
            count += 1;
            let result = tester.call(&tool.name, payload.clone()).await;
            let refused = result
                .failure()
                .and_then(|entry| entry.code)
                .is_some_and(|code| REFUSED.contains(&code.as_str()));
            let valid = oracle.is_valid(&payload);
            if refused == valid {
                disagreements.push(format!(
                    "`{}` {payload}: the schema says {}, the runtime {}: {}",
                    tool.name,
                    if valid { "valid" } else { "invalid" },
                    if refused { "refused it" } else { "accepted it" },
                    result.text()
                ));
            }
        }
    }
    (count, disagreements)
}

#[tokio::test]
async fn the_published_schemas_and_the_runtime_agree_in_both_exposures() {
    for (exposure, enough) in [(Exposure::Grouped, 600), (Exposure::Flat, 200)] {
        let (count, disagreements) =
            judge(fusion_demo::builder(Role::Admin, exposure).build(), false).await;
        eprintln!(
            "{exposure:?}: {count} payloads, {} disagreements",
            disagreements.len()
        );
        assert!(count >= enough, "{exposure:?}: only {count} payloads");
        assert!(
            disagreements.is_empty(),
            "{exposure:?}: {} of {count} payloads judged differently:\n{}",
            disagreements.len(),
            disagreements.join("\n")
        );
    }
}

/// The oracle sees the lie the branches fix: the same payloads against the grouped schema
/// without `oneOf` (the union of the actions' properties, only `action` required) disagree
/// with the runtime, so the test above can fail.
#[tokio::test]
async fn without_the_branches_the_grouped_schema_disagrees() {
    let (count, disagreements) = judge(
        fusion_demo::builder(Role::Admin, Exposure::Grouped).build(),
        true,
    )
    .await;
    eprintln!(
        "Grouped without oneOf: {count} payloads, {} disagreements",
        disagreements.len()
    );
    assert!(
        disagreements.len() > 50,
        "{} of {count}:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
    assert!(
        disagreements
            .iter()
            .any(|line| line.contains(r#"{"action":"find_by_id"}: the schema says valid"#)),
        "{}",
        disagreements.join("\n")
    );
}

#[test]
fn a_grouped_schema_has_one_branch_per_action() {
    let server = fusion_demo::server();
    let db_user = server
        .tools()
        .iter()
        .find(|tool| tool.name == "db_user")
        .expect("db_user is listed");
    let schema = Value::Object((*db_user.input_schema).clone());
    let branches = schema["oneOf"].as_array().expect("oneOf");
    let consts: Vec<&str> = branches
        .iter()
        .filter_map(|branch| branch["properties"]["action"]["const"].as_str())
        .collect();
    assert_eq!(consts, ["find_many", "find_by_id", "create"]);
    assert_eq!(branches[1]["required"], json!(["action", "id"]));
    assert_eq!(branches[1]["additionalProperties"], false);
    // The issue's examples: each is judged as the runtime judges it.
    let oracle = validator(&schema);
    assert!(!oracle.is_valid(&json!({"action": "find_many", "id": 1})));
    assert!(!oracle.is_valid(&json!({"action": "find_by_id"})));
    assert!(!oracle.is_valid(&json!({"take": 2})));
    assert!(oracle.is_valid(&json!({"action": "find_by_id", "id": 1})));
    assert!(oracle.is_valid(&json!({"action": "find_many"})));
}

/// Two actions of `catalog` that both take `limit`, as an integer in 1..=10.
#[mcp_tool(group = "catalog", action = "list", read_only)]
async fn catalog_list(#[arg(min = 1, max = 10)] limit: u32) -> String {
    format!("{limit}")
}

/// The same `limit`, with another description only: the same parameter.
#[mcp_tool(group = "catalog", action = "search", read_only)]
async fn catalog_search(
    /// At most this many.
    #[arg(min = 1, max = 10)]
    limit: u32,
    query: String,
) -> String {
    format!("{query} {limit}")
}

/// `limit` again, but a string.
#[mcp_tool(group = "catalog", action = "export", read_only)]
async fn catalog_export(limit: String) -> String {
    limit
}

/// `limit` again, an integer with other bounds.
#[mcp_tool(group = "catalog", action = "count", read_only)]
async fn catalog_count(#[arg(min = 1, max = 99)] limit: u32) -> String {
    format!("{limit}")
}

#[test]
fn a_parameter_declared_two_ways_is_a_build_error_naming_both_actions() {
    for exposure in [Exposure::Grouped, Exposure::Flat] {
        let errors = Server::builder("catalog", "1.0.0")
            .exposure(exposure)
            .tool(catalog_list)
            .tool(catalog_search)
            .tool(catalog_export)
            .tool(catalog_count)
            .try_build()
            .err()
            .unwrap_or_else(|| panic!("{exposure:?}: a conflict must not build"));
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 2, "{messages:#?}");
        assert_eq!(
            messages[0],
            "group `catalog`: actions `list` and `export` both declare `limit`, with different types or constraints; declare it the same way in both, or rename it in one"
        );
        assert!(
            messages[1].contains("actions `list` and `count`"),
            "{messages:#?}"
        );
        assert!(matches!(
            &errors[0],
            BuildError::ConflictingParameter { group, first, second, .. }
                if group == "catalog" && first == "list" && second == "export"
        ));
    }
    // Descriptions may differ: `list` and `search` build together.
    assert!(
        Server::builder("catalog", "1.0.0")
            .tool(catalog_list)
            .tool(catalog_search)
            .try_build()
            .is_ok()
    );
}
