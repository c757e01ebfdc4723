use fusion_runtime::prelude::*;

// A balance cannot hold a mask: one error, on that field's type, saying what can. The
// redacted text and the redacted option beside it are fine, and the tool that returns the
// type raises nothing more.
#[mcp_type]
#[derive(Serialize, JsonSchema)]
struct Account {
    #[redact]
    owner: String,
    #[redact]
    balance: u64,
    #[redact]
    note: Option<u64>,
}

/// Look an account up.
#[mcp_tool(read_only)]
async fn account() -> Account {
    Account { owner: "ada".into(), balance: 1, note: None }
}

fn main() {
    let _ = Server::builder("bank", "0").tool(account).build();
}
