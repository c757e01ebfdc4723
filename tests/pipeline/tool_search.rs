//! Tool search (issue 58, item 2): `tools/list` lists `search_tools` and `call_tool` in
//! place of the catalog; a search ranks the caller's tools and returns their schemas;
//! `call_tool` takes the same pipeline as a call by the tool's own name (validation,
//! policies, visibility, the call log); a hidden or unknown tool is the same error either
//! way; the query and the limit are bounded.

use fusion_runtime::{
    BuildError,
    identity::{Claims, RequestInfo},
    prelude::*,
    search::{MAX_LIMIT, MAX_QUERY_CHARS, ToolSearch},
    testing::{Fault, TestResult, Tester},
};
use serde_json::{Value, json};

/// Read a row of a table.
#[mcp_tool(read_only, scopes = ["db:read"], tags = ["database"])]
async fn read_row(
    /// The row's id.
    id: u32,
) -> String {
    format!("row {id}")
}

/// Drop the whole table.
#[mcp_tool(destructive, scopes = ["db:admin"], tags = ["database"])]
async fn drop_table() -> String {
    "dropped".into()
}

/// The server's clock.
#[mcp_tool(read_only)]
async fn clock() -> String {
    "12:00".into()
}

/// List the notes.
#[mcp_tool(group = "notes", action = "list", read_only)]
async fn list_notes() -> String {
    "[]".into()
}

/// Purge every note for good.
#[mcp_tool(group = "notes", action = "purge", destructive, scopes = ["notes:admin"], tags = ["maintenance"])]
async fn purge_notes() -> String {
    "purged".into()
}

fn builder(search: ToolSearch) -> fusion_runtime::ServerBuilder {
    Server::builder("search", "1")
        .tool_search(search)
        .hide_unauthorized(true)
        .tool(read_row)
        .tool(drop_table)
        .tool(clock)
        .tool(list_notes)
        .tool(purge_notes)
}

/// A caller over HTTP whose token grants `scopes`.
fn with_token(scopes: &[&str]) -> RequestInfo {
    let parts = axum::http::Request::builder()
        .body(())
        .map(|request| request.into_parts().0)
        .expect("an empty request");
    RequestInfo::from_http(&parts).with_claims(Claims::for_subject("ann", scopes.iter().copied()))
}

async fn search(tester: &Tester, query: &str) -> TestResult {
    tester.call("search_tools", json!({ "query": query })).await
}

/// The names a search found, best first.
fn found(result: &TestResult) -> Vec<String> {
    assert!(!result.is_error, "{}", result.text());
    result.data["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn code(result: &TestResult) -> Option<String> {
    result.failure().and_then(|entry| entry.code)
}

#[tokio::test]
async fn two_tools_are_listed_in_place_of_the_catalog() {
    let tester = Tester::new(builder(ToolSearch::always()).build());
    assert_eq!(tester.tools().await, ["search_tools", "call_tool"]);
    let listed = tester.list_tools().await;
    let search = Value::Object((*listed[0].input_schema).clone());
    assert_eq!(search["required"], json!(["query"]));
    assert_eq!(search["properties"]["limit"]["maximum"], json!(MAX_LIMIT));
    assert_eq!(
        search["properties"]["query"]["maxLength"],
        json!(MAX_QUERY_CHARS)
    );
    assert_eq!(
        listed[0]
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint),
        Some(true)
    );
    // Past a number of tools only: four listed tools are not more than four.
    let few = Tester::new(builder(ToolSearch::past_tools(4)).build());
    assert_eq!(
        few.tools().await,
        ["read_row", "drop_table", "clock", "notes"]
    );
    assert!(few.server().contract().tool_search.is_none());
    let many = Tester::new(builder(ToolSearch::past_tools(3)).build());
    assert_eq!(many.tools().await, ["search_tools", "call_tool"]);
}

