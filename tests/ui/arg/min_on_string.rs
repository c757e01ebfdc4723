use fusion_runtime::prelude::*;

/// Name it.
#[mcp_tool]
async fn label(#[arg(min = 1)] name: String) -> String {
    name
}

fn main() {}
