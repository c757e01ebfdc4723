//! Collects every user error of one macro invocation, so all of them are reported in one
//! compile (after serde_derive's `Ctxt`).

use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// An accumulator of `syn::Error`s.
#[derive(Default)]
pub(crate) struct Ctxt {
    errors: Option<syn::Error>,
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

    /// Whether any error was recorded.
    pub(crate) fn has_errors(&self) -> bool {
        self.errors.is_some()
    }

    /// The recorded errors as `compile_error!` invocations (empty when there are none).
    pub(crate) fn into_compile_errors(self) -> TokenStream {
        self.errors
            .map(|errors| errors.to_compile_error())
            .unwrap_or_default()
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
}