#[tokio::test]
async fn a_search_ranks_the_tools_and_returns_what_a_call_needs() {
    let tester = Tester::new(builder(ToolSearch::always()).build());
    let result = search(&tester, "drop table").await;
    assert_eq!(found(&result)[0], "drop_table");
    let hit = &result.data["tools"][0];
    assert_eq!(hit["description"], "Drop the whole table.");
    assert_eq!(hit["annotations"]["destructiveHint"], true);
    assert_eq!(hit["inputSchema"]["type"], "object");
    // The readable text says the same, schema included.
    assert!(result.text().contains("`drop_table`"), "{}", result.text());
    assert!(result.text().contains("inputSchema"), "{}", result.text());
    // Tags, groups and parameters are searched too.
    let mut database = found(&search(&tester, "database").await);
    database.sort();
    assert_eq!(database, ["drop_table", "read_row"]);
    assert_eq!(found(&search(&tester, "maintenance").await), ["notes"]);
    let by_parameter = search(&tester, "id").await;
    assert_eq!(found(&by_parameter), ["read_row"]);
    assert_eq!(
        by_parameter.data["tools"][0]["inputSchema"]["required"],
        json!(["id"])
    );
    // Nothing found is an answer, not an error.
    let none = search(&tester, "weather forecast").await;
    assert!(found(&none).is_empty());
    assert!(none.text().contains("No tool"), "{}", none.text());
    // The limit, and the default one.
    let one = tester
        .call(
            "search_tools",
            json!({ "query": "table notes clock", "limit": 1 }),
        )
        .await;
    assert_eq!(found(&one).len(), 1);
    assert_eq!(one.data["matched"], 4);
    let few = Tester::new(builder(ToolSearch::always().default_limit(2)).build());
    assert_eq!(found(&search(&few, "table notes clock").await).len(), 2);
}

#[tokio::test]
async fn call_tool_takes_the_pipeline_of_a_direct_call() {
    let tester = Tester::new(builder(ToolSearch::always()).build());
    let called = tester
        .call(
            "call_tool",
            json!({ "name": "read_row", "arguments": { "id": 7 } }),
        )
        .await;
    assert!(!called.is_error, "{}", called.text());
    assert_eq!(called.data, "row 7");
    // By its own name, as ever.
    assert_eq!(
        tester.call("read_row", json!({ "id": 8 })).await.data,
        "row 8"
    );
    // A grouped tool's action, by the listed name.
    let listed = tester
        .call(
            "call_tool",
            json!({ "name": "notes", "arguments": { "action": "list" } }),
        )
        .await;
    assert_eq!(listed.data, "[]");
    // The tool's own validation: the same words as a direct call.
    let bad = json!({ "id": "seven" });
    let through = tester
        .call("call_tool", json!({ "name": "read_row", "arguments": bad }))
        .await;
    let direct = tester.call("read_row", bad).await;
    assert!(through.is_error);
    assert_eq!(through.text(), direct.text());
    // Its faults and its failure's words, as a direct call's.
    tester.inject("clock", Fault::transient("upstream hiccup").times(1));
    let failed = tester.call("call_tool", json!({ "name": "clock" })).await;
    assert!(failed.is_error);
    assert!(
        failed.text().starts_with("Tool `clock` failed"),
        "{}",
        failed.text()
    );
    let events = tester.log_events();
    let last = &events[events.len() - 1]["fields"];
    assert_eq!(last["tool"], "clock", "the call log names the real tool");
    // The fault is spent: the next call, through `call_tool`, succeeds.
    let ok = tester.call("call_tool", json!({ "name": "clock" })).await;
    assert_eq!(ok.data, "12:00");
    // A search is logged too, under its own name.
    search(&tester, "clock").await;
    let events = tester.log_events();
    assert_eq!(events[events.len() - 1]["fields"]["tool"], "search_tools");
}

#[tokio::test]
async fn a_caller_finds_and_calls_only_what_it_is_shown() {
    let tester = Tester::new(builder(ToolSearch::always()).build());
    let reader = tester.as_caller(with_token(&["db:read"]));
    assert_eq!(reader.tools().await, ["search_tools", "call_tool"]);
    // `drop_table` and `notes`' `purge` need scopes the reader lacks: never found.
    assert_eq!(found(&search(&reader, "drop table").await), ["read_row"]);
    assert!(found(&search(&reader, "maintenance purge").await).is_empty());
    let notes = search(&reader, "notes").await;
    assert_eq!(found(&notes), ["notes"]);
    let actions = &notes.data["tools"][0]["inputSchema"]["properties"]["action"]["enum"];
    assert_eq!(actions, &json!(["list"]));
    // And never called, through `call_tool` or directly: the same error.
    let through = reader
        .call("call_tool", json!({ "name": "drop_table" }))
        .await;
    let direct = reader.call("drop_table", json!({})).await;
    assert_eq!(code(&through).as_deref(), Some("unknown_tool"));
    assert_eq!(through.text(), direct.text());
    assert!(
        !through.text().contains("drop_table`,"),
        "{}",
        through.text()
    );
    let purge = json!({ "name": "notes", "arguments": { "action": "purge" } });
    let through = reader.call("call_tool", purge).await;
    let direct = reader.call("notes", json!({ "action": "purge" })).await;
    assert_eq!(code(&through).as_deref(), Some("unknown_action"));
    assert_eq!(through.text(), direct.text());
    // What the reader may call, it calls.
    let row = reader
        .call(
            "call_tool",
            json!({ "name": "read_row", "arguments": { "id": 1 } }),
        )
        .await;
    assert_eq!(row.data, "row 1");
}

