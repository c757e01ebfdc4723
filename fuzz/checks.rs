//! What each fuzz target checks, shared by the targets (`fuzz_targets/`, cargo-fuzz on
//! nightly) and by `tests/hostile/fuzz_corpus.rs`, which replays the committed corpus on stable.
//! Each function takes the fuzzer's bytes and panics on a broken promise.

use std::sync::OnceLock;

use serde_json::Value;

/// The stdio line decoder and its one-pass `tools/call` reader, against serde_json.
pub fn stdio_line(data: &[u8]) {
    fusion_runtime::fuzzing::stdio_line(data);
}

/// The HTTP request guard.
pub fn http_guard(data: &[u8]) {
    fusion_runtime::fuzzing::http_guard(data);
}

/// Request-state opening.
pub fn request_state(data: &[u8]) {
    fusion_runtime::fuzzing::request_state(data);
}

/// The number-literal reader, against serde_json.
pub fn number_literals(data: &[u8]) {
    fusion_runtime::fuzzing::number_literals(data);
}

/// The inventory example's input schemas (as `tools/list` publishes them, from the
/// snapshot `tests/tools_list.rs` holds them to), each compiled by the runtime and by the
/// `jsonschema` crate.
fn schemas() -> &'static [(
    String,
    fusion_runtime::validate::Validator,
    jsonschema::Validator,
)] {
    static SCHEMAS: OnceLock<
        Vec<(
            String,
            fusion_runtime::validate::Validator,
            jsonschema::Validator,
        )>,
    > = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let snapshot = include_str!("../tests/snapshots/tools_list__inventory_tools.snap");
        let body = snapshot.splitn(3, "---").nth(2).unwrap_or("[]");
        let tools: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let tools = tools
            .get("tools")
            .cloned()
            .unwrap_or(tools)
            .as_array()
            .cloned()
            .unwrap_or_default();
        let compiled: Vec<_> = tools
            .iter()
            .filter_map(|tool| {
                let schema = tool.get("inputSchema")?;
                let oracle = jsonschema::options()
                    .with_draft(jsonschema::Draft::Draft202012)
                    .should_validate_formats(true)
                    .build(schema)
                    .ok()?;
                let runtime = fusion_runtime::validate::Validator::compile(schema.as_object()?);
                let name = tool.get("name")?.as_str()?.to_owned();
                Some((name, runtime, oracle))
            })
            .collect();
        assert!(compiled.len() >= 3, "the inventory schemas did not load");
        compiled
    })
}

/// Argument validation: on any JSON value, the runtime's verdict for each inventory tool is
/// the `jsonschema` crate's on the same schema.
pub fn arguments(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    for (name, runtime, oracle) in schemas() {
        let issues = runtime.validate(&value);
        let valid = oracle.is_valid(&value);
        assert_eq!(
            issues.is_empty(),
            valid,
            "{name}: the runtime says {issues:?}, jsonschema says valid = {valid}, for {value}"
        );
    }
}

/// A target's check.
pub type Check = fn(&[u8]);

/// Every target by name, for the corpus replay.
pub const TARGETS: [(&str, Check); 5] = [
    ("stdio_line", stdio_line),
    ("http_guard", http_guard),
    ("arguments", arguments),
    ("request_state", request_state),
    ("number_literals", number_literals),
];
