use fusion_runtime::prelude::*;

/// Add two integers.
#[mcp_tool(readonly, colour = "red")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
