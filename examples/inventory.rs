//! The inventory server: tools whose arguments carry declared constraints. Send it bad
//! arguments and read what comes back.
//!
//! `cargo run --example inventory`

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "inventory",
    about: "tools whose arguments carry declared constraints, over stdio",
    flags: &[],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    fusion_tests::inventory::server().serve_stdio().await
}
