//! `#[redact]` on a field of an `#[mcp_type]`: the field is written as its mask when the
//! server serializes a result, and as itself anywhere else.
//!
//! The field's `serialize_with` is pointed at a function generated on the type, which hands
//! the field to the runtime's `serialize_redacted`. That call is spanned by the field's type,
//! so a type that cannot hold a mask is one error, on the field, worded by the runtime's
//! `Redact` trait. The field's schema gets the runtime's `redacted_schema` transform, which
//! lets a text field's schema accept the mask.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Attribute, Field, Ident, spanned::Spanned as _};

use crate::{ctxt::Ctxt, symbol};

/// What one type's `#[redact]` fields add to it.
#[derive(Default)]
pub(crate) struct Redactions {
    /// The serializing functions, one a redacted field, for the type's inherent impl.
    pub(crate) methods: TokenStream,
    /// The first `#[redact]` met, for errors about the type as a whole.
    pub(crate) first: Option<Attribute>,
    /// How many fields are redacted (each function's name is its number).
    count: usize,
}

/// Takes `#[redact]` off `field`. When it was there, adds the field's `serde` and `schemars`
/// attributes and its serializing function to `redactions`.
pub(crate) fn take(
    field: &mut Field,
    ty_ident: &Ident,
    private: &TokenStream,
    redactions: &mut Redactions,
    cx: &mut Ctxt,
) {
    let (marks, kept): (Vec<_>, Vec<_>) = field
        .attrs
        .drain(..)
        .partition(|attr| attr.path().is_ident(symbol::REDACT));
    field.attrs = kept;
    let Some(mark) = marks.first() else {
        return;
    };
    for extra in &marks[1..] {
        cx.error_spanned_by(extra, "`#[redact]` is given twice on this field");
    }
    if mark.meta.require_path_only().is_err() {
        cx.error_spanned_by(
            &mark.meta,
            "`#[redact]` takes no arguments: the mask follows from the field's type",
        );
    }
    if let Some(serde) = field.attrs.iter().find(|attr| sets_serialize_with(attr)) {
        cx.error_spanned_by(
            serde,
            "a `#[redact]` field is serialized by fusion; it cannot have `#[serde(with = ..)]` or `#[serde(serialize_with = ..)]` too",
        );
        // serde's own error about two `serialize_with`s would say the same again.
        return;
    }
    let function = format_ident!("__fusion_redact_{}", redactions.count);
    redactions.count += 1;
    let ty = &field.ty;
    let call =
        quote_spanned!(ty.span()=> #private::serialize_redacted::<#ty, __S>(value, serializer));
    redactions.methods.extend(quote! {
        #[doc(hidden)]
        #[allow(dead_code)]
        fn #function<__S: #private::serde::Serializer>(
            value: &#ty,
            serializer: __S,
        ) -> ::core::result::Result<__S::Ok, __S::Error> {
            #call
        }
    });
    let path = format!("{ty_ident}::{function}");
    field
        .attrs
        .push(syn::parse_quote!(#[serde(serialize_with = #path)]));
    field
        .attrs
        .push(syn::parse_quote!(#[schemars(transform = #private::redacted_schema)]));
    redactions.first.get_or_insert_with(|| mark.clone());
}

/// Whether a field attribute is `#[serde(..)]` with `with` or `serialize_with`.
fn sets_serialize_with(attr: &Attribute) -> bool {
    if !attr.path().is_ident("serde") {
        return false;
    }
    let mut found = false;
    let _ = attr.parse_nested_meta(|meta| {
        if meta.path.is_ident("with") || meta.path.is_ident("serialize_with") {
            found = true;
        }
        if meta.input.peek(syn::Token![=]) {
            meta.value()?.parse::<syn::Expr>()?;
        } else if meta.input.peek(syn::token::Paren) {
            let _content;
            syn::parenthesized!(_content in meta.input);
        }
        Ok(())
    });
    found
}
