//! The MCP Inspector CLI (`@modelcontextprotocol/inspector@2.12.0 --cli`) against the example
//! servers: the quickstart and the demo over stdio (tools/list, tools/call, exit code 5 on
//! `isError`, `--strict` schemas), the inventory's schema with a type hoisted into `$defs`,
//! and the conformance example over Streamable HTTP.
//!
//! Needs Node ≥ 22 with npx (`scripts/node-env`, or `FUSION_NODE_BIN`) and the built examples
//! and binaries; without Node the test is skipped with a note, except under `CI=true`, where
//! it fails. Inspector runs are serialized (one npx cache).

use crate::support;

use std::{path::Path, process::Command, time::Duration};

const INSPECTOR: &str = "@modelcontextprotocol/inspector@2.12.0";

/// One Inspector run; the first may download the package.
const RUN_TIMEOUT: Duration = Duration::from_secs(180);

/// One npx at a time: two first runs in parallel would both install the package into the
/// same npx cache directory.
static NPX: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn inspector(node_bin: &Path, args: &[&str]) -> support::RunOutput {
    let _one_at_a_time = NPX.lock().unwrap_or_else(|e| e.into_inner());
    let mut command = Command::new(node_bin.join("npx"));
    command
        .args(["-y", INSPECTOR, "--cli"])
        .args(args)
        .env("PATH", support::path_with(node_bin))
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "warn")
        .env("npm_config_update_notifier", "false");
    support::run_with_timeout(command, RUN_TIMEOUT)
}

fn json(out: &support::RunOutput) -> serde_json::Value {
    serde_json::from_str(out.stdout.trim())
        .unwrap_or_else(|e| panic!("the Inspector printed no JSON ({e})\n{}", out.report()))
}

#[test]
fn the_inspector_cli_lists_and_calls_tools() {
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let quickstart = support::example_binary("quickstart");
    let quickstart = quickstart.to_str().expect("a UTF-8 path");

    let listed = inspector(&node_bin, &[quickstart, "--method", "tools/list"]);
    assert!(listed.success(), "tools/list\n{}", listed.report());
    let names: Vec<String> = json(&listed)["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        names.iter().any(|name| name == "add") && names.len() == 6,
        "the quickstart's six tools: {names:?}"
    );

    let added = inspector(
        &node_bin,
        &[
            quickstart,
            "--method",
            "tools/call",
            "--tool-name",
            "add",
            "--tool-args-json",
            r#"{"a":2,"b":3}"#,
        ],
    );
    assert!(added.success(), "tools/call add\n{}", added.report());
    let result = json(&added);
    assert_eq!(result["structuredContent"]["result"], 5, "{result}");
    assert_eq!(result["isError"], false, "{result}");

    let failed = inspector(
        &node_bin,
        &[
            quickstart,
            "--method",
            "tools/call",
            "--tool-name",
            "divide",
            "--tool-args-json",
            r#"{"a":1,"b":0}"#,
        ],
    );
    assert_eq!(
        failed.status.and_then(|status| status.code()),
        Some(5),
        "a tool result with isError exits 5\n{}",
        failed.report()
    );
    assert_eq!(json(&failed)["isError"], true);

    let strict = inspector(
        &node_bin,
        &[quickstart, "--method", "tools/list", "--strict"],
    );
    assert!(
        strict.success(),
        "--strict finds no schema problem in the quickstart\n{}",
        strict.report()
    );
    let demo = support::package_binary("fusion-demo");
    let demo_strict = inspector(
        &node_bin,
        &[
            demo.to_str().expect("a UTF-8 path"),
            "--method",
            "tools/list",
            "--strict",
        ],
    );
    assert!(
        demo_strict.success(),
        "--strict finds no schema problem in the demo\n{}",
        demo_strict.report()
    );
}

#[test]
fn the_inspector_cli_reads_a_schema_whose_repeated_type_is_hoisted() {
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let inventory = support::example_binary("inventory");
    let inventory = inventory.to_str().expect("a UTF-8 path");
    let strict = inspector(
        &node_bin,
        &[inventory, "--method", "tools/list", "--strict"],
    );
    assert!(
        strict.success(),
        "--strict finds no schema problem in the inventory, `$defs` included\n{}",
        strict.report()
    );
    let transfer = json(&strict)["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "transfer_stock"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        transfer["inputSchema"]["properties"]["from"]["$ref"], "#/$defs/Address",
        "{transfer}"
    );
    let address = r#"{"street":"1 Quay Road","country":"FR"}"#;
    let args = format!(
        r#"{{"sku":"SKU-1234","units":3,"from":{address},"to":{}}}"#,
        address.replace("FR", "DE")
    );
    let moved = inspector(
        &node_bin,
        &[
            inventory,
            "--method",
            "tools/call",
            "--tool-name",
            "transfer_stock",
            "--tool-args-json",
            &args,
        ],
    );
    assert!(
        moved.success(),
        "tools/call transfer_stock\n{}",
        moved.report()
    );
    let result = json(&moved);
    assert_eq!(result["isError"], false, "{result}");
    // The server still checks each use of the type against the whole definition.
    let wrong = args.replace("\"DE\"", "\"Germany\"");
    let refused = inspector(
        &node_bin,
        &[
            inventory,
            "--method",
            "tools/call",
            "--tool-name",
            "transfer_stock",
            "--tool-args-json",
            &wrong,
        ],
    );
    let refusal = json(&refused);
    assert_eq!(refusal["isError"], true, "{refusal}");
    assert!(refusal.to_string().contains("to.country"), "{refusal}");
}

#[test]
fn the_inspector_cli_reaches_the_conformance_example_over_http() {
    let Some(node_bin) = support::node_bin() else {
        return;
    };
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]).env("RUST_LOG", "warn");
    let server = support::HttpServer::start(command, Duration::from_secs(30));

    let strict = inspector(
        &node_bin,
        &[server.url(), "--method", "tools/list", "--strict"],
    );
    assert!(
        strict.success(),
        "--strict over HTTP\n{}\n--- server ---\n{}",
        strict.report(),
        server.stderr()
    );
    let read = inspector(
        &node_bin,
        &[
            server.url(),
            "--method",
            "resources/read",
            "--uri",
            "test://template/42/data",
        ],
    );
    assert!(read.success(), "resources/read\n{}", read.report());
    let contents = &json(&read)["contents"][0];
    assert_eq!(contents["mimeType"], "application/json", "{contents}");
    assert!(
        contents["text"]
            .as_str()
            .is_some_and(|text| text.contains("Data for ID: 42")),
        "{contents}"
    );
    let prompt = inspector(
        &node_bin,
        &[
            server.url(),
            "--method",
            "prompts/get",
            "--prompt-name",
            "test_prompt_with_arguments",
            "--prompt-args",
            "arg1=a",
            "arg2=b",
        ],
    );
    assert!(prompt.success(), "prompts/get\n{}", prompt.report());
    assert_eq!(
        json(&prompt)["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='a', arg2='b'"
    );
}
