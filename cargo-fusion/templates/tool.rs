/// Greet someone by name.
#[mcp_tool(read_only, idempotent)]
async fn greet(
    /// Who to greet, e.g. "Ada".
    name: String,
) -> String {
    format!("Hello, {name}!")
}
