//! A group listed as one tool carries one set of hints: one that mixes reads with actions
//! that may destroy is destructive for its reads too, and the server says so when it is
//! built (issue 36, item 5), unless the group is flat, its writes say they only add, or
//! the mix is accepted with `.allow_mixed_hints`.

use fusion_runtime::{BuildError, BuildWarning, Server, ServerBuilder, prelude::*, tool::Exposure};

/// Search the notes.
#[mcp_tool(group = "notes", action = "search", read_only)]
async fn search_notes(text: String) -> String {
    text
}

/// Delete a note.
#[mcp_tool(group = "notes", action = "delete", destructive)]
async fn delete_note(id: i64) -> String {
    format!("deleted note {id}")
}

/// Add a note (no hint: MCP counts it destructive).
#[mcp_tool(group = "notes", action = "add")]
async fn add_note(text: String) -> String {
    text
}

/// Add a note, saying it only adds.
#[mcp_tool(group = "notes", action = "append", destructive = false)]
async fn append_note(text: String) -> String {
    text
}

fn notes() -> ServerBuilder<()> {
    Server::builder("notes", "1")
}

/// The listed hints of the `notes` tool.
fn hints(server: &Server<()>) -> (Option<bool>, Option<bool>) {
    let tool = server
        .tools()
        .iter()
        .find(|tool| tool.name == "notes")
        .expect("the group is listed as one tool");
    let annotations = tool.annotations.clone().unwrap_or_default();
    (annotations.read_only_hint, annotations.destructive_hint)
}

#[test]
fn reads_grouped_with_a_destructive_action_raise_a_warning_naming_both() {
    let server = notes().tool(search_notes).tool(delete_note).build();
    assert_eq!(
        server.warnings(),
        [BuildWarning::MixedGroupHints {
            group: "notes".into(),
            read_only: vec!["search".into()],
            destructive: vec!["delete".into()],
        }]
    );
    let message = server.warnings()[0].to_string();
    for part in [
        "`notes`",
        "`search`",
        "`delete`",
        "Exposure::Flat",
        "allow_mixed_hints",
    ] {
        assert!(message.contains(part), "{part} missing from: {message}");
    }
    assert_eq!(hints(&server), (None, Some(true)));
}

#[test]
fn a_write_without_hints_counts_as_destructive() {
    let server = notes().tool(search_notes).tool(add_note).build();
    assert!(matches!(
        server.warnings(),
        [BuildWarning::MixedGroupHints { destructive, .. }] if destructive == &["add"]
    ));
    // Unset: a client reads a tool that is not read-only as destructive.
    assert_eq!(hints(&server), (None, None));
}

#[test]
fn a_write_that_says_it_only_adds_keeps_the_group_non_destructive() {
    let server = notes().tool(search_notes).tool(append_note).build();
    assert!(server.warnings().is_empty(), "{:?}", server.warnings());
    assert_eq!(hints(&server), (None, Some(false)));
}

#[test]
fn flat_groups_list_each_action_with_its_own_hints_and_raise_nothing() {
    let server = notes()
        .exposure(Exposure::Flat)
        .tool(search_notes)
        .tool(delete_note)
        .build();
    assert!(server.warnings().is_empty(), "{:?}", server.warnings());
    let search = server
        .tools()
        .iter()
        .find(|tool| tool.name == "notes_search")
        .and_then(|tool| tool.annotations.clone())
        .expect("the search action is listed with its hints");
    assert_eq!(search.read_only_hint, Some(true));
}

#[test]
fn an_accepted_mix_raises_nothing_and_an_unknown_group_is_a_build_error() {
    let server = notes()
        .tool(search_notes)
        .tool(delete_note)
        .allow_mixed_hints("notes")
        .build();
    assert!(server.warnings().is_empty(), "{:?}", server.warnings());
    let Err(errors) = notes()
        .tool(search_notes)
        .allow_mixed_hints("nots")
        .try_build()
    else {
        panic!("a misspelt group is refused");
    };
    assert_eq!(errors, [BuildError::UnknownTarget("nots".into())]);
}

#[test]
fn only_read_actions_list_the_group_read_only() {
    let server = notes().tool(search_notes).build();
    assert!(server.warnings().is_empty());
    assert_eq!(hints(&server), (Some(true), None));
}
