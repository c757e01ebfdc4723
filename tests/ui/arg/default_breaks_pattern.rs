use fusion_runtime::prelude::*;

/// Pick a code.
#[mcp_tool]
async fn code(#[arg(pattern = "^[a-z]+$", default = "ABC")] code: String) -> String {
    code
}

fn main() {}
