//! Procedural macros of fusion. Depend on `fusion-runtime`, which re-exports them with
//! their documentation and examples; this crate is an implementation detail.
//!
//! Each macro is parse → validate → expand, one file a phase, with every user error
//! collected and reported at once (see [`ctxt`]).

mod args;
mod constraint;
mod ctxt;
mod symbol;
mod tool;

use proc_macro::TokenStream;

/// Turns an `async fn` into an MCP tool. Documented in `fusion_runtime::mcp_tool`.
#[proc_macro_attribute]
pub fn mcp_tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Lets the fields of a struct or enum used in tool arguments carry `#[arg(..)]`
/// constraints. Documented in `fusion_runtime::mcp_args`.
#[proc_macro_attribute]
pub fn mcp_args(attr: TokenStream, item: TokenStream) -> TokenStream {
    args::expand(attr.into(), item.into()).into()
}
