//! What a tool's listing, and the whole list, cost the model, rated: growth past a
//! threshold is Risky (the model reads every listed token before its first call, on every
//! conversation); any other change of the count is Cosmetic.
//!
//! Like `schema_diff.rs`, it adds methods to the parent's `Report`, so `diff.rs` names
//! nothing of it.

use super::{Report, Severity};
use crate::contract::model::TokenCost;

/// A tool's entry is rated Risky when it grows by more than this share of its old size...
const TOOL_GROWTH_PERCENT: u64 = 20;
/// ...and by at least this many tokens (a few words more in a small tool are not a risk).
const TOOL_GROWTH_TOKENS: u64 = 20;
/// The whole list is rated Risky when it grows by more than this share...
const SURFACE_GROWTH_PERCENT: u64 = 10;
/// ...and by at least this many tokens.
const SURFACE_GROWTH_TOKENS: u64 = 50;

impl Report<'_> {
    /// The change of one listed tool's cost.
    pub(super) fn tool_cost(&mut self, old: Option<TokenCost>, new: Option<TokenCost>) {
        self.cost(
            "its tools/list entry",
            old,
            new,
            (TOOL_GROWTH_PERCENT, TOOL_GROWTH_TOKENS),
        );
    }

    /// The change of the whole list's cost.
    pub(super) fn surface_cost(&mut self, old: Option<TokenCost>, new: Option<TokenCost>) {
        self.cost(
            "tools/list",
            old,
            new,
            (SURFACE_GROWTH_PERCENT, SURFACE_GROWTH_TOKENS),
        );
    }

    fn cost(
        &mut self,
        what: &str,
        old: Option<TokenCost>,
        new: Option<TokenCost>,
        (percent, tokens): (u64, u64),
    ) {
        match (old, new) {
            (None, Some(new)) => self.push(
                Severity::Cosmetic,
                format!(
                    "{what} was measured: {} tokens, {} bytes",
                    new.tokens, new.bytes
                ),
            ),
            (Some(old), Some(new)) if old.tokens != new.tokens => {
                let grown = new.tokens.saturating_sub(old.tokens);
                let risky = grown >= tokens
                    && grown.saturating_mul(100) > old.tokens.saturating_mul(percent);
                let change = if new.tokens > old.tokens {
                    "grew"
                } else {
                    "shrank"
                };
                let severity = if risky {
                    Severity::Risky
                } else {
                    Severity::Cosmetic
                };
                self.push(
                    severity,
                    format!(
                        "{what} {change} from {} to {} tokens{}",
                        old.tokens,
                        new.tokens,
                        share(old.tokens, new.tokens)
                    ),
                );
            }
            // Unmeasured on the new side (a surface checked by digest at start-up), or the
            // same count: nothing the model reads differs in size.
            _ => {}
        }
    }
}

/// ` (+25%)`, or nothing when the old count was zero.
fn share(old: u64, new: u64) -> String {
    if old == 0 {
        return String::new();
    }
    let delta = i128::from(new) - i128::from(old);
    format!(" ({delta:+}%)", delta = delta * 100 / i128::from(old))
}

#[cfg(test)]
mod tests {
    use crate::contract::{Contract, FORMAT, Severity, TokenCost, ToolContract, diff};

    fn costing(tool: Option<u64>, total: Option<u64>) -> Contract {
        let cost = |tokens| TokenCost {
            bytes: tokens * 4,
            tokens,
        };
        Contract {
            format: FORMAT,
            tools: [(
                "find".to_owned(),
                ToolContract {
                    description: "Find notes.".to_owned(),
                    cost: tool.map(cost),
                    ..ToolContract::default()
                },
            )]
            .into(),
            resources: Default::default(),
            resource_templates: Default::default(),
            prompts: Default::default(),
            tool_search: None,
            cost: total.map(cost),
        }
    }

    fn rated(old: Contract, new: Contract) -> Vec<(Severity, String, String)> {
        diff(&old, &new)
            .into_iter()
            .map(|change| (change.severity, change.tool, change.message))
            .collect()
    }

    #[test]
    fn growth_past_the_threshold_is_risky_and_the_rest_cosmetic() {
        let grown = rated(
            costing(Some(100), Some(1000)),
            costing(Some(130), Some(1030)),
        );
        assert_eq!(grown.len(), 2, "{grown:?}");
        assert_eq!(grown[0].0, Severity::Risky, "{grown:?}");
        assert_eq!(grown[0].1, "find");
        assert_eq!(
            grown[0].2,
            "its tools/list entry grew from 100 to 130 tokens (+30%)"
        );
        // The list grew 3%: under its threshold.
        assert_eq!(grown[1].0, Severity::Cosmetic, "{grown:?}");
        assert_eq!(grown[1].1, "(surface)");

        // 20% of a small tool is under the floor of 20 tokens.
        let small = rated(costing(Some(40), None), costing(Some(55), None));
        assert_eq!(small[0].0, Severity::Cosmetic, "{small:?}");
        let shrunk = rated(
            costing(Some(400), Some(4000)),
            costing(Some(100), Some(1000)),
        );
        assert!(
            shrunk.iter().all(|change| change.0 == Severity::Cosmetic),
            "{shrunk:?}"
        );
        // Of one severity, `(surface)` sorts before the tools.
        assert_eq!(
            shrunk[1].2,
            "its tools/list entry shrank from 400 to 100 tokens (-75%)"
        );
        let surface = rated(
            costing(Some(100), Some(1000)),
            costing(Some(100), Some(1200)),
        );
        assert_eq!(surface.len(), 1, "{surface:?}");
        assert_eq!(surface[0].0, Severity::Risky);
        assert_eq!(
            surface[0].2,
            "tools/list grew from 1000 to 1200 tokens (+20%)"
        );
    }

    #[test]
    fn a_first_measurement_is_cosmetic_and_an_unmeasured_side_is_no_change() {
        let first = rated(costing(None, None), costing(Some(100), Some(1000)));
        assert_eq!(first.len(), 2, "{first:?}");
        assert!(first.iter().all(|change| change.0 == Severity::Cosmetic));
        assert_eq!(
            first[1].2,
            "its tools/list entry was measured: 100 tokens, 400 bytes"
        );
        assert!(rated(costing(Some(100), Some(1000)), costing(None, None)).is_empty());
    }
}
