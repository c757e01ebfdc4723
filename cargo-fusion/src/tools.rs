//! `cargo fusion tools`: each tool the server lists, with its hints, its recovery policy
//! and what its `tools/list` entry costs the model, as a table or as JSON.

use fusion_runtime::contract::{Contract, Hints, PolicyContract, TokenCost, ToolContract};
use serde_json::{Value, json};

use crate::contract_source::read_contract;
use crate::error::{CliError, CliResult, Verdict};
use crate::server::ServerSelection;
use crate::table::{Align, Table};

/// `cargo fusion tools`: builds the server, reads its contract, prints its tools as a
/// table, or as JSON with `json`.
///
/// # Errors
/// When the server cannot be built or read.
pub(crate) fn run(server: &ServerSelection, json: bool) -> CliResult<Verdict> {
    let contract = read_contract(&server.build()?)?;
    if json {
        let text = serde_json::to_string_pretty(&to_json(&contract))
            .map_err(|error| CliError::new(format!("cannot write JSON: {error}")))?;
        println!("{text}");
    } else {
        print!("{}", render_table(&contract));
    }
    Ok(Verdict::Passed)
}

/// The tools as a table: one row per tool, one more per action of a grouped tool
/// (`group.action`, whose hints and policy are the action's own; the cost is the listed
/// entry's, so it is on the group's row), and the whole list's cost at the end.
fn render_table(contract: &Contract) -> String {
    let mut table = Table::new(vec![
        ("TOOL", Align::Left),
        ("HINTS", Align::Left),
        ("TIMEOUT", Align::Right),
        ("RETRIES", Align::Right),
        ("IDEMPOTENCY KEY", Align::Left),
        ("CACHE", Align::Left),
        ("BYTES", Align::Right),
        ("TOKENS", Align::Right),
    ]);
    for (name, tool) in &contract.tools {
        table.row(tool_row(name, tool, true));
        for (action, contract) in &tool.actions {
            table.row(tool_row(&format!("{name}.{action}"), contract, false));
        }
    }
    let (bytes, tokens) = cost_cells(contract.cost);
    table.row(vec![
        "tools/list in all".to_owned(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        bytes,
        tokens,
    ]);
    let mut text = table.render();
    if contract.tool_search.is_some() {
        text.push_str(
            "tools/list lists search_tools and call_tool in place of these tools (tool search); each stays callable by its name\n",
        );
    }
    text
}

/// One row: a `listed` tool, or one action of a grouped tool (whose cost cells are blank:
/// the model pays for the group's entry, not for an action's).
fn tool_row(name: &str, tool: &ToolContract, listed: bool) -> Vec<String> {
    let policy = tool.policy.as_ref();
    let (bytes, tokens) = if listed {
        cost_cells(tool.cost)
    } else {
        (String::new(), String::new())
    };
    vec![
        name.to_owned(),
        hints_cell(&tool.annotations),
        policy.map_or_else(String::new, |policy| duration(policy.timeout_ms)),
        policy.map_or_else(String::new, retries_cell),
        policy
            .and_then(|policy| policy.idempotency_key.clone())
            .unwrap_or_default(),
        policy
            .and_then(|policy| policy.cache.as_ref())
            .map_or_else(String::new, |cache| {
                format!("{} {}", duration(cache.ttl_ms), cache.scope)
            }),
        bytes,
        tokens,
    ]
}

/// The hints given, `read_only idempotent`; a hint given as false reads `not destructive`.
fn hints_cell(hints: &Hints) -> String {
    [
        ("read_only", hints.read_only),
        ("destructive", hints.destructive),
        ("idempotent", hints.idempotent),
        ("open_world", hints.open_world),
    ]
    .into_iter()
    .filter_map(|(name, given)| match given? {
        true => Some(name.to_owned()),
        false => Some(format!("not {name}")),
    })
    .collect::<Vec<_>>()
    .join(", ")
}

/// The retries after the first run (`0` when the tool runs once).
fn retries_cell(policy: &PolicyContract) -> String {
    let attempts = policy.retry.map_or(1, |retry| retry.attempts);
    attempts.saturating_sub(1).to_string()
}

/// The bytes and tokens cells, `-` when the contract carries no measure.
fn cost_cells(cost: Option<TokenCost>) -> (String, String) {
    match cost {
        Some(cost) => (cost.bytes.to_string(), cost.tokens.to_string()),
        None => ("-".to_owned(), "-".to_owned()),
    }
}

/// Milliseconds as a person reads them: `30s`, `1500ms`, `5m`.
fn duration(milliseconds: u64) -> String {
    const SECOND: u64 = 1_000;
    const MINUTE: u64 = 60 * SECOND;
    if milliseconds >= MINUTE && milliseconds.is_multiple_of(MINUTE) {
        format!("{}m", milliseconds / MINUTE)
    } else if milliseconds >= SECOND && milliseconds.is_multiple_of(SECOND) {
        format!("{}s", milliseconds / SECOND)
    } else {
        format!("{milliseconds}ms")
    }
}

/// The tools as JSON: `{"tools": [..], "total": {bytes, tokens} | null, "tool_search":
/// bool}`, each tool with its `name`, all four `annotations` (`null` when not given), its
/// `policy` as the contract has it (`null` on a grouped tool), its `cost` and its
/// `actions` (each like a tool, without a cost). `tool_search` is true when `tools/list`
/// lists `search_tools` and `call_tool` in the tools' place.
fn to_json(contract: &Contract) -> Value {
    let tools: Vec<Value> = contract
        .tools
        .iter()
        .map(|(name, tool)| {
            let actions: Vec<Value> = tool
                .actions
                .iter()
                .map(|(action, contract)| entry_json(action, contract))
                .collect();
            let mut entry = entry_json(name, tool);
            entry["cost"] = cost_json(tool.cost);
            entry["actions"] = Value::Array(actions);
            entry
        })
        .collect();
    json!({
        "tools": tools,
        "total": cost_json(contract.cost),
        "tool_search": contract.tool_search.is_some(),
    })
}

/// A tool's or an action's name, hints and policy.
fn entry_json(name: &str, tool: &ToolContract) -> Value {
    let hints = &tool.annotations;
    json!({
        "name": name,
        "annotations": {
            "read_only": hints.read_only,
            "destructive": hints.destructive,
            "idempotent": hints.idempotent,
            "open_world": hints.open_world,
        },
        "policy": tool.policy,
    })
}

fn cost_json(cost: Option<TokenCost>) -> Value {
    cost.map_or(
        Value::Null,
        |cost| json!({ "bytes": cost.bytes, "tokens": cost.tokens }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_largest_whole_unit() {
        assert_eq!(duration(300_000), "5m");
        assert_eq!(duration(30_000), "30s");
        assert_eq!(duration(1_500), "1500ms");
        assert_eq!(duration(0), "0ms");
    }

    #[test]
    fn a_hint_given_as_false_says_so() {
        let hints: Hints = serde_json::from_value(json!({"read_only": true, "destructive": false}))
            .unwrap_or_default();
        assert_eq!(hints_cell(&hints), "read_only, not destructive");
    }
}
