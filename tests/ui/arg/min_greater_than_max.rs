use fusion_runtime::prelude::*;

/// Take a few.
#[mcp_tool]
async fn take(#[arg(min = 50, max = 1)] count: u32) -> u32 {
    count
}

fn main() {}
