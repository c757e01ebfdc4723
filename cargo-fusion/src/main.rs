//! `cargo fusion`: a fusion MCP server's tools, lockfile, calls and client configs, read
//! from the server binary itself (run with `FUSION_CONTRACT=print`, it prints its
//! contract), never parsed from source.

mod call;
mod cli;
mod contract_source;
mod error;
mod install;
mod lock;
mod process;
mod server;
mod stdio_client;
mod table;
mod tools;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::{CliError, CliResult};

/// The check or the call failed: a BREAKING change, a tool error.
const EXIT_FAILED: u8 = 1;
/// `cargo fusion` could not do what was asked (clap exits with 2 on a bad argument too).
const EXIT_ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse_from(cli::arguments_from(std::env::args_os().collect()));
    match run(cli.command) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Runs one subcommand; its verdict is the exit code.
fn run(command: Command) -> CliResult<ExitCode> {
    match command {
        Command::Tools { server, json } => {
            let contract = contract_source::read_contract(&server.build()?)?;
            if json {
                print_json(&tools::to_json(&contract))?;
            } else {
                print!("{}", tools::render_table(&contract));
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Lock {
            server,
            check,
            strict,
            lockfile,
        } => {
            let server = server.build()?;
            let built = contract_source::read_contract(&server)?;
            let path = lock::lockfile_path(lockfile.as_deref(), &server.package_dir);
            if check {
                return check_lockfile(&built, &path, strict);
            }
            match lock::write(&built, &path)? {
                lock::Written::Unchanged => println!("{} is up to date", path.display()),
                lock::Written::Written => println!(
                    "wrote {} ({} tools{})",
                    path.display(),
                    built.tools.len(),
                    built.cost.map_or_else(String::new, |cost| format!(
                        ", {} tokens in tools/list",
                        cost.tokens
                    ))
                ),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Call {
            server,
            tool,
            arguments,
            json_arguments,
            timeout_secs,
            raw,
        } => {
            let arguments = call::arguments(json_arguments.as_deref(), &arguments)?;
            let server = server.build()?;
            let called = call::call(
                &server,
                &tool,
                arguments,
                Duration::from_secs(timeout_secs),
                raw,
            )?;
            print!("{}", called.text);
            Ok(if called.failed {
                ExitCode::from(EXIT_FAILED)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Install {
            server,
            client,
            name,
            dry_run,
        } => {
            let home = std::env::var_os("HOME")
                .ok_or_else(|| CliError::new("HOME is not set: cannot find the client's config"))?;
            let project = std::env::current_dir().map_err(|error| {
                CliError::new(format!("cannot read the current directory: {error}"))
            })?;
            let server = server.build()?;
            let path = client.config_path(std::path::Path::new(&home), &project);
            let name = name.unwrap_or_else(|| server.name.clone());
            let installation = install::plan(client, path, &name, &server.executable)?;
            print!("{}", installation.describe(dry_run));
            if !dry_run && let Some(backup) = installation.apply()? {
                println!("the file as it was is in {}", backup.display());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `lock --check`: the changes from the lockfile at `path` to the `built` surface.
fn check_lockfile(
    built: &fusion_runtime::contract::Contract,
    path: &std::path::Path,
    strict: bool,
) -> CliResult<ExitCode> {
    let locked = lock::read(path)?;
    let verdict = lock::check(&locked, built, strict);
    if verdict.changes.is_empty() {
        println!("the surface is the locked one ({})", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", lock::render_changes(&verdict.changes));
    if verdict.failed {
        println!(
            "the surface differs from {} in a way callers notice: if that is meant, accept it with `cargo fusion lock` and commit the lockfile",
            path.display()
        );
        Ok(ExitCode::from(EXIT_FAILED))
    } else {
        println!(
            "no change breaks a caller; `cargo fusion lock` records them in {}",
            path.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}

/// Prints `value` as indented JSON.
fn print_json(value: &serde_json::Value) -> CliResult<()> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|error| CliError::new(format!("cannot write JSON: {error}")))?;
    println!("{text}");
    Ok(())
}
