use fusion_runtime::{Call, prelude::*};

/// Greet.
#[mcp_tool]
async fn greet(#[call] call: Call) -> String {
    let _ = call;
    String::new()
}

fn main() {}
