//! The rated difference between two contracts: each change, from the caller's side, as
//! [`Severity::Breaking`], [`Severity::Risky`], [`Severity::Safe`] or
//! [`Severity::Cosmetic`].

use crate::contract::model::Contract;

/// How a change looks to a caller who learned the old surface, from worst to least:
/// `Breaking > Risky > Safe > Cosmetic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A title changed: nothing a caller does changes.
    Cosmetic,
    /// Something added or loosened: every call that worked still works.
    Safe,
    /// What the model reads, or how failures are recovered, changed: calls still validate,
    /// but may be chosen or behave differently.
    Risky,
    /// A call that worked may now fail, or do harm it did not do.
    Breaking,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Breaking => "BREAKING",
            Self::Risky => "RISKY",
            Self::Safe => "SAFE",
            Self::Cosmetic => "COSMETIC",
        })
    }
}

/// One difference between two contracts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The tool (or the resource's URI, the template, the prompt's name) it is about.
    pub tool: String,
    /// How it looks to a caller.
    pub severity: Severity,
    /// A sentence saying what changed.
    pub message: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.severity, self.tool, self.message)
    }
}

/// Every change from `old` to `new`, worst first (then by tool, then by message).
pub fn diff(old: &Contract, new: &Contract) -> Vec<Change> {
    let mut changes = Vec::new();
    for name in old.tools.keys() {
        if !new.tools.contains_key(name) {
            changes.push(Change {
                tool: name.clone(),
                severity: Severity::Breaking,
                message: "the tool was removed".to_owned(),
            });
        }
    }
    for name in new.tools.keys() {
        if !old.tools.contains_key(name) {
            changes.push(Change {
                tool: name.clone(),
                severity: Severity::Safe,
                message: "the tool was added".to_owned(),
            });
        }
    }
    changes.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| a.tool.cmp(&b.tool))
            .then_with(|| a.message.cmp(&b.message))
    });
    changes
}
