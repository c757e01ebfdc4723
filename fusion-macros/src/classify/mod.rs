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
    let input: syn::DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    let mut cx = Ctxt::default();
    let parsed = parse::parse(&input, &mut cx);
    if let Some(parsed) = &parsed {
        valid::check(parsed, &mut cx);
    }
    match (parsed, cx.check()) {
        (Some(parsed), Ok(())) => expand::expand(&input, &parsed),
        (parsed, result) => {
            let krate = parsed.and_then(|p| p.krate);
            let mut out = result
                .err()
                .map(|errors| errors.to_compile_error())
                .unwrap_or_default();
            out.extend(expand::fallback(&input, krate.as_ref()));
            out
        }
    }
}
