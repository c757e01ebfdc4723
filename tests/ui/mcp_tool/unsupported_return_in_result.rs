use fusion_runtime::prelude::*;

struct Opaque;

/// Return something that cannot be rendered, inside a `Result`.
#[mcp_tool]
async fn opaque() -> Result<Opaque, std::io::Error> {
    Ok(Opaque)
}

fn main() {}
