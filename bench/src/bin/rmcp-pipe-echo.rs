//! `rmcp-pipe-echo`: `rmcp-echo`'s server (the same `#[tool_router]` `echo`) on a
//! current-thread runtime, with stdin and stdout as non-blocking pipes handed to rmcp's
//! own line transport (`AsyncRwTransport`) instead of `rmcp::transport::stdio()` (which
//! reads stdin through tokio's blocking pool). What serving through rmcp's service costs
//! when the transport is out of the way: run it with
//! `compare --rmcp target/release/rmcp-pipe-echo`. Needs pipes on fd 0 and 1 (as `loadgen`
//! and `compare` give it).

use std::os::fd::AsFd as _;

use fusion_bench::rmcp_echo::Echo;
use rmcp::ServiceExt;
use tokio::net::unix::pipe;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let stdout = std::fs::File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let input = pipe::Receiver::from_file(stdin)?;
    let output = pipe::Sender::from_file(stdout)?;
    let service = Echo.serve((input, output)).await?;
    service.waiting().await?;
    Ok(())
}
