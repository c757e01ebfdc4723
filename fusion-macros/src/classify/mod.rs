//! `#[derive(Classify)]`: parse (`parse.rs`) → validate (`valid.rs`) → expand (`expand.rs`).

mod expand;
mod parse;
mod valid;

use proc_macro2::TokenStream;

use crate::ctxt::Ctxt;

/// The whole derive. On a user error it still emits an impl that classifies everything as
/// internal, so the error type's other uses (`?`, the tool it is returned from) do not
/// cascade into more errors.
pub(crate) fn expand(input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let input: syn::DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let parsed = parse::parse(&input, &mut cx);
    if let Some(parsed) = &parsed {
        valid::check(parsed, &mut cx);
    }
    match parsed {
        Some(parsed) if !cx.has_errors() => expand::expand(&input, &parsed),
        parsed => {
            let krate = parsed.and_then(|p| p.krate);
            let mut out = cx.into_compile_errors();
            out.extend(expand::fallback(&input, krate.as_ref()));
            out
        }
    }
}
