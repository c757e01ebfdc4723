use fusion_runtime::prelude::*;

/// Look a city up.
#[mcp_tool]
async fn lookup(#[arg(length(min = 5, max = 2))] city: String) -> String {
    city
}

fn main() {
    let _ = Server::builder("registered", "0").tool(lookup).build();
}
