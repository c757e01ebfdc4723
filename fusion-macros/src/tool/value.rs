//! The values of `#[mcp_tool]`'s keys that more than one part of the macro reads: a hint's
//! flag, a duration, and the rule that a key is given once.

use proc_macro2::Span;
use syn::{LitStr, meta::ParseNestedMeta};

use crate::{ctxt::Ctxt, duration};

/// A boolean key: written bare (`read_only`) or with a value (`read_only = false`).
#[derive(Clone, Copy)]
pub(crate) struct Flag {
    pub(crate) value: bool,
    pub(crate) span: Span,
}

/// A duration written as `"250ms"`, `"5s"`, `"2m"` or `"1h"`, in milliseconds.
#[derive(Clone, Copy)]
pub(crate) struct Millis {
    pub(crate) millis: u64,
    pub(crate) span: Span,
    /// False when the text was malformed (already reported): no further rule applies.
    pub(crate) valid: bool,
}

/// A duration literal: `"250ms"`, `"5s"`, `"2m"`, `"1h"`. A malformed one is reported and read
/// as zero, so parsing goes on.
pub(super) fn duration_value(meta: &ParseNestedMeta<'_>, cx: &mut Ctxt) -> syn::Result<Millis> {
    let text: LitStr = meta.value()?.parse()?;
    let millis = duration::parse_millis(&text.value());
    if millis.is_none() {
        cx.error_spanned_by(
            &text,
            format!(
                "`{}` is not a duration; {}",
                text.value(),
                duration::EXPECTED
            ),
        );
    }
    Ok(Millis {
        millis: millis.unwrap_or(0),
        span: text.span(),
        valid: millis.is_some(),
    })
}

pub(super) fn set_once<T>(
    cx: &mut Ctxt,
    meta: &ParseNestedMeta<'_>,
    slot: &mut Option<T>,
    value: T,
) {
    if slot.is_some() {
        let key = quote::ToTokens::to_token_stream(&meta.path).to_string();
        cx.error_spanned_by(&meta.path, format!("`{key}` is given twice; keep one"));
    } else {
        *slot = Some(value);
    }
}
