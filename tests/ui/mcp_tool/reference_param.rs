use fusion_runtime::prelude::*;

/// Echo text.
#[mcp_tool]
async fn echo(text: &str) -> String {
    text.to_owned()
}

fn main() {}
