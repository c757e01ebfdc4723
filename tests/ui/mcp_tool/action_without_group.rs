use fusion_runtime::prelude::*;

/// Find users.
#[mcp_tool(action = "find_many")]
async fn find_many() -> String {
    String::new()
}

fn main() {}
