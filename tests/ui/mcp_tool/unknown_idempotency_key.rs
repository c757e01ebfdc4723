use fusion_runtime::prelude::*;

/// Charge a card.
#[mcp_tool(destructive, idempotency_key = "request_id")]
async fn charge(cents: u64) -> String {
    cents.to_string()
}

fn main() {}
