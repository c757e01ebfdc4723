use fusion_runtime::prelude::*;

/// Flaky.
#[mcp_tool(reconnect = db, retry(attempts = 2))]
async fn flaky() -> String {
    String::new()
}

fn main() {}
