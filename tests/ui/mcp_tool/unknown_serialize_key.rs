use fusion_runtime::prelude::*;

/// Deposit into an account, one deposit at a time per account.
#[mcp_tool(serialize = "account_id")]
async fn deposit(account: String, cents: u64) -> String {
    format!("{cents} to {account}")
}

fn main() {}
