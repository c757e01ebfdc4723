use fusion_runtime::prelude::*;

/// Count the characters of a word.
#[mcp_tool]
async fn count(word: &str) -> usize {
    word.len()
}

fn main() {
    let _ = Server::builder("registered", "0").tool(count).build();
}
