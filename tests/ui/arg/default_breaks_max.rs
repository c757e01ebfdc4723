use fusion_runtime::prelude::*;

/// Take a few.
#[mcp_tool]
async fn take(#[arg(max = 10, default = 20)] count: u32) -> u32 {
    count
}

fn main() {}
