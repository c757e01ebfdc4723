use fusion_runtime::prelude::*;

/// Echo text.
#[mcp_tool]
async fn echo(text: impl Into<String>) -> String {
    text.into()
}

fn main() {}
