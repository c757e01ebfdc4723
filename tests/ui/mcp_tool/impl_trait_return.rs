use fusion_runtime::prelude::*;

/// Return an opaque type.
#[mcp_tool]
async fn opaque() -> impl std::fmt::Display {
    5
}

fn main() {}