#[tokio::test]
async fn an_unknown_tool_is_the_error_of_a_direct_call() {
    let tester = Tester::new(builder(ToolSearch::always()).build());
    let through = tester
        .call("call_tool", json!({ "name": "no_such_tool" }))
        .await;
    let direct = tester.call("no_such_tool", json!({})).await;
    assert_eq!(code(&through).as_deref(), Some("unknown_tool"));
    assert_eq!(through.text(), direct.text());
    // `call_tool` of the search's own tools, or with arguments that are not its own.
    let nested = tester
        .call(
            "call_tool",
            json!({ "name": "search_tools", "arguments": { "query": "x" } }),
        )
        .await;
    assert!(nested.is_error);
    assert!(
        nested.text().contains("call `search_tools` directly"),
        "{}",
        nested.text()
    );
    for bad in [
        json!({}),
        json!({ "name": 5 }),
        json!({ "name": "clock", "arguments": [1] }),
        json!({ "name": "clock", "args": {} }),
    ] {
        let refused = tester.call("call_tool", bad.clone()).await;
        assert!(refused.is_error, "{bad}");
        assert_eq!(
            code(&refused).as_deref(),
            Some("invalid_arguments"),
            "{bad}: {}",
            refused.text()
        );
    }
}

#[tokio::test]
async fn a_query_or_limit_out_of_bounds_is_a_clear_error() {
    let tester = Tester::new(builder(ToolSearch::always()).build());
    let long = tester
        .call("search_tools", json!({ "query": "a".repeat(1 << 20) }))
        .await;
    assert!(long.is_error);
    assert!(
        long.text().contains("longer than 1024 characters"),
        "{}",
        long.text()
    );
    let bomb = search(&tester, &"(a+)+$".repeat(50)).await;
    assert!(bomb.is_error);
    assert!(
        bomb.text().contains("at most 32 are searched"),
        "{}",
        bomb.text()
    );
    let nothing = search(&tester, "(+)*$").await;
    assert!(nothing.text().contains("no words"), "{}", nothing.text());
    for limit in [
        json!(0),
        json!(51),
        json!(1e300),
        json!(u64::MAX),
        json!("5"),
    ] {
        let refused = tester
            .call("search_tools", json!({ "query": "table", "limit": limit }))
            .await;
        assert_eq!(
            code(&refused).as_deref(),
            Some("invalid_arguments"),
            "{limit}"
        );
    }
    let missing = tester.call("search_tools", json!({})).await;
    assert!(missing.text().contains("query"), "{}", missing.text());
}

/// A tool named `search_tools`.
#[mcp_tool(name = "search_tools")]
async fn own_search() -> String {
    String::new()
}

#[test]
fn a_tool_with_a_listed_name_is_a_build_error() {
    let errors = Server::builder("clash", "1")
        .tool_search(ToolSearch::always())
        .tool(own_search)
        .try_build()
        .expect_err("the name is taken");
    assert_eq!(
        errors,
        [BuildError::ToolSearchNameTaken("search_tools".to_owned())]
    );
    // Without tool search, the name is free.
    assert!(
        Server::builder("free", "1")
            .tool(own_search)
            .try_build()
            .is_ok()
    );
}

#[test]
fn the_contract_records_tool_search() {
    let on = builder(ToolSearch::always().default_limit(8))
        .build()
        .contract();
    let recorded = on.tool_search.expect("recorded");
    assert_eq!((recorded.default_limit, recorded.max_limit), (8, 50));
    // The tools are still the contract's: callable by name.
    assert!(on.tools.contains_key("read_row"));
    let off = Server::builder("search", "1")
        .tool(clock)
        .build()
        .contract();
    assert!(off.tool_search.is_none());
    let changes = fusion_runtime::contract::diff(
        &off,
        &Server::builder("search", "1")
            .tool_search(ToolSearch::always())
            .tool(clock)
            .build()
            .contract(),
    );
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0].tool, "(tool search)");
}
