use fusion_runtime::prelude::*;

/// The price of a stock: `cache_scope` and `stale_if_error` without `cache`.
#[mcp_tool(read_only, cache_scope = "public", stale_if_error = "10m")]
async fn quote(symbol: String) -> String {
    symbol
}

/// News: a scope that does not exist, a zero duration, a name that is no tool's.
#[mcp_tool(read_only, cache = "0s", cache_scope = "everyone")]
async fn news(topic: String) -> String {
    topic
}

/// A writer naming a tool twice and a name that cannot be a tool's.
#[mcp_tool(idempotent, invalidates = ["quote", "quote", "no such tool"])]
async fn set_price(price: u32) -> String {
    price.to_string()
}

fn main() {}
