//! Output limits (issue 40, item 1): a text result over its tool's `max_output` (or the
//! server's) is cut at a character boundary with a note giving its full size; a structured
//! result over it is refused with `output_too_large`, never cut into something its
//! `outputSchema` refuses.

use fusion_runtime::{prelude::*, testing::Tester};
use serde_json::json;

/// `count` grinning faces: four bytes each.
#[mcp_tool]
async fn faces(count: usize) -> String {
    "😀".repeat(count)
}

/// `count` faces, under a limit of its own.
#[mcp_tool(max_output = "1KiB")]
async fn few_faces(count: usize) -> String {
    "😀".repeat(count)
}

/// A page of rows.
#[mcp_type]
#[derive(Serialize, JsonSchema)]
struct Page {
    /// The rows.
    rows: Vec<String>,
}

/// `count` rows of 100 bytes.
#[mcp_tool(max_output = "64KiB")]
async fn rows(count: usize) -> Page {
    Page {
        rows: vec!["r".repeat(100); count],
    }
}

/// The text before the note, and the note.
fn split_note(text: &str) -> (&str, &str) {
    text.split_once("\n[cut: ")
        .unwrap_or_else(|| panic!("no note in {:?}", &text[text.len().saturating_sub(300)..]))
}

#[tokio::test]
async fn a_text_over_the_limit_is_cut_between_characters_with_a_note_of_its_size() {
    // Each limit puts the cut at another byte of a four-byte character.
    for limit in 400..404 {
        let tester = Tester::new(
            Server::builder("t", "1")
                .max_output(limit)
                .tool(faces)
                .build(),
        );
        let result = tester.call("faces", json!({"count": 1000})).await;
        assert!(!result.is_error, "{}", result.text());
        let text = result.text();
        assert!(
            text.len() <= limit,
            "{} bytes over a limit of {limit}",
            text.len()
        );
        let (kept, note) = split_note(&text);
        assert!(
            !kept.is_empty() && kept.chars().all(|c| c == '😀'),
            "{kept:?}"
        );
        assert!(
            note.starts_with("the full result is 4000 bytes, over this tool's limit of"),
            "{note}"
        );
        assert!(note.contains("ask for less"), "{note}");
        assert_eq!(
            result.data,
            json!(text),
            "the tester sees what the client gets"
        );
    }
}

#[tokio::test]
async fn a_text_within_the_limit_is_untouched_and_a_tools_own_limit_wins() {
    let tester = Tester::new(
        Server::builder("t", "1")
            .max_output(100_000)
            .tool(faces)
            .tool(few_faces)
            .build(),
    );
    let whole = tester.call("faces", json!({"count": 10_000})).await;
    assert_eq!(whole.text(), "😀".repeat(10_000));
    let cut = tester.call("few_faces", json!({"count": 10_000})).await;
    let text = cut.text();
    assert!(text.len() <= 1024, "{}", text.len());
    let (_, note) = split_note(&text);
    assert!(note.contains("limit of 1024 bytes"), "{note}");
}

#[tokio::test]
async fn a_structured_result_over_the_limit_is_refused_and_never_cut() {
    let tester = Tester::new(Server::builder("t", "1").tool(rows).build());
    let small = tester.call("rows", json!({"count": 10})).await;
    assert!(!small.is_error && small.raw.structured_content.is_some());

    let large = tester.call("rows", json!({"count": 1000})).await;
    assert!(large.is_error, "{}", large.text());
    assert!(
        large.raw.structured_content.is_none(),
        "no partial value that breaks the output schema"
    );
    let entry = large.failure().expect("a failure entry");
    assert_eq!(entry.code.as_deref(), Some("output_too_large"));
    assert_eq!(entry.class, "invalid_input");
    assert!(!entry.retryable);
    let text = large.text();
    assert!(
        text.contains("more than its limit of 65536 bytes"),
        "{text}"
    );
    assert!(text.contains("Ask for less"), "{text}");
    // The refusal is a well-formed result: it reads back as one, and carries nothing of
    // the value it refused.
    let wire = large.wire_json();
    let read: rmcp::model::CallToolResult =
        serde_json::from_value(wire.clone()).expect("a CallToolResult");
    assert_eq!(read.is_error, Some(true));
    assert!(wire.to_string().len() < 2_000, "{wire}");
}
