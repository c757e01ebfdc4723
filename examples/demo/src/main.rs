//! The demo server over stdio. The caller's role comes from `DEMO_ROLE` (`ADMIN`, the
//! default, or `GUEST`); `--flat` lists one tool per action instead of one per group.

use std::process::ExitCode;

use fusion_demo::Role;
use fusion_runtime::Exposure;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    fusion_runtime::log::init();
    let role = match std::env::var("DEMO_ROLE") {
        Ok(text) => match Role::parse(&text) {
            Some(role) => role,
            None => {
                eprintln!("fusion-demo: DEMO_ROLE must be ADMIN or GUEST, not {text:?}");
                return ExitCode::from(fusion_runtime::EXIT_CONFIG);
            }
        },
        Err(_) => Role::Admin,
    };
    let exposure = if std::env::args().any(|arg| arg == "--flat") {
        Exposure::Flat
    } else {
        Exposure::Grouped
    };
    fusion_demo::builder(role, exposure).serve_stdio().await
}
