use fusion_runtime::prelude::*;

/// Tag something.
#[mcp_tool]
async fn tag(#[arg(items(min = 1))] tags: Vec<String>) -> usize {
    tags.len()
}

fn main() {
    let _ = Server::builder("items", "0").tool(tag).build();
}
