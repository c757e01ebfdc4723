use fusion_runtime::prelude::*;

// The tool has an error (no description); the function is still emitted, so the call
// below compiles and only the one error is reported.
#[mcp_tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

async fn use_it() -> i64 {
    add(1, 2).await
}

fn main() {
    let _ = use_it;
}
