use fusion_runtime::prelude::*;

/// Place an order: an answer from the cache would hide that no order was placed.
#[mcp_tool(cache = "30s")]
async fn place_order(item: String) -> String {
    item
}

fn main() {}
