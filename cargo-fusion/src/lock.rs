//! `cargo fusion lock`: the server's lockfile written from its binary, or, with `--check`,
//! compared with the committed one and each change rated from the caller's side.

use std::path::{Path, PathBuf};

use fusion_runtime::contract::{Change, Contract, Severity, diff};

use crate::contract_source::read_contract;
use crate::error::{CliError, CliResult, Verdict};
use crate::server::ServerSelection;
use crate::table::{Align, Table};

/// The lockfile's name in the server's package directory.
const LOCKFILE_NAME: &str = "fusion.lock";

/// `cargo fusion lock`: builds the server and writes its lockfile (`explicit`, else
/// `fusion.lock` in its package), or with `check` compares the binary with it.
///
/// # Errors
/// When the server cannot be built or read, or the lockfile written or read.
pub(crate) fn run(
    server: &ServerSelection,
    check: bool,
    strict: bool,
    explicit: Option<&Path>,
) -> CliResult<Verdict> {
    let server = server.build()?;
    let built = read_contract(&server)?;
    let path = lockfile_path(explicit, &server.package_dir);
    if check {
        return check_against(&built, &path, strict);
    }
    match write(&built, &path)? {
        Written::Unchanged => println!("{} is up to date", path.display()),
        Written::Written => println!(
            "wrote {} ({} tools{})",
            path.display(),
            built.tools.len(),
            built.cost.map_or_else(String::new, |cost| format!(
                ", {} tokens in tools/list",
                cost.tokens
            ))
        ),
    }
    Ok(Verdict::Passed)
}

/// `lock --check`: the changes from the lockfile at `path` to the `built` surface, and
/// whether one fails the check.
fn check_against(built: &Contract, path: &Path, strict: bool) -> CliResult<Verdict> {
    let locked = read(path)?;
    let verdict = check(&locked, built, strict);
    if verdict.changes.is_empty() {
        println!("the surface is the locked one ({})", path.display());
        return Ok(Verdict::Passed);
    }
    print!("{}", render_changes(&verdict.changes));
    if verdict.failed {
        println!(
            "the surface differs from {} in a way callers notice: if that is meant, accept it with `cargo fusion lock` and commit the lockfile",
            path.display()
        );
        Ok(Verdict::Failed)
    } else {
        println!(
            "no change fails the check; `cargo fusion lock` records them in {}",
            path.display()
        );
        Ok(Verdict::Passed)
    }
}

/// Where the lockfile is: `explicit` (`--lockfile`), else `fusion.lock` in the package.
fn lockfile_path(explicit: Option<&Path>, package_dir: &Path) -> PathBuf {
    explicit.map_or_else(|| package_dir.join(LOCKFILE_NAME), Path::to_path_buf)
}

/// What writing the lockfile did.
enum Written {
    /// The file held this contract already, byte for byte.
    Unchanged,
    /// The file was written (created, or replaced).
    Written,
}

/// Writes `contract` to `path` as a lockfile, unless it is there already.
///
/// # Errors
/// When the file cannot be written.
fn write(contract: &Contract, path: &Path) -> CliResult<Written> {
    let text = contract.to_lockfile();
    if std::fs::read_to_string(path).is_ok_and(|existing| existing == text) {
        return Ok(Written::Unchanged);
    }
    std::fs::write(path, text)
        .map_err(|error| CliError::new(format!("cannot write {}: {error}", path.display())))?;
    Ok(Written::Written)
}

/// The contract committed at `path`.
///
/// # Errors
/// When there is no file there, or it is not a lockfile.
fn read(path: &Path) -> CliResult<Contract> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            CliError::new(format!(
                "there is no lockfile at {}: write it with `cargo fusion lock` and commit it",
                path.display()
            ))
        } else {
            CliError::new(format!("cannot read {}: {error}", path.display()))
        }
    })?;
    Contract::from_lockfile(&text)
        .map_err(|error| CliError::new(format!("{}: {error}", path.display())))
}

/// The verdict of `lock --check`.
struct Check {
    /// Every change from the locked surface to the built one, worst first.
    changes: Vec<Change>,
    /// Whether a change fails the check.
    failed: bool,
}

/// Compares the `built` surface with the `locked` one: any `Breaking` change fails the
/// check, and with `strict` any `Risky` one too.
fn check(locked: &Contract, built: &Contract, strict: bool) -> Check {
    let changes = diff(locked, built);
    let threshold = if strict {
        Severity::Risky
    } else {
        Severity::Breaking
    };
    let failed = changes.iter().any(|change| change.severity >= threshold);
    Check { changes, failed }
}

/// The changes as a table (severity, tool, what changed), then a count per severity.
fn render_changes(changes: &[Change]) -> String {
    let mut table = Table::new(vec![
        ("SEVERITY", Align::Left),
        ("TOOL", Align::Left),
        ("CHANGE", Align::Left),
    ]);
    for change in changes {
        table.row(vec![
            change.severity.to_string(),
            change.tool.clone(),
            change.message.clone(),
        ]);
    }
    let mut text = table.render();
    let counts: Vec<String> = [
        Severity::Breaking,
        Severity::Risky,
        Severity::Safe,
        Severity::Cosmetic,
    ]
    .into_iter()
    .filter_map(|severity| {
        let count = changes
            .iter()
            .filter(|change| change.severity == severity)
            .count();
        (count > 0).then(|| format!("{count} {}", severity.to_string().to_lowercase()))
    })
    .collect();
    let noun = if changes.len() == 1 {
        "change"
    } else {
        "changes"
    };
    text.push_str(&format!(
        "{} {noun}: {}\n",
        changes.len(),
        counts.join(", ")
    ));
    text
}
