//! Snapshots of each example server's `tools/list`, as a client receives it over stdio, so
//! every schema change is seen in review. The schemas are portable by default: references
//! inlined, except a type one schema repeats, hoisted into that schema's own `$defs`; no
//! non-standard formats, no `type` arrays.

mod support;

use std::{process::Command, time::Duration};

use serde_json::Value;

/// Initialize, list the tools, and read the answer to the listing.
fn tools_list(binary: &std::path::Path) -> Value {
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"snapshot","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    ];
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("printf '%s\\n' \"$@\" | {}", binary.display()))
        .arg("sh")
        .args(lines)
        .env("RUST_LOG", "off");
    let out = support::run_with_timeout(command, Duration::from_secs(30));
    assert!(out.success(), "{}", out.report());
    out.stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|message| message["id"] == 2)
        .map(|message| message["result"]["tools"].clone())
        .unwrap_or_else(|| panic!("no tools/list answer\n{}", out.report()))
}

/// No schema may use what strict clients reject, and every reference points into the
/// `$defs` of the schema it is in.
fn assert_portable(tools: &Value) {
    for tool in tools.as_array().into_iter().flatten() {
        for key in ["inputSchema", "outputSchema"] {
            let schema = &tool[key];
            let text = schema.to_string();
            let defs = schema.get("$defs").and_then(Value::as_object);
            for reference in text.split("\"$ref\":\"").skip(1) {
                let target = reference.split('"').next().unwrap_or_default();
                let name = target.strip_prefix("#/$defs/");
                assert!(
                    name.is_some_and(|name| defs.is_some_and(|defs| defs.contains_key(name))),
                    "a reference `{target}` that is not to its own schema's $defs: {text}"
                );
            }
        }
    }
    fn walk(value: &Value) {
        match value {
            Value::Object(object) => {
                if let Some(kind) = object.get("type") {
                    assert!(kind.is_string(), "a `type` array: {value}");
                }
                if let Some(Value::String(format)) = object.get("format") {
                    assert!(
                        ["email", "uri", "uuid", "date", "date-time", "ipv4", "ipv6"]
                            .contains(&format.as_str()),
                        "a non-standard format `{format}`"
                    );
                }
                object.values().for_each(walk);
            }
            Value::Array(items) => items.iter().for_each(walk),
            _ => {}
        }
    }
    walk(tools);
}

#[test]
fn quickstart_tools() {
    let tools = tools_list(&support::example_binary("quickstart"));
    assert_portable(&tools);
    insta::assert_json_snapshot!(tools);
}

#[test]
fn inventory_tools() {
    let tools = tools_list(&support::example_binary("inventory"));
    assert_portable(&tools);
    // `transfer_stock`'s two addresses are one type, listed once; each keeps its own words.
    let transfer = tools
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "transfer_stock"))
        .expect("transfer_stock is listed");
    let schema = &transfer["inputSchema"];
    assert_eq!(schema["properties"]["from"]["$ref"], "#/$defs/Address");
    assert_eq!(schema["properties"]["to"]["$ref"], "#/$defs/Address");
    assert_eq!(
        schema["properties"]["to"]["description"],
        "The warehouse it goes to."
    );
    assert_eq!(
        schema["$defs"]["Address"]["properties"]["country"]["pattern"],
        "^[A-Z]{2}$"
    );
    insta::assert_json_snapshot!(tools);
}

#[test]
fn demo_tools() {
    let tools = tools_list(&support::package_binary("fusion-demo"));
    assert_portable(&tools);
    insta::assert_json_snapshot!(tools);
}
