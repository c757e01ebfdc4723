//! `#[mcp_args]` on a struct or enum used inside tool arguments: the fields' `#[arg(..)]`
//! constraints, with the same vocabulary and meaning as on tool parameters.
//!
//! The attribute rewrites each `#[arg(..)]` into a schemars `transform` (the constraint
//! becomes a JSON Schema keyword, which the runtime enforces) and a serde default, so it
//! must come before `#[derive(Deserialize, JsonSchema)]`.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};
use syn::{Fields, Item, LitStr, Path, Token};

use crate::{constraint, ctxt::Ctxt, symbol};

pub(crate) fn expand(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let krate = parse_attr(attr, &mut cx);
    let mut parsed: Item = match syn::parse2(item.clone()) {
        Ok(item) => item,
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "`#[mcp_args]` goes on a struct or an enum",
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
            cx.error_spanned_by(&*other, "`#[mcp_args]` goes on a struct or an enum");
            let mut out = cx.into_compile_errors();
            out.extend(item);
            return out;
        }
    };
    let private = krate.map_or_else(
        || quote!(::fusion_runtime::__private),
        |path| quote!(#path::__private),
    );
    let mut methods = TokenStream::new();
    let mut checks = TokenStream::new();
    let mut any_constraint = false;
    for fields in fields {
        for field in fields.iter_mut() {
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
            let code = constraint::field_code(&private, &ident, &name, &field.ty, &constraints);
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
            "`#[mcp_args]` constraints are not supported on generic types",
        );
    }
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

fn parse_attr(attr: TokenStream, cx: &mut Ctxt) -> Option<Path> {
    let mut krate = None;
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident(symbol::CRATE) {
            // crate = "path" | crate = path
            let value = meta.value()?;
            krate = Some(if value.peek(LitStr) {
                value.parse::<LitStr>()?.parse::<Path>()?
            } else {
                value.parse::<Path>()?
            });
        } else {
            cx.error_spanned_by(
                &meta.path,
                "unknown `#[mcp_args]` key; the only key is `crate = \"path\"`",
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
