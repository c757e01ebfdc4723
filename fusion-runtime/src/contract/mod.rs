//! The tool surface as a contract: what clients and the model have learned to call, as
//! data that can be committed, compared and pinned.
//!
//! - [`Server::contract`](crate::Server::contract) gives the surface as a [`Contract`]:
//!   every tool and action with its schemas, hints, scopes, recovery policy and task
//!   support, and the resources, templates and prompts. Its
//!   [`digest`](Contract::digest) is the same on every replica built from the same code.
//! - [`diff`] rates each change between two contracts from the caller's side:
//!   [`Severity::Breaking`], [`Severity::Risky`], [`Severity::Safe`] or
//!   [`Severity::Cosmetic`].
//! - [`Tester::assert_contract`](crate::testing::Tester::assert_contract) holds a server to
//!   its committed lockfile in the user's tests, and
//!   [`ServerBuilder::require_surface`](crate::ServerBuilder::require_surface) refuses to
//!   serve a surface other than the pinned one.
//! - [`TokenCost`] is what each tool's `tools/list` entry, and the whole list, cost the
//!   model in bytes and tokens; the lockfile records it, the diff rates its growth, and a
//!   [`TokenBudget`] caps it.
//!
//! ```
//! use fusion_runtime::{contract::{Severity, diff}, prelude::*};
//!
//! /// Search the notes.
//! #[mcp_tool(read_only)]
//! async fn search(text: String) -> Vec<String> {
//!     vec![text]
//! }
//!
//! /// Search the notes.
//! #[mcp_tool(name = "search", read_only)]
//! async fn search_v2(text: String, limit: u32) -> Vec<String> {
//!     vec![text; limit as usize]
//! }
//!
//! let old = Server::builder("notes", "1").tool(search).build().contract();
//! let new = Server::builder("notes", "2").tool(search_v2).build().contract();
//! let changes = diff(&old, &new);
//! assert_eq!(changes[0].severity, Severity::Breaking);
//! assert_eq!(changes[0].tool, "search");
//! ```

mod cost;
mod diff;
mod lockfile;
mod model;
mod surface;

pub(crate) use cost::measure;
pub use cost::{OverBudget, TokenBudget};
pub use diff::{Change, Severity, diff};
pub use lockfile::{CONTRACT_ENV, LOCK_ENV, REQUIREMENTS, prints_instead_of_serving};
pub(crate) use lockfile::{Pin, compare_with_file};
pub use model::{
    CacheContract, CircuitContract, Contract, FORMAT, Hints, PolicyContract,
    PromptArgumentContract, PromptContract, ResourceContract, RetryContract, TaskSupport,
    TokenCost, ToolContract, ToolSearchContract,
};
pub use surface::SURFACE_META_KEY;
