//! `rmcp-echo`: the `echo` tool written as rmcp 3.11's documentation shows it
//! ([`fusion_bench::rmcp_echo`]), served with `rmcp::transport::stdio()` on
//! `#[tokio::main]`, which is how users ship it. The baseline for "rmcp as shipped" in
//! `compare`.

use fusion_bench::rmcp_echo::Echo;
use rmcp::{ServiceExt, transport::stdio};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Echo.serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
