//! What a client sees of tool search: the two listed tools (`search_tools`, `call_tool`),
//! their schemas, and a search's answer as structured content with a readable text.

use std::sync::Arc;

use rmcp::model::{ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use crate::{
    search::{CALL_TOOL, MAX_LIMIT, MAX_QUERY_CHARS, SEARCH_TOOLS},
    tool::output::ToolOutput,
};

/// The schema of `search_tools`: `query` (required) and `limit`, within their bounds.
pub(crate) fn search_schema(default_limit: usize) -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "What the tool should do, in a few words (matched against tool names, descriptions, groups, tags and parameters).",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
            },
            "limit": {
                "type": "integer",
                "description": "How many tools to return, best first.",
                "minimum": 1,
                "maximum": MAX_LIMIT,
                "default": default_limit,
            },
        },
        "required": ["query"],
        "additionalProperties": false,
    }))
}

/// The schema of `call_tool`: `name` (required) and `arguments`.
pub(crate) fn call_schema() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "description": "The tool's name, as `search_tools` returned it.",
                "minLength": 1,
            },
            "arguments": {
                "type": "object",
                "description": "The tool's arguments, as its input schema describes them.",
            },
        },
        "required": ["name"],
        "additionalProperties": false,
    }))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The two tools `tools/list` lists in place of the catalog.
pub(crate) fn listed(default_limit: usize) -> Vec<Tool> {
    let mut read_only = ToolAnnotations::new();
    read_only.read_only_hint = Some(true);
    read_only.idempotent_hint = Some(true);
    read_only.open_world_hint = Some(false);
    let search = Tool::new(
        SEARCH_TOOLS,
        format!(
            "Search this server's tools by what they do. Returns the best matches (up to `limit`), each with its description, annotations and input schema. Then call one with `{CALL_TOOL}` (or by its own name)."
        ),
        Arc::new(search_schema(default_limit)),
    )
    .with_annotations(read_only);
    let call = Tool::new(
        CALL_TOOL,
        format!(
            "Call one of this server's tools by name with its arguments. Find the tool and its input schema with `{SEARCH_TOOLS}` first. The result is that tool's result."
        ),
        Arc::new(call_schema()),
    );
    vec![search, call]
}

/// The answer of one search: structured content (`query`, `tools`: each as `tools/list`
/// describes it, `matched`: how many tools matched in all, `searched`: how many the caller
/// may call) and a text that says the same for a client that reads only text.
pub(crate) fn answer(query: &str, hits: &[&Tool], matched: usize, searched: usize) -> ToolOutput {
    let tools: Vec<Value> = hits
        .iter()
        .map(|tool| serde_json::to_value(tool).unwrap_or(Value::Null))
        .collect();
    let mut text = match hits.len() {
        0 => format!(
            "No tool of {searched} matches {}. Search again with other words (what the tool should do, or a word of its name).",
            quoted(query)
        ),
        shown => format!(
            "{shown} of {matched} matching tools (of {searched}) for {}, best first. Call one with `{CALL_TOOL}` {{\"name\": .., \"arguments\": {{..}}}} or by its own name.\n",
            quoted(query)
        ),
    };
    for (tool, value) in hits.iter().zip(&tools) {
        text.push_str(&format!("\n- `{}`", tool.name));
        if let Some(description) = tool.description.as_deref() {
            text.push_str(": ");
            text.push_str(description.trim());
        }
        if let Some(annotations) = value.get("annotations") {
            text.push_str(&format!("\n  annotations: {annotations}"));
        }
        text.push_str(&format!(
            "\n  inputSchema: {}",
            Value::Object((*tool.input_schema).clone())
        ));
    }
    let structured =
        json!({ "query": query, "tools": tools, "matched": matched, "searched": searched });
    ToolOutput {
        content: vec![ContentBlock::text(text)],
        structured: Some(structured.clone()),
        data: structured,
        data_is_text: false,
        presentation: None,
    }
}

/// A query as the answer quotes it (it is at most [`MAX_QUERY_CHARS`] long).
fn quoted(query: &str) -> String {
    serde_json::to_string(query).unwrap_or_default()
}
