use fusion_runtime::prelude::*;

/// Write a row.
#[mcp_tool(scopes = ["db:write", "db write", "", "db:write", WRITE])]
async fn write_row(id: u32) -> String {
    id.to_string()
}

fn main() {}
