//! A server's contract, read from the binary itself: run with `FUSION_CONTRACT=print`, a
//! fusion server writes its lockfile to standard output and exits. Nothing is parsed from
//! source, so what is read is what the binary serves.

use std::process::Command;
use std::time::Duration;

use fusion_runtime::contract::{CONTRACT_ENV, Contract, REQUIREMENTS};

use crate::error::{CliError, CliResult};
use crate::process;
use crate::server::BuiltServer;

/// Building the server and measuring its tokens takes well under a second; a server that
/// takes a minute is waiting on something it should not.
const PRINT_TIMEOUT: Duration = Duration::from_secs(60);

/// The contract `server` prints.
///
/// # Errors
/// When it does not exit 0 within [`PRINT_TIMEOUT`], or prints something that is not a
/// lockfile (a server not built with fusion, or with a fusion too old to print one).
pub(crate) fn read_contract(server: &BuiltServer) -> CliResult<Contract> {
    let mut command = Command::new(&server.executable);
    command.env(CONTRACT_ENV, "print");
    let what = format!("the server `{}`", server.name);
    let finished = process::run_to_end(command, PRINT_TIMEOUT, &what)?;
    if !finished.status.success() {
        return Err(CliError::new(format!(
            "{what} exited with {} instead of printing its contract:\n{}",
            finished.status,
            process::tail(&finished.stderr)
        )));
    }
    let text = String::from_utf8_lossy(&finished.stdout);
    Contract::from_lockfile(&text).map_err(|error| {
        CliError::new(format!(
            "{what} did not print a contract with {CONTRACT_ENV}=print ({error}); is it a fusion server?"
        ))
    })
}

/// The environment variables `server`'s start requires (its `require_env` checks), as it
/// prints them with `FUSION_CONTRACT=requirements`.
///
/// # Errors
/// When it does not exit 0 within [`PRINT_TIMEOUT`], or prints something else than the
/// requirements (a server built with a fusion too old to print them).
pub(crate) fn read_requirements(server: &BuiltServer) -> CliResult<Vec<String>> {
    let mut command = Command::new(&server.executable);
    command.env(CONTRACT_ENV, REQUIREMENTS);
    let what = format!("the server `{}`", server.name);
    let finished = process::run_to_end(command, PRINT_TIMEOUT, &what)?;
    let text = String::from_utf8_lossy(&finished.stdout);
    let requirements = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .filter(|_| finished.status.success());
    let Some(serde_json::Value::Array(names)) = requirements
        .and_then(|mut value| value.get_mut("required_env").map(serde_json::Value::take))
    else {
        return Err(CliError::new(format!(
            "{what} did not print its requirements with {CONTRACT_ENV}={REQUIREMENTS} (exit {}); is it a fusion server of this version?\n{}",
            finished.status,
            process::tail(&finished.stderr)
        )));
    };
    Ok(names
        .into_iter()
        .filter_map(|name| name.as_str().map(str::to_owned))
        .collect())
}
