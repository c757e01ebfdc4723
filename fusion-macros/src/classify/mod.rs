//! `#[derive(Classify)]`: parse (`parse.rs`) → validate (`valid.rs`, which alone makes the
//! `Valid` input that expansion takes) → expand (`expand.rs`).

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
    let Some(parsed) = parse::parse(&input, &mut cx) else {
        return with_fallback(&input, cx.check().err(), None);
    };
    match valid::check(&parsed, cx) {
        Ok(valid) => expand::expand(&input, &valid),
        Err(errors) => with_fallback(&input, Some(errors), parsed.krate.as_ref()),
    }
}

/// The errors, and the impl that classifies everything as internal in place of the real one.
fn with_fallback(
    input: &syn::DeriveInput,
    errors: Option<syn::Error>,
    krate: Option<&syn::Path>,
) -> TokenStream {
    let mut out = errors
        .map(|errors| errors.to_compile_error())
        .unwrap_or_default();
    out.extend(expand::fallback(input, krate));
    out
}
