//! A contract against the one committed or pinned: the lockfile check of the user's tests
//! (`Tester::assert_contract`) and the start-up pin of a fleet
//! (`ServerBuilder::require_surface`).

use std::path::Path;

use crate::contract::diff::{Change, diff};
use crate::contract::model::Contract;

/// The environment variable that makes
/// [`Tester::assert_contract`](crate::testing::Tester::assert_contract) rewrite the lockfile
/// instead of comparing with it: `FUSION_LOCK=update cargo test`.
pub const LOCK_ENV: &str = "FUSION_LOCK";

/// The environment variable that makes a server binary print its contract instead of
/// serving: `FUSION_CONTRACT=print ./my-server > fusion.lock` writes the lockfile of the
/// binary itself (what `cargo fusion` reads), then exits 0. Nothing is served, and the
/// `require_env` checks and `setup` steps do not run (a context made by a step is never
/// asked for); only mounted upstreams are connected to, to list their tools.
pub const CONTRACT_ENV: &str = "FUSION_CONTRACT";

/// The value of [`CONTRACT_ENV`] that makes a server binary print what its start needs
/// instead of serving: `FUSION_CONTRACT=requirements ./my-server` writes
/// `{"required_env": ["REDIS_URL"]}` (the [`require_env`](crate::ServerBuilder::require_env)
/// variables, in the order declared) and exits 0, without building the server or running
/// a check. `cargo fusion install` reads it to write a client's config that starts the
/// server.
pub const REQUIREMENTS: &str = "requirements";

/// Whether [`CONTRACT_ENV`] asks this process to print (its contract, or its
/// [`REQUIREMENTS`]) instead of serving: what a `main` checks before work that only serving
/// needs, such as connecting to a store that may be unreachable where `cargo fusion` runs.
///
/// ```
/// // Run as `cargo fusion tools` runs a server, it prints and exits: no store is needed.
/// let printing = fusion_runtime::contract::prints_instead_of_serving();
/// assert_eq!(printing, std::env::var("FUSION_CONTRACT").is_ok_and(|v| v == "print" || v == "requirements"));
/// ```
pub fn prints_instead_of_serving() -> bool {
    std::env::var(CONTRACT_ENV).is_ok_and(|value| value == "print" || value == REQUIREMENTS)
}

/// What a server is pinned to: a digest, and the whole contract when a lockfile was given.
#[derive(Clone, Debug)]
pub(crate) struct Pin {
    digest: String,
    contract: Option<Contract>,
}

impl Pin {
    /// A pin from `text`: a SHA-256 digest in hex (64 characters), or a lockfile's text
    /// (`include_str!("../fusion.lock")`), whose digest is the pin and whose contract names
    /// what differs.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.len() == 64 && trimmed.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Ok(Self {
                digest: trimmed.to_ascii_lowercase(),
                contract: None,
            });
        }
        if trimmed.starts_with('{') {
            let contract = Contract::from_lockfile(trimmed)?;
            return Ok(Self {
                digest: contract.digest(),
                contract: Some(contract),
            });
        }
        Err(format!(
            "`{}` is neither a SHA-256 digest (64 hex digits) nor a fusion lockfile",
            crate::limits::preview(&serde_json::Value::String(trimmed.to_owned()))
        ))
    }

    /// `Ok` when `built` is the pinned surface.
    pub(crate) fn check(&self, built: &Contract) -> Result<(), SurfaceMismatch> {
        let digest = built.digest();
        if digest == self.digest {
            return Ok(());
        }
        Err(SurfaceMismatch {
            built: digest,
            pinned: self.digest.clone(),
            changes: self
                .contract
                .as_ref()
                .map(|pinned| diff(pinned, built))
                .unwrap_or_default(),
        })
    }
}

/// A built surface that is not the pinned one.
#[derive(Clone, Debug)]
pub(crate) struct SurfaceMismatch {
    pub(crate) built: String,
    pub(crate) pinned: String,
    /// From the pinned contract to the built one, worst first; empty when only a digest
    /// was pinned.
    pub(crate) changes: Vec<Change>,
}

impl std::fmt::Display for SurfaceMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the tool surface is not the pinned one: this build is {}, the pin is {}",
            self.built, self.pinned
        )?;
        if self.changes.is_empty() {
            return f.write_str(
                "; pin the lockfile itself (`require_surface(include_str!(\"../fusion.lock\"))`) to see which tools differ",
            );
        }
        f.write_str("; what differs from the pinned lockfile:")?;
        for change in &self.changes {
            write!(f, "\n  - {change}")?;
        }
        Ok(())
    }
}

/// Compares `built` with the lockfile at `path`, or rewrites it when `FUSION_LOCK=update`.
/// Returns what a failed assertion says: the rated changes, worst first, and how to accept
/// them.
pub(crate) fn compare_with_file(built: &Contract, path: &Path) -> Result<(), String> {
    let update = std::env::var(LOCK_ENV).is_ok_and(|value| value == "update");
    let written = std::fs::read_to_string(path);
    if update {
        let text = built.to_lockfile();
        if written.as_deref().ok() != Some(text.as_str()) {
            std::fs::write(path, text).map_err(|error| {
                format!("cannot write the lockfile {}: {error}", path.display())
            })?;
        }
        return Ok(());
    }
    let written = written.map_err(|error| {
        format!(
            "cannot read the lockfile {}: {error}\nwrite it with `{LOCK_ENV}=update cargo test` and commit it",
            path.display()
        )
    })?;
    let locked = Contract::from_lockfile(&written)
        .map_err(|error| format!("the lockfile {} is unreadable: {error}", path.display()))?;
    if locked == *built {
        return Ok(());
    }
    let changes = diff(&locked, built);
    let mut message = format!(
        "the tool surface differs from {} ({} change{}):",
        path.display(),
        changes.len(),
        if changes.len() == 1 { "" } else { "s" }
    );
    for change in &changes {
        message.push_str(&format!("\n  - {change}"));
    }
    message.push_str(&format!(
        "\nif every change is meant, accept them with `{LOCK_ENV}=update cargo test` and commit the lockfile"
    ));
    Err(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_is_a_digest_or_a_lockfile_and_nothing_else() {
        let contract = Contract {
            format: crate::contract::FORMAT,
            tools: Default::default(),
            resources: Default::default(),
            resource_templates: Default::default(),
            prompts: Default::default(),
            tool_search: None,
            cost: None,
        };
        let digest = contract.digest();
        assert!(Pin::parse(&digest).is_ok_and(|pin| pin.check(&contract).is_ok()));
        assert!(
            Pin::parse(&digest.to_ascii_uppercase()).is_ok_and(|pin| pin.check(&contract).is_ok())
        );
        assert!(Pin::parse(&contract.to_lockfile()).is_ok_and(|pin| pin.check(&contract).is_ok()));
        let error = Pin::parse("sha256:abc").err().unwrap_or_default();
        assert!(error.contains("neither a SHA-256 digest"), "{error}");
        let other = Pin::parse(&"0".repeat(64)).expect("a digest");
        let mismatch = other.check(&contract).err().map(|error| error.to_string());
        assert!(
            mismatch
                .as_deref()
                .is_some_and(|text| text.contains(&digest)),
            "{mismatch:?}"
        );
    }
}
