use fusion_runtime::prelude::*;

/// Match a code.
#[mcp_tool]
async fn code(#[arg(pattern = "^[a-z+$")] code: String) -> String {
    code
}

fn main() {}
