use fusion_runtime::prelude::*;

/// Add two integers.
#[mcp_tool(readonly)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let _ = Server::builder("registered", "0").tool(add).build();
}
