//! What the surface costs the model: the bytes and the tokens of each tool's `tools/list`
//! entry and of the whole list ([`TokenCost`]), and a ceiling they must stay under
//! ([`TokenBudget`]).
//!
//! Tokens are counted with OpenAI's `o200k_base` BPE (tiktoken-rs), the encoding of today's
//! large models. Other models' tokenizers differ by a few percent, not by the factor of two
//! that bytes/4 is off by on JSON Schema, so a count here is a budget's honest unit. The
//! vocabulary is loaded the first time a contract is measured (about 0.15 s), never on the
//! serving path.

use serde::Serialize;

use crate::contract::model::{Contract, TokenCost};

/// Fills in `contract`'s costs from `listed`, the listing a client that declares no
/// extension gets, in name order (`Registry::wire_in_name_order`): each tool's entry, and
/// the whole `tools/list` result.
pub(crate) fn measure(contract: &mut Contract, listed: &[rmcp::model::Tool]) {
    for tool in listed {
        if let Some(entry) = contract.tools.get_mut(tool.name.as_ref()) {
            entry.cost = Some(of_json(tool));
        }
    }
    contract.cost = Some(of_json(&serde_json::json!({ "tools": listed })));
}

/// The cost of `value` as compact JSON, the way it goes on the wire.
fn of_json(value: &impl Serialize) -> TokenCost {
    // A tool listing is strings, maps and numbers: it always serializes.
    TokenCost::of(&serde_json::to_string(value).unwrap_or_default())
}

/// A ceiling on what the surface costs the model, in `o200k_base` tokens: per listed tool,
/// in all, or both. Set it with
/// [`ServerBuilder::token_budget`](crate::ServerBuilder::token_budget); then
/// [`Tester::assert_contract`](crate::testing::Tester::assert_contract) fails a test, and
/// [`start`](crate::ServerBuilder::start) refuses to start a server pinned with
/// [`require_surface`](crate::ServerBuilder::require_surface), when the surface is over it.
///
/// ```
/// use fusion_runtime::{contract::TokenBudget, prelude::*};
///
/// /// Echo the text back.
/// #[mcp_tool(read_only)]
/// async fn echo(text: String) -> String {
///     text
/// }
///
/// let contract = Server::builder("demo", "1").tool(echo).build().contract();
/// assert!(TokenBudget::new().per_tool(200).total(400).check(&contract).is_ok());
/// let over = TokenBudget::new().per_tool(10).check(&contract).expect_err("over budget");
/// assert!(over.to_string().contains("`echo` costs"), "{over}");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenBudget {
    per_tool: Option<u64>,
    total: Option<u64>,
}

impl TokenBudget {
    /// No ceiling yet: add one with [`per_tool`](Self::per_tool) or [`total`](Self::total).
    pub const fn new() -> Self {
        Self {
            per_tool: None,
            total: None,
        }
    }

    /// The most tokens one listed tool's entry may cost (a grouped tool is one entry).
    pub const fn per_tool(mut self, tokens: u64) -> Self {
        self.per_tool = Some(tokens);
        self
    }

    /// The most tokens the whole `tools/list` result may cost.
    pub const fn total(mut self, tokens: u64) -> Self {
        self.total = Some(tokens);
        self
    }

    /// `Ok` when `contract`'s costs are within the budget.
    ///
    /// # Errors
    /// [`OverBudget`], naming each tool over the per-tool ceiling and the total over its
    /// own, with the numbers; also when the contract carries no costs to check (a lockfile
    /// written before fusion measured them).
    pub fn check(&self, contract: &Contract) -> Result<(), OverBudget> {
        let mut excesses = Vec::new();
        if let Some(ceiling) = self.per_tool {
            for (name, tool) in &contract.tools {
                match tool.cost {
                    Some(cost) if cost.tokens > ceiling => excesses.push(format!(
                        "`{name}` costs {} tokens in tools/list, over the budget of {ceiling} a tool",
                        cost.tokens
                    )),
                    Some(_) => {}
                    None => excesses.push(format!("`{name}` carries no token count to check")),
                }
            }
        }
        if let Some(ceiling) = self.total {
            match contract.cost {
                Some(cost) if cost.tokens > ceiling => excesses.push(format!(
                    "tools/list costs {} tokens in all, over the budget of {ceiling}",
                    cost.tokens
                )),
                Some(_) => {}
                None => excesses.push("the contract carries no token count to check".to_owned()),
            }
        }
        if excesses.is_empty() {
            Ok(())
        } else {
            Err(OverBudget { excesses })
        }
    }
}

/// A surface over its [`TokenBudget`]: each excess, as a sentence with the numbers.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the tool surface is over its token budget: {}", excesses.join("; "))]
#[non_exhaustive]
pub struct OverBudget {
    /// One sentence per tool over the per-tool ceiling, and one for the total.
    pub excesses: Vec<String>,
}
