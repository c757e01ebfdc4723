use fusion_runtime::prelude::*;

/// Name it.
#[mcp_tool]
async fn name(#[arg(length(min = 10, max = 2))] name: String) -> String {
    name
}

fn main() {}
