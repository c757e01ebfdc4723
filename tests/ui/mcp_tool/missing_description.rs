use fusion_runtime::prelude::*;

#[mcp_tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {}
