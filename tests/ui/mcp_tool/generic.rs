use fusion_runtime::prelude::*;

/// Echo anything.
#[mcp_tool]
async fn echo<T: Send>(value: T) -> String {
    let _ = value;
    String::new()
}

fn main() {}
