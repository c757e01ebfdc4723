use fusion_runtime::prelude::*;

// The prelude's derives without `#[mcp_type]`: one error, naming it; the type used as a
// parameter and the tool registered raise nothing more.
#[derive(Deserialize, JsonSchema)]
struct Point {
    x: i64,
    #[serde(default)]
    y: i64,
}

/// Take a point.
#[mcp_tool]
async fn take_point(point: Point) -> i64 {
    point.x + point.y
}

fn main() {
    let _ = Server::builder("bare", "0").tool(take_point).build();
}
