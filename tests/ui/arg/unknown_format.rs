use fusion_runtime::prelude::*;

/// Mail someone.
#[mcp_tool]
async fn mail(#[arg(format = "e-mail")] to: String) -> String {
    to
}

fn main() {}
