use fusion_runtime::prelude::*;

/// Tag something.
#[mcp_tool]
async fn tag(#[arg(items(default = String::new(), length(min = 3, max = 1)))] tags: Vec<String>) -> usize {
    tags.len()
}

fn main() {
    let _ = Server::builder("items", "0").tool(tag).build();
}
