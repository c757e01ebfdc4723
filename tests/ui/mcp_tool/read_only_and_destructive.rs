use fusion_runtime::prelude::*;

/// Delete everything, read-only.
#[mcp_tool(read_only, destructive)]
async fn wipe() {}

fn main() {}
