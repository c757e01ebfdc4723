use fusion_runtime::prelude::*;

/// Decodable, but without a schema: still not a tool parameter.
#[mcp_type]
#[derive(Deserialize)]
struct Point {
    x: i64,
}

/// Take a point.
#[mcp_tool]
async fn take_point(point: Point, scale: i64) -> i64 {
    point.x * scale
}

fn main() {}
