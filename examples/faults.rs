//! The fault server: tools that hang, sleep, panic, print to stdout and fail in every
//! class, served over stdio (`src/faults.rs` defines them). Not a demo: the robustness,
//! recovery, lifecycle and soak tests drive it, and the stdio throughput check measures it.
//!
//! `cargo run --example faults [-- --require-env NAME] [-- --fail-setup]`: the flags add a
//! start-up check that fails (exit code 78), for the tests of the start-up path.

use fusion_tests::faults::{self, FaultCtx};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    fusion_runtime::log::init();
    let mut builder = faults::builder(FaultCtx::default());
    let args: Vec<String> = std::env::args().collect();
    if let Some(name) = args
        .iter()
        .position(|arg| arg == "--require-env")
        .and_then(|at| args.get(at + 1))
    {
        builder = builder.require_env(name.clone());
    }
    if args.iter().any(|arg| arg == "--fail-setup") {
        builder =
            builder.setup(|| async { Err::<(), _>("the upstream credentials file is unreadable") });
    }
    builder.serve_stdio().await
}
