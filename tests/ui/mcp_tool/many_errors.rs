use fusion_runtime::prelude::*;

#[mcp_tool(name = "bad name", colour = "red")]
fn add(text: &str, #[arg(min = 5, max = 1)] n: i64) -> String {
    let _ = n;
    text.to_owned()
}

fn main() {}
