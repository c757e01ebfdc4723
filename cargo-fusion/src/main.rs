//! `cargo fusion`: a fusion MCP server's tools, lockfile, calls and client configs, read
//! from the server binary itself (run with `FUSION_CONTRACT=print`, it prints its
//! contract), never parsed from source.
//! `cargo fusion new` creates a server crate to start from; `cargo fusion dev` serves it,
//! rebuilt and restarted on each change.

mod call;
mod cli;
mod contract_source;
mod dev;
mod error;
mod http_transport;
mod install;
mod lock;
mod new;
mod package_name;
mod process;
mod server;
mod session;
mod stdio_transport;
mod table;
mod template;
mod tools;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{CliResult, Verdict};
use crate::new::NewCrate;

/// The check or the call failed: a BREAKING change, a tool error.
const EXIT_FAILED: u8 = 1;
/// `cargo fusion` could not do what was asked (clap exits with 2 on a bad argument too).
const EXIT_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse_from(cli::arguments_from(std::env::args_os().collect()));
    match run(cli.command) {
        Ok(Verdict::Passed) => ExitCode::SUCCESS,
        Ok(Verdict::Failed) => ExitCode::from(EXIT_FAILED),
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Runs one subcommand.
fn run(command: Command) -> CliResult<Verdict> {
    match command {
        Command::Tools { server, json } => tools::run(&server, json),
        Command::Lock {
            server,
            check,
            strict,
            lockfile,
        } => lock::run(&server, check, strict, lockfile.as_deref()),
        Command::Call {
            server,
            tool,
            arguments,
            json_arguments,
            url,
            timeout_secs,
            raw,
        } => {
            let arguments = call::arguments(json_arguments.as_deref(), &arguments)?;
            call::run(
                &server,
                url.as_deref(),
                &tool,
                arguments,
                Duration::from_secs(timeout_secs),
                raw,
            )
        }
        Command::Dev {
            server,
            server_args,
        } => dev::run(&server, &server_args),
        Command::Install {
            server,
            client,
            name,
            dry_run,
            env,
            server_args,
        } => install::run(
            &server,
            client,
            name,
            &install::InstallOptions {
                dry_run,
                env,
                server_args,
            },
        ),
        Command::New {
            name,
            http,
            redis,
            fusion_path,
        } => new::run(&NewCrate {
            name,
            http,
            redis,
            fusion_path,
        }),
    }
}
