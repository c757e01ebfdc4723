use fusion_runtime::prelude::*;

/// Count up to a number.
#[mcp_tool]
async fn count(#[arg(items(length(max = 3)))] upto: i64) -> i64 {
    upto
}

fn main() {
    let _ = Server::builder("items", "0").tool(count).build();
}
