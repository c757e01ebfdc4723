//! The command line: `cargo fusion <command>`, as clap reads it.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::install::Client;
use crate::server::ServerSelection;

/// The name cargo gives a subcommand's binary as its first argument.
const SUBCOMMAND_NAME: &str = "fusion";

/// `cargo fusion`: a fusion MCP server's tools, lockfile, calls and client configs, read
/// from the server binary itself; and a new server crate to start from.
#[derive(Debug, Parser)]
#[command(
    name = "cargo fusion",
    bin_name = "cargo fusion",
    version,
    after_help = "Exit codes: 0 done; 1 the check or the call failed (a BREAKING change, a tool error); 2 cargo fusion could not do it (a build failure, a bad argument, a server that crashed)."
)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the server's tools: hints, recovery policy, and what each costs the model.
    #[command(
        after_help = "Examples:\n  cargo fusion tools -p fusion-demo\n  cargo fusion tools --json | jq '.tools[].name'"
    )]
    Tools {
        #[command(flatten)]
        server: ServerSelection,
        /// Print the data as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write the server's fusion.lock from its binary, or check the binary against it.
    #[command(
        after_help = "Examples:\n  cargo fusion lock -p fusion-demo\n  cargo fusion lock --check          # exit 1 on a BREAKING change\n  cargo fusion lock --check --strict # exit 1 on a RISKY one too"
    )]
    Lock {
        #[command(flatten)]
        server: ServerSelection,
        /// Compare with the committed lockfile instead of writing it.
        #[arg(long)]
        check: bool,
        /// With --check: fail on RISKY changes too, not only on BREAKING ones.
        #[arg(long, requires = "check")]
        strict: bool,
        /// The lockfile (default: fusion.lock in the server's package directory).
        #[arg(long, value_name = "PATH")]
        lockfile: Option<PathBuf>,
    },
    /// Call one tool on the server (over stdio, or at --url) and print the result.
    #[command(
        after_help = "Examples:\n  cargo fusion call -p fusion-demo db_user action=find_many take=2\n  cargo fusion call -p fusion-demo db_user --json '{\"action\": \"find_by_id\", \"id\": 1}'\n  cargo fusion call --url http://127.0.0.1:8931/mcp db_user action=find_many\n\nA value that parses as JSON is that JSON (take=2, active=true); any other is a string (name=Ada)."
    )]
    Call {
        #[command(flatten)]
        server: ServerSelection,
        /// The tool to call.
        tool: String,
        /// Its arguments, as key=value.
        #[arg(value_name = "KEY=VALUE")]
        arguments: Vec<String>,
        /// Its arguments as a JSON object (key=value pairs override its keys).
        #[arg(long = "json", value_name = "OBJECT")]
        json_arguments: Option<String>,
        /// Call the server at this Streamable HTTP endpoint instead of building one and
        /// starting it over stdio.
        #[arg(long, value_name = "URL", conflicts_with_all = ["package", "bin", "example", "release"])]
        url: Option<String>,
        /// Give up (and kill the server) after this many seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 30)]
        timeout_secs: u64,
        /// Print the whole result as JSON instead of its text.
        #[arg(long)]
        raw: bool,
    },
    /// Serve the server with its human-readable log; rebuild and restart it on each change
    /// to its package's sources.
    #[command(
        after_help = "Examples:\n  cargo fusion dev -- --http 8931               # an HTTP server, restarted on each change\n  cargo fusion dev -p fusion-demo -- --http 8931\n  cargo fusion dev --example quickstart -- --http 0\n\nWatched: the package's src/, examples/, Cargo.toml and build.rs (never target/). A build that fails is shown and the previous server keeps serving; a server that exits by itself is restarted after the next change. The server's log is text for a person (FUSION_LOG_FORMAT=text, unless it is set). The server gets this terminal's stdin, stdout and stderr: a stdio server started without SERVER_ARGS reads what you type, and no MCP client can reach it, so pass the server its HTTP flag. Ctrl-C (or SIGTERM) stops the server and exits 0."
    )]
    Dev {
        #[command(flatten)]
        server: ServerSelection,
        /// The server's own arguments, after `--` (default: none).
        #[arg(last = true, value_name = "SERVER_ARGS")]
        server_args: Vec<OsString>,
    },
    /// Add the built server to an MCP client's config file (a backup is kept).
    #[command(
        after_help = "Examples:\n  cargo fusion install cursor --dry-run -p fusion-demo\n  cargo fusion install claude-desktop --release --name calc\n  cargo fusion install claude-code --release -- --stdio       # a server that serves HTTP unless told --stdio\n  cargo fusion install vscode --env REDIS_URL=redis://127.0.0.1:6379\n\nThe variables the server's start requires (`require_env`) are written into the entry, with the --env value or a placeholder to fill in."
    )]
    Install {
        #[command(flatten)]
        server: ServerSelection,
        /// The client.
        #[arg(value_enum)]
        client: Client,
        /// The server's name in the config (default: the binary's name).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// Print the change and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// A variable for the server's environment, as NAME=VALUE (repeatable).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// The arguments the client starts the server with, after `--`.
        #[arg(last = true, value_name = "SERVER_ARGS")]
        server_args: Vec<String>,
    },
    /// Create a new server crate NAME: one tool, a test that calls it, its fusion.lock.
    #[command(
        after_help = "Examples:\n  cargo fusion new calc                   # stdio; `calc --http PORT` for Streamable HTTP\n  cargo fusion new calc --http            # Streamable HTTP on 127.0.0.1:8931; `calc --stdio` for stdio\n  cargo fusion new orders --http --redis  # idempotency keys in the Redis at REDIS_URL\n  cargo fusion new calc --fusion-path ../fusion/fusion-runtime\n\nThe crate is created in the directory NAME, which must not exist; then `cd NAME && cargo test`."
    )]
    New {
        /// The package's name, and its directory's (in the current directory).
        name: String,
        /// Serve Streamable HTTP on 127.0.0.1:8931 unless the server is given `--stdio`.
        #[arg(long)]
        http: bool,
        /// Keep idempotency keys in the Redis at REDIS_URL, shared by replicas.
        #[arg(long)]
        redis: bool,
        /// Depend on the fusion-runtime package in this directory instead of its release.
        #[arg(long, value_name = "PATH")]
        fusion_path: Option<PathBuf>,
    },
}

/// The arguments without the `fusion` that cargo passes first when it runs
/// `cargo-fusion` as `cargo fusion`, so both ways of running it read the same.
pub(crate) fn arguments_from(mut args: Vec<OsString>) -> Vec<OsString> {
    if args.get(1).is_some_and(|arg| arg == SUBCOMMAND_NAME) {
        args.remove(1);
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_cargo_passes_is_dropped() {
        let from_cargo = arguments_from(
            ["cargo-fusion", "fusion", "tools"]
                .map(OsString::from)
                .to_vec(),
        );
        let direct = arguments_from(["cargo-fusion", "tools"].map(OsString::from).to_vec());
        assert_eq!(from_cargo, direct);
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
