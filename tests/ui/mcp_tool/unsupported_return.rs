use fusion_runtime::prelude::*;

struct Opaque;

/// Return something that cannot be rendered.
#[mcp_tool]
async fn opaque() -> Opaque {
    Opaque
}

fn main() {}
