// A crate that depends on serde and schemars itself imports their derives by name, and
// needs no `#[mcp_type]`: the names shadow the prelude's.
use fusion_runtime::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct Point {
    x: i64,
    y: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    total: i64,
}

/// Add a point's coordinates.
#[mcp_tool]
async fn add_point(point: Point) -> Sum {
    Sum {
        total: point.x + point.y,
    }
}

fn main() {
    let _ = Server::builder("own-serde", "0").tool(add_point).build();
}
