use fusion_runtime::prelude::*;

/// Take a few.
#[mcp_tool]
async fn take(#[arg(pattern = "^[0-9]+$")] count: u32) -> u32 {
    count
}

fn main() {}
