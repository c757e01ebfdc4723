//! The rules of `#[derive(Classify)]`: one class per variant, codes that fit their class,
//! retry delays only on transient errors, hints only where the model reads the message.

use super::parse::{ClassAttr, Input};
use crate::{ctxt::Ctxt, symbol};

/// A derive input that passed every rule: only [`check`] makes one, and expansion
/// (`expand.rs`) takes nothing else.
pub(super) struct Valid<'a>(&'a Input);

impl<'a> Valid<'a> {
    /// The checked input.
    pub(super) fn input(&self) -> &'a Input {
        self.0
    }
}

/// Checks every rule, records each violation in `cx` (the parse's too), and gives the input
/// back as [`Valid`] when there is none; otherwise every error, together.
pub(super) fn check(input: &Input, mut cx: Ctxt) -> syn::Result<Valid<'_>> {
    check_rules(input, &mut cx);
    cx.check()?;
    Ok(Valid(input))
}

fn check_rules(input: &Input, cx: &mut Ctxt) {
    if let Some(second) = input.type_classes.get(1) {
        cx.error_spanned_by(
            &second.class,
            "a type has one class; remove one of these attributes",
        );
    }
    for class in &input.type_classes {
        check_class(class, cx);
    }
    let type_fatal = input
        .type_classes
        .first()
        .is_some_and(|c| c.class == symbol::FATAL);
    for variant in &input.variants {
        if let Some(second) = variant.classes.get(1) {
            cx.error_spanned_by(
                &second.class,
                format!(
                    "a variant has one class, and this one is already `#[{}]`; remove one",
                    variant.classes[0].class
                ),
            );
        }
        for class in &variant.classes {
            check_class(class, cx);
            if type_fatal {
                cx.error_spanned_by(
                    &class.class,
                    "the type is `#[fatal]`, so every value is fatal; remove the variant's class or the type's `#[fatal]`",
                );
            }
        }
    }
    if !input.is_enum
        && input.type_classes.is_empty()
        && input.variants.first().is_some_and(|v| v.source.is_none())
        && let Some(variant) = input.variants.first()
    {
        cx.error_at(
            variant.span,
            "mark the struct with its class (`#[transient]`, `#[invalid_input]`, `#[internal]`, `#[fatal]` or `#[warning]`), or give it a `#[source]` field to look through",
        );
    }
}

fn check_class(class: &ClassAttr, cx: &mut Ctxt) {
    let name = class.class.to_string();
    if let Some(code) = &class.code {
        let code_name = code.to_string();
        if !symbol::CODES.contains(&code_name.as_str()) {
            cx.error_spanned_by(
                code,
                format!(
                    "unknown code `{code_name}`; the codes are: {}",
                    symbol::CODES
                        .iter()
                        .map(|c| format!("`{c}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        } else {
            let fits = match code_name.as_str() {
                "rate_limited" => name == symbol::TRANSIENT,
                _ => name == symbol::INVALID_INPUT,
            };
            if !fits {
                let wanted = if code_name == "rate_limited" {
                    "transient"
                } else {
                    "invalid_input"
                };
                cx.error_spanned_by(
                    code,
                    format!("`{code_name}` is a code of `#[{wanted}]` errors, not of `#[{name}]` ones; change the class or drop the code"),
                );
            }
        }
    }
    if let Some((_, span)) = class.retry_after
        && name != symbol::TRANSIENT
    {
        cx.error_at(
            span,
            format!("`retry_after` applies to `#[transient]` errors, which are retried; a `#[{name}]` error is never retried"),
        );
    }
    if let Some(hint) = &class.hint
        && (name == symbol::INTERNAL || name == symbol::FATAL)
    {
        cx.error_spanned_by(
            hint,
            format!("`#[{name}]` errors are masked (the model sees a reference, not the message), so a hint would never be shown; remove it or change the class"),
        );
    }
}
