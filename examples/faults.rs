//! The fault server: tools that hang, sleep, panic, print to stdout and fail in every
//! class, served over stdio (`src/faults.rs` defines them). Not a demo: the robustness and
//! recovery tests drive it, and the stdio throughput check measures it.
//!
//! `cargo run --example faults`

use fusion_tests::faults::{self, FaultCtx};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    fusion_runtime::log::init();
    faults::builder(FaultCtx::default()).serve_stdio().await
}
