use fusion_runtime::prelude::*;

/// Charge a card.
#[mcp_tool(destructive, retry(attempts = 3))]
async fn charge(cents: u64) -> String {
    cents.to_string()
}

fn main() {}
