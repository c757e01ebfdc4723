use fusion_runtime::prelude::*;

// A result type with the prelude's derives but no `#[mcp_type]`: one error.
#[derive(Serialize, JsonSchema)]
struct Summary {
    total: i64,
}

/// Sum the numbers.
#[mcp_tool]
async fn sum(numbers: Vec<i64>) -> Summary {
    Summary {
        total: numbers.iter().sum(),
    }
}

fn main() {
    let _ = Server::builder("bare", "0").tool(sum).build();
}
