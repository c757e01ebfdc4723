use fusion_runtime::prelude::*;

/// Large.
#[mcp_tool(max_output = "64 kilobytes")]
async fn large() -> String {
    String::new()
}

/// Nothing at all.
#[mcp_tool(max_output = "0B")]
async fn nothing() -> String {
    String::new()
}

fn main() {}
