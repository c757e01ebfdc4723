use fusion_runtime::prelude::*;

struct Point {
    x: i64,
}

/// Take a point.
#[mcp_tool]
async fn take_point(point: Point) -> i64 {
    point.x
}

fn main() {}
