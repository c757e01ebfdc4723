//! Each caller sees the tools it may call (issue 40, item 3): with `hide_unauthorized`, a
//! caller is listed only the tools and actions whose scopes it holds; `visibility` adds
//! rules of the user's own (by tags, say); a hidden tool is, to that caller, a tool that
//! does not exist, and no did-you-mean names it.

use std::sync::Arc;

use fusion_runtime::{
    identity::{Claims, RequestInfo},
    prelude::*,
    testing::{TestResult, Tester},
    tool::Exposure,
};
use serde_json::{Value, json};

/// Read a row.
#[mcp_tool(read_only, scopes = ["db:read"])]
async fn read_row(id: u32) -> String {
    format!("row {id}")
}

/// Drop the table.
#[mcp_tool(destructive, scopes = ["db:admin"])]
async fn drop_table() -> String {
    "dropped".into()
}

/// Server time, for anyone.
#[mcp_tool(read_only)]
async fn clock() -> String {
    "12:00".into()
}

/// List the notes.
#[mcp_tool(group = "notes", action = "list", read_only)]
async fn list_notes() -> String {
    "[]".into()
}

/// Add a note.
#[mcp_tool(group = "notes", action = "add", destructive, scopes = ["notes:write"])]
async fn add_note(text: String) -> String {
    format!("added {text}")
}

/// Purge every note.
#[mcp_tool(group = "notes", action = "purge", destructive, scopes = ["notes:admin"])]
async fn purge_notes() -> String {
    "purged".into()
}

/// The new search, still in beta.
#[mcp_tool(read_only, tags = ["beta"])]
async fn search_v2(text: String) -> String {
    text
}

fn builder(exposure: Exposure) -> fusion_runtime::ServerBuilder {
    Server::builder("vis", "1")
        .exposure(exposure)
        .hide_unauthorized(true)
        .tool(read_row)
        .tool(drop_table)
        .tool(clock)
        .tool(list_notes)
        .tool(add_note)
        .tool(purge_notes)
}

/// A request over Streamable HTTP without a token.
fn over_http() -> RequestInfo {
    let parts = axum::http::Request::builder()
        .body(())
        .map(|request| request.into_parts().0)
        .expect("an empty request");
    RequestInfo::from_http(&parts)
}

/// A request over Streamable HTTP whose verified token grants `scopes`.
fn with_token(scopes: &[&str]) -> RequestInfo {
    over_http().with_claims(Claims::for_subject("ann", scopes.iter().copied()))
}

/// `tools/list` as the caller of `request` gets it.
async fn listed(server: &Server, request: &RequestInfo) -> Vec<fusion_runtime::rmcp::model::Tool> {
    Tester::new(server.clone())
        .as_caller(request.clone())
        .list_tools()
        .await
}

fn code(result: &TestResult) -> Option<String> {
    result.failure().and_then(|entry| entry.code)
}

fn hint(result: &TestResult) -> String {
    result
        .failure()
        .and_then(|entry| entry.hint)
        .unwrap_or_default()
}

#[tokio::test]
async fn a_caller_is_listed_the_tools_and_actions_its_scopes_allow() {
    let tester = Tester::new(builder(Exposure::Grouped).build());
    let reader = tester.as_caller(with_token(&["db:read"]));
    assert_eq!(reader.tools().await, ["read_row", "clock", "notes"]);
    let admin = tester.as_caller(with_token(&[
        "db:read",
        "db:admin",
        "notes:write",
        "notes:admin",
    ]));
    assert_eq!(
        admin.tools().await,
        ["read_row", "drop_table", "clock", "notes"]
    );
    // Over HTTP without a verified token, a scoped tool could not be called: not listed.
    let anonymous = tester.as_caller(over_http());
    assert_eq!(anonymous.tools().await, ["clock", "notes"]);
    // In memory (as over stdio) the caller is the process's owner: everything.
    assert_eq!(
        tester.tools().await,
        ["read_row", "drop_table", "clock", "notes"]
    );
}

