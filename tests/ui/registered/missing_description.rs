use fusion_runtime::prelude::*;

// No description. The tool is registered and called directly; the one error is the
// missing description, not a second one at `.tool(add)` or at `add(1, 2)`.
#[mcp_tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

async fn use_it() -> i64 {
    add(1, 2).await
}

fn main() {
    let _ = use_it;
    let _ = Server::builder("registered", "0").tool(add).build();
}
