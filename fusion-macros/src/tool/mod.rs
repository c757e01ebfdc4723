//! `#[mcp_tool]`: parse (`parse.rs`) → validate (`valid.rs`, which alone makes the `Valid`
//! tool that expansion takes) → expand (`expand/`); the caching keys in one file of their
//! own (`cache.rs`).

mod cache;
mod expand;
mod parse;
mod stand_in;
mod valid;
mod value;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

/// The whole macro: tokens in, tokens out. On any user error a stand-in for the tool is
/// emitted next to the errors (`stand_in.rs`), so that its registration and its direct
/// calls do not cascade into more errors.
pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let Some(tool) = parse::parse(attr, item.clone(), &mut cx) else {
        // Not a function at all: give the item back untouched.
        let mut out = cx.into_compile_errors();
        out.extend(item);
        return out;
    };
    match valid::check(&tool, cx) {
        Ok(valid) => expand::expand(&valid),
        Err(errors) => {
            let mut out = errors.to_compile_error();
            out.extend(stand_in::stand_in(&tool));
            out
        }
    }
}