/// The `action` values a listed grouped tool offers.
async fn listed_actions(server: &Server, request: &RequestInfo, tool: &str) -> Vec<String> {
    let schema = listed(server, request)
        .await
        .iter()
        .find(|listed| listed.name == tool)
        .map(|listed| Value::Object((*listed.input_schema).clone()))
        .unwrap_or_default();
    let mut actions: Vec<String> = schema["properties"]["action"]["enum"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|action| action.as_str().map(str::to_owned))
        .collect();
    if actions.is_empty() {
        // One `oneOf` branch an action, each with its `const`.
        actions = schema["oneOf"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter_map(|branch| {
                branch["properties"]["action"]["const"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
    }
    actions
}

#[tokio::test]
async fn a_grouped_tool_lists_only_the_actions_shown_its_schema_and_hints_rebuilt() {
    let server = builder(Exposure::Grouped).build();
    let writer = with_token(&["notes:write"]);
    assert_eq!(
        listed_actions(&server, &writer, "notes").await,
        ["list", "add"]
    );
    let guest = with_token(&[]);
    assert_eq!(listed_actions(&server, &guest, "notes").await, ["list"]);
    let owner = RequestInfo::in_memory();
    assert_eq!(
        listed_actions(&server, &owner, "notes").await,
        ["list", "add", "purge"]
    );
    // The guest's `notes` only reads now: its hints say so; the description made up from
    // the actions names only `list`.
    let shown = listed(&server, &guest).await;
    let notes = shown
        .iter()
        .find(|tool| tool.name == "notes")
        .expect("notes listed");
    let hints = notes.annotations.as_ref().expect("hints");
    assert_eq!(hints.read_only_hint, Some(true), "{hints:?}");
    let description = notes.description.as_deref().unwrap_or_default();
    assert!(description.contains("`list`"), "{description}");
    assert!(
        !description.contains("add") && !description.contains("purge"),
        "{description}"
    );
}

#[tokio::test]
async fn flat_exposure_lists_only_the_actions_shown() {
    let tester = Tester::new(builder(Exposure::Flat).build());
    let writer = tester.as_caller(with_token(&["notes:write"]));
    assert_eq!(writer.tools().await, ["clock", "notes_list", "notes_add"]);
}

#[tokio::test]
async fn a_hidden_tool_is_answered_exactly_as_an_unknown_tool() {
    let tester = Tester::new(builder(Exposure::Grouped).build());
    let reader = tester.as_caller(with_token(&["db:read"]));
    let hidden = reader.call("drop_table", json!({})).await;
    let missing = reader.call("drop_tables", json!({})).await;
    assert!(hidden.is_error && missing.is_error);
    assert_eq!(code(&hidden).as_deref(), Some("unknown_tool"));
    assert_eq!(code(&missing).as_deref(), Some("unknown_tool"));
    // The same text, name for name, and the same entry but for the name.
    assert_eq!(
        hidden.text().replace("drop_table", "NAME"),
        missing.text().replace("drop_tables", "NAME"),
    );
    let mut hidden_entry = serde_json::to_value(hidden.failure()).expect("entry");
    let mut missing_entry = serde_json::to_value(missing.failure()).expect("entry");
    for entry in [&mut hidden_entry, &mut missing_entry] {
        entry["message"] = Value::Null;
    }
    assert_eq!(hidden_entry, missing_entry);
    // Nothing the reader reads names the hidden tool, whatever it asks.
    for asked in ["drop_table", "drop_tabl", "droptable", "table_drop"] {
        let answer = reader.call(asked, json!({})).await;
        let wire = answer.wire_json().to_string().replace(asked, "ASKED");
        assert!(!wire.contains("drop_table"), "{asked}: {wire}");
        assert!(
            !hint(&answer).contains("drop"),
            "{asked}: {}",
            hint(&answer)
        );
    }
    // The owner, shown it, is offered it.
    let owner_guess = tester.call("drop_tabl", json!({})).await;
    assert!(
        hint(&owner_guess).contains("drop_table"),
        "{}",
        hint(&owner_guess)
    );
}

#[tokio::test]
async fn a_hidden_action_is_answered_as_an_unknown_action_of_the_shown_ones() {
    let tester = Tester::new(builder(Exposure::Grouped).build());
    let guest = tester.as_caller(with_token(&[]));
    let hidden = guest.call("notes", json!({"action": "purge"})).await;
    let missing = guest.call("notes", json!({"action": "purgee"})).await;
    assert_eq!(code(&hidden).as_deref(), Some("unknown_action"));
    assert_eq!(code(&missing).as_deref(), Some("unknown_action"));
    // The same answer but for the name asked, listing only what the guest is shown.
    assert_eq!(
        hidden.wire_json().to_string().replace("purge", "ASKED"),
        missing.wire_json().to_string().replace("purgee", "ASKED"),
    );
    let wire = missing.wire_json().to_string();
    assert!(
        !wire.contains("`add`") && !wire.contains("`purge`"),
        "{wire}"
    );
    assert!(missing.text().contains("`list`"), "{}", missing.text());
    // "add_note" looks like `notes` action `add`: suggested to a writer, not to a guest.
    let writer = tester.as_caller(with_token(&["notes:write"]));
    let to_writer = writer.call("add_note", json!({"text": "x"})).await;
    assert!(to_writer.text().contains("`add`"), "{}", to_writer.text());
    let to_guest = guest.call("add_note", json!({"text": "x"})).await;
    assert_eq!(code(&to_guest).as_deref(), Some("unknown_tool"));
    assert!(
        !to_guest.wire_json().to_string().contains("`add`"),
        "{}",
        to_guest.text()
    );
    // A missing action lists only the shown ones.
    let no_action = guest.call("notes", json!({})).await;
    assert_eq!(code(&no_action).as_deref(), Some("missing_action"));
    assert!(!no_action.text().contains("purge"), "{}", no_action.text());
    // A grouped tool with no action shown is an unknown tool.
    let flat_guest = Tester::new(
        builder(Exposure::Flat)
            .visibility(|tool, _| tool.group != Some("notes"))
            .build(),
    );
    let gone = flat_guest.call_action("notes", "list", json!({})).await;
    assert_eq!(code(&gone).as_deref(), Some("unknown_tool"));
}

#[tokio::test]
async fn a_shown_tool_runs_as_before_and_scopes_still_guard_calls() {
    let tester = Tester::new(builder(Exposure::Grouped).build());
    let reader = tester.as_caller(with_token(&["db:read"]));
    assert_eq!(
        reader.call("read_row", json!({"id": 3})).await.data,
        "row 3"
    );
    let writer = tester.as_caller(with_token(&["notes:write"]));
    let added = writer
        .call("notes", json!({"action": "add", "text": "hi"}))
        .await;
    assert_eq!(added.data, "added hi", "{}", added.text());
}

fn beta_rule(tool: &fusion_runtime::tool::ToolSpec, request: &RequestInfo) -> bool {
    !tool.tags.contains(&"beta")
        || request
            .claims()
            .is_some_and(|claims| claims.has_scope("beta"))
}

#[tokio::test]
async fn a_visibility_rule_of_the_users_own_hides_by_tag() {
    let server = Server::builder("beta", "1")
        .visibility(beta_rule)
        .tool(search_v2)
        .tool(clock)
        .build();
    let tester = Tester::new(server);
    assert_eq!(tester.tools().await, ["clock"]);
    let refused = tester.call("search_v2", json!({"text": "x"})).await;
    assert_eq!(code(&refused).as_deref(), Some("unknown_tool"));
    let in_beta = tester.as_caller(with_token(&["beta"]));
    assert_eq!(in_beta.tools().await, ["search_v2", "clock"]);
    assert_eq!(
        in_beta.call("search_v2", json!({"text": "x"})).await.data,
        "x"
    );
    // The tags are in the contract.
    let contract = tester.server().contract();
    let tool = contract.tools.get("search_v2").expect("in the contract");
    assert_eq!(tool.tags, ["beta"]);
}

#[tokio::test]
async fn without_rules_every_caller_is_listed_every_tool() {
    let server = Server::builder("all", "1")
        .tool(read_row)
        .tool(drop_table)
        .build();
    let tester = Tester::new(server.clone());
    let anonymous = tester.as_caller(over_http());
    assert_eq!(anonymous.tools().await, ["read_row", "drop_table"]);
    assert_eq!(listed(&server, &over_http()).await, server.tools());
}

#[tokio::test]
async fn a_tester_is_shared_by_tasks_that_call_it_at_once() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let tester = Arc::new(
        Tester::new(builder(Exposure::Grouped).build()).as_caller(with_token(&["db:read"])),
    );
    send_sync(&*tester);
    let tasks: Vec<_> = (0..16)
        .map(|id| {
            let tester = Arc::clone(&tester);
            tokio::spawn(async move {
                let tools = tester.tools().await;
                let row = tester.call("read_row", json!({"id": id})).await;
                (tools, row.data)
            })
        })
        .collect();
    for (id, task) in tasks.into_iter().enumerate() {
        let (tools, data) = tokio::time::timeout(std::time::Duration::from_secs(10), task)
            .await
            .expect("in time")
            .expect("the task ran");
        assert_eq!(tools, ["read_row", "clock", "notes"]);
        assert_eq!(data, format!("row {id}"));
    }
}

#[tokio::test]
async fn the_demo_hides_writes_from_a_guest() {
    use fusion_demo::Role;
    for exposure in [Exposure::Flat, Exposure::Grouped] {
        let guest = Tester::new(fusion_demo::builder(Role::Guest, exposure).build());
        let admin = Tester::new(fusion_demo::builder(Role::Admin, exposure).build());
        let (guest_tools, admin_tools) = (guest.tools().await, admin.tools().await);
        if exposure == Exposure::Flat {
            assert!(
                !guest_tools.contains(&"db_user_create".to_owned()),
                "{guest_tools:?}"
            );
            assert!(
                guest_tools.contains(&"db_user_find_many".to_owned()),
                "{guest_tools:?}"
            );
            assert!(
                admin_tools.contains(&"db_user_create".to_owned()),
                "{admin_tools:?}"
            );
        } else {
            assert_eq!(guest_tools, admin_tools);
        }
        let created = guest
            .call_action(
                "db_user",
                "create",
                json!({"name": "Eve", "email": "eve@example.com"}),
            )
            .await;
        assert!(created.is_error);
        assert!(
            matches!(
                code(&created).as_deref(),
                Some("unknown_action" | "unknown_tool")
            ),
            "{exposure:?}: {}",
            created.text()
        );
        // A read is listed, and refused by the role check, as in MCP Fusion's demo.
        let read = guest
            .call_action("db_user", "find_many", json!({"take": 1}))
            .await;
        assert!(
            read.text().contains("requires the role `admin`"),
            "{}",
            read.text()
        );
    }
}
