use fusion_runtime::prelude::*;

// `#[mcp_type]` below the derive it should adjust.
#[derive(Deserialize, JsonSchema)]
#[mcp_type]
struct Point {
    x: i64,
}

/// Take a point.
#[mcp_tool]
async fn take_point(point: Point) -> i64 {
    point.x
}

fn main() {
    let _ = Server::builder("bare", "0").tool(take_point).build();
}
