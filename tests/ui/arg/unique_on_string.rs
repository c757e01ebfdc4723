use fusion_runtime::prelude::*;

/// Name it.
#[mcp_tool]
async fn name(#[arg(unique)] name: String) -> String {
    name
}

fn main() {}
