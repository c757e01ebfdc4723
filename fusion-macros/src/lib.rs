//! Procedural macros of fusion. Depend on `fusion-runtime`, which re-exports them with
//! their documentation and examples; this crate is an implementation detail.
//!
//! Each macro is parse → validate → expand, one file a phase, with every user error
//! collected and reported at once (the private `ctxt` module).

mod bare_derive;
mod classify;
mod constraint;
mod ctxt;
mod duration;
mod krate;
mod mcp_type;
mod redact;
mod size;
mod symbol;
mod tool;

use proc_macro::TokenStream;

/// Turns an `async fn` into an MCP tool. Documented in `fusion_runtime::mcp_tool`.
#[proc_macro_attribute]
pub fn mcp_tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(attr.into(), item.into()).into()
}

/// Lets the fields of a struct or enum used in tool arguments carry `#[arg(..)]`
/// constraints. Documented in `fusion_runtime::mcp_type`.
#[proc_macro_attribute]
pub fn mcp_type(attr: TokenStream, item: TokenStream) -> TokenStream {
    mcp_type::expand(attr.into(), item.into()).into()
}

/// Classifies an error type's values: transient, invalid input, internal, fatal or warning.
/// Documented in `fusion_runtime::Classify`.
#[proc_macro_derive(
    Classify,
    attributes(transient, invalid_input, internal, fatal, warning, classify)
)]
pub fn derive_classify(input: TokenStream) -> TokenStream {
    classify::expand(input.into()).into()
}

/// The prelude's `Serialize`, met without `#[mcp_type]`: one error that says to add it.
/// Documented in `fusion_runtime::mcp_type`.
#[proc_macro_derive(Serialize, attributes(serde))]
pub fn derive_serialize(input: TokenStream) -> TokenStream {
    bare_derive::expand(input.into(), bare_derive::Derive::Serialize).into()
}

/// The prelude's `Deserialize`, met without `#[mcp_type]`: one error that says to add it.
/// Documented in `fusion_runtime::mcp_type`.
#[proc_macro_derive(Deserialize, attributes(serde))]
pub fn derive_deserialize(input: TokenStream) -> TokenStream {
    bare_derive::expand(input.into(), bare_derive::Derive::Deserialize).into()
}

/// The prelude's `JsonSchema`, met without `#[mcp_type]`: one error that says to add it.
/// Documented in `fusion_runtime::mcp_type`.
#[proc_macro_derive(JsonSchema, attributes(schemars, serde, validate, garde))]
pub fn derive_json_schema(input: TokenStream) -> TokenStream {
    bare_derive::expand(input.into(), bare_derive::Derive::JsonSchema).into()
}
