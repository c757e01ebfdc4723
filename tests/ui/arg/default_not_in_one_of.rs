use fusion_runtime::prelude::*;

/// Pick a currency.
#[mcp_tool]
async fn currency(#[arg(one_of = ["EUR", "USD"], default = "JPY")] code: String) -> String {
    code
}

fn main() {}
