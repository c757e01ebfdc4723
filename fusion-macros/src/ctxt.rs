//! Collects every user error of one macro invocation, so all of them are reported in one
//! compile (after serde_derive's `internals/ctxt.rs`).
//!
//! A `Ctxt` must be consumed by [`Ctxt::check`] or [`Ctxt::into_compile_errors`]: one that
//! is dropped unchecked panics, because an error recorded there would otherwise vanish and
//! the macro would expand as if the input were valid. The panic is a bug in this crate,
//! found by its own tests, never a message for users.

use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// An accumulator of `syn::Error`s.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
    /// Set by the consuming methods; [`Drop`] panics while it is false.
    checked: bool,
}

impl Ctxt {
    /// Records an error spanning `tokens`.
    pub(crate) fn error_spanned_by(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error at `span`.
    pub(crate) fn error_at(&mut self, span: proc_macro2::Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records a `syn` error (a parse failure).
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.errors {
            Some(errors) => errors.combine(error),
            None => self.errors = Some(error),
        }
    }

    /// Closes the context: every recorded error, combined into one, or `Ok` when the input
    /// was valid.
    pub(crate) fn check(mut self) -> syn::Result<()> {
        self.checked = true;
        self.errors.take().map_or(Ok(()), Err)
    }

    /// Closes the context: the recorded errors as `compile_error!` invocations (empty when
    /// there are none), for macros that emit the item whether or not it was valid.
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.check()
            .err()
            .map(|errors| errors.to_compile_error())
            .unwrap_or_default()
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        // Not while unwinding from another panic: a second panic would abort the compiler
        // and hide the first one's message.
        if !self.checked && !std::thread::panicking() {
            panic!(
                "fusion-macros: a `Ctxt` was dropped without `check()`; its errors would be lost"
            );
        }
    }
}

/// The valid key closest to `word`, for "did you mean" (an edit distance of at most 2;
/// the macro crate takes no dependency beyond syn, quote and proc-macro2).
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    // `maximum` for `max`, `len` for `length`: one spelling abbreviates the other.
    if let Some(prefixed) = candidates.iter().find(|candidate| {
        candidate.len() >= 3
            && word.len() >= 3
            && (word.starts_with(**candidate) || candidate.starts_with(word))
    }) {
        return Some(prefixed);
    }
    candidates
        .iter()
        .map(|candidate| (edit_distance(word, candidate), *candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current.push(substitution.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_near_keys_only() {
        let keys = ["read_only", "destructive", "name"];
        assert_eq!(closest("readonly", &keys), Some("read_only"));
        assert_eq!(closest("nmae", &keys), Some("name"));
        assert_eq!(closest("timeout", &keys), None);
        assert_eq!(closest("maximum", &["min", "max"]), Some("max"));
    }

    #[test]
    fn check_returns_every_error() {
        let mut cx = Ctxt::default();
        cx.error_at(proc_macro2::Span::call_site(), "first");
        cx.error_at(proc_macro2::Span::call_site(), "second");
        let errors = cx.check().err().map(|errors| errors.into_iter().count());
        assert_eq!(errors, Some(2));
        assert!(Ctxt::default().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "dropped without `check()`")]
    fn unchecked_drop_panics() {
        let mut cx = Ctxt::default();
        cx.error_at(proc_macro2::Span::call_site(), "lost");
    }

    #[test]
    fn unchecked_drop_while_panicking_does_not_abort() {
        // A second panic during unwinding would abort the test process instead of failing
        // this one; reaching the assertion proves the drop stayed quiet.
        let result = std::panic::catch_unwind(|| {
            let _cx = Ctxt::default();
            panic!("the first panic");
        });
        assert!(result.is_err());
    }
}
