use fusion_runtime::prelude::*;

/// Take a few.
#[mcp_tool]
async fn take(#[arg(maximum = 10)] count: u32) -> u32 {
    count
}

fn main() {}
