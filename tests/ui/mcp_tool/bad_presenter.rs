use fusion_runtime::prelude::*;

fn present(text: &u32) -> String {
    text.to_string()
}

/// Greet.
#[mcp_tool(presenter = present)]
async fn greet() -> String {
    String::new()
}

fn main() {}
