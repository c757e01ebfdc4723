//! `#[mcp_type]` on a struct or enum used in tool arguments or results:
//! - the fields' `#[arg(..)]` constraints, with the same vocabulary and meaning as on tool
//!   parameters: each becomes a schemars `transform` (the constraint becomes a JSON Schema
//!   keyword, which the runtime enforces) and a serde default;
//! - the type's `Serialize`/`Deserialize`/`JsonSchema` derives are pointed at the copies of
//!   serde and schemars that fusion re-exports, so users need neither crate themselves
//!   (without it, the prelude's derives of those names report that it is missing:
//!   `bare_derive.rs`);
//! - `#[redact]` on a field: masked in the results the server sends (`redact.rs`).
//!
//! It must come before the `#[derive(..)]` it adjusts.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{Fields, Item, Path, Token, punctuated::Punctuated, spanned::Spanned as _};

use crate::{constraint, ctxt::Ctxt, redact, symbol};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let krate = parse_attr(attr, &mut cx);
    let mut parsed: Item = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "`#[mcp_type]` goes on a struct or an enum",
            );
            let mut out = cx.into_compile_errors();
            out.extend(item);
            return out;
        }
    };
    let (ident, generics, fields): (_, _, Vec<&mut Fields>) = match &mut parsed {
        Item::Struct(item) => (
            item.ident.clone(),
            item.generics.clone(),
            vec![&mut item.fields],
        ),
        Item::Enum(item) => (
            item.ident.clone(),
            item.generics.clone(),
            item.variants
                .iter_mut()
                .map(|variant| &mut variant.fields)
                .collect(),
        ),
        other => {
            cx.error_spanned_by(&*other, "`#[mcp_type]` goes on a struct or an enum");
            let mut out = cx.into_compile_errors();
            out.extend(item);
            return out;
        }
    };
    let private = crate::krate::private(krate.as_ref());
    let mut methods = TokenStream::new();
    let mut checks = TokenStream::new();
    let mut any_constraint = false;
    let mut redactions = redact::Redactions::default();
    for fields in fields {
        for field in fields.iter_mut() {
            redact::take(field, &ident, &private, &mut redactions, &mut cx);
            let (owned, kept): (Vec<_>, Vec<_>) = field
                .attrs
                .drain(..)
                .partition(|attr| attr.path().is_ident(symbol::ARG));
            field.attrs = kept;
            let constraints = constraint::parse_arg_attrs(&owned, &mut cx);
            if constraints.is_empty() {
                continue;
            }
            any_constraint = true;
            constraint::check(&constraints, &mut cx);
            if let Some(path) = constraints.validators().next() {
                cx.error_spanned_by(
                    path,
                    "`validate = ..` runs on tool parameters only; check nested fields in the parameter's own `validate` function",
                );
            }
            let Some(name) = field.ident.clone() else {
                cx.error_spanned_by(&owned[0], "`#[arg(..)]` needs a named field");
                continue;
            };
            let code =
                constraint::field_code(&private, &ident, &name, &field.ty, &constraints, None);
            // The generated attributes are well-formed by construction.
            field.attrs.extend(
                syn::Attribute::parse_outer
                    .parse2(code.attrs)
                    .unwrap_or_default(),
            );
            methods.extend(code.methods);
            checks.extend(code.checks);
        }
    }
    if any_constraint && !generics.params.is_empty() {
        cx.error_spanned_by(
            &generics,
            "`#[mcp_type]` constraints are not supported on generic types",
        );
    }
    if let Some(mark) = &redactions.first {
        if !generics.params.is_empty() {
            cx.error_spanned_by(&generics, "`#[redact]` is not supported on generic types");
        }
        if !derives_serialize(&parsed) {
            cx.error_spanned_by(
                mark,
                "`#[redact]` masks a field where the type is serialized into a result, and this type does not derive `Serialize`",
            );
        }
    }
    methods.extend(redactions.methods);
    point_derives_at_reexports(&mut parsed, &private);
    let mut out = cx.into_compile_errors();
    parsed.to_tokens(&mut out);
    if !methods.is_empty() {
        out.extend(quote! {
            impl #ident {
                #methods
            }
        });
    }
    if !checks.is_empty() {
        out.extend(quote!(const _: () = { #checks };));
    }
    out
}

use syn::parse::Parser as _;

/// Whether the item derives `Serialize` (by any path).
fn derives_serialize(item: &Item) -> bool {
    let attrs = match item {
        Item::Struct(item) => &item.attrs,
        Item::Enum(item) => &item.attrs,
        _ => return false,
    };
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("derive"))
        .filter_map(|attr| {
            attr.parse_args_with(Punctuated::<Path, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .any(|path| {
            path.segments
                .last()
                .is_some_and(|last| last.ident == "Serialize")
        })
}

fn parse_attr(attr: TokenStream, cx: &mut Ctxt) -> Option<Path> {
    let mut krate = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident(symbol::CRATE) {
            // crate = "path" | crate = path
            krate = Some(crate::krate::parse(&meta)?);
        } else {
            cx.error_spanned_by(
                &meta.path,
                "unknown `#[mcp_type]` key; the only key is `crate = \"path\"`",
            );
            if meta.input.peek(Token![=]) {
                meta.value()?.parse::<syn::Expr>()?;
            }
        }
        Ok(())
    });
    if let Err(error) = parser.parse2(attr) {
        cx.push(error);
    }
    krate
}

/// Points the derives the item uses at fusion's re-exports: a bare `Serialize`,
/// `Deserialize` or `JsonSchema` in the derive list becomes serde's or schemars' own derive
/// through `__private` (the prelude's derives of those names only report that
/// `#[mcp_type]` is missing), and `#[serde(crate = ..)]` and `#[schemars(crate = ..)]` are
/// added, unless the item names a crate already. They are appended after the item's
/// attributes, because a derive helper must come after the derive that introduces it.
fn point_derives_at_reexports(item: &mut Item, private: &TokenStream) {
    let attrs = match item {
        Item::Struct(item) => &mut item.attrs,
        Item::Enum(item) => &mut item.attrs,
        _ => return,
    };
    let mut derives = Vec::new();
    for attr in attrs
        .iter_mut()
        .filter(|attr| attr.path().is_ident("derive"))
    {
        let Ok(paths) = attr.parse_args_with(Punctuated::<Path, Token![,]>::parse_terminated)
        else {
            continue;
        };
        let paths: Punctuated<Path, Token![,]> = paths
            .into_iter()
            .map(|path| {
                let Some(last) = path.segments.last() else {
                    return path;
                };
                derives.push(last.ident.to_string());
                let reexport = match last.ident.to_string().as_str() {
                    "Serialize" | "Deserialize" => quote!(serde),
                    "JsonSchema" => quote!(schemars),
                    _ => return path,
                };
                if path.segments.len() > 1 || path.leading_colon.is_some() {
                    return path;
                }
                let ident = &last.ident;
                syn::parse_quote_spanned!(ident.span()=> #private::#reexport::#ident)
            })
            .collect();
        *attr = syn::parse_quote_spanned!(attr.span()=> #[derive(#paths)]);
    }
    let names_crate = |helper: &str| {
        attrs.iter().any(|attr| {
            attr.path().is_ident(helper)
                && attr.meta.to_token_stream().to_string().contains("crate")
        })
    };
    let mut added: Vec<syn::Attribute> = Vec::new();
    if derives
        .iter()
        .any(|d| d == "Serialize" || d == "Deserialize")
        && !names_crate("serde")
    {
        let path = crate::krate::reexport(private, "serde");
        added.push(syn::parse_quote!(#[serde(crate = #path)]));
    }
    if derives.iter().any(|d| d == "JsonSchema") && !names_crate("schemars") {
        let path = crate::krate::reexport(private, "schemars");
        added.push(syn::parse_quote!(#[schemars(crate = #path)]));
    }
    attrs.extend(added);
}
