use fusion_runtime::prelude::*;

/// Add two integers.
#[mcp_tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let _ = add(1, 2);
    let _ = Server::builder("registered", "0").tool(add).build();
}
