//! The inventory server: tools whose arguments carry declared constraints. Send it bad
//! arguments and read what comes back.
//!
//! `cargo run --example inventory`

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    fusion_runtime::log::init();
    fusion_tests::inventory::server().serve_stdio().await
}
