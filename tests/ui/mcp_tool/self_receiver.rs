use fusion_runtime::prelude::*;

struct Calculator;

impl Calculator {
    /// Add two integers.
    #[mcp_tool]
    async fn add(&self, a: i64, b: i64) -> i64 {
        a + b
    }
}

fn main() {}
