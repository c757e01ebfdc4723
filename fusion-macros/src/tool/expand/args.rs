//! The tool's arguments: rustc's checks of their types ([`type_checks`]), and the struct the
//! call's JSON arguments decode into ([`args_struct`]).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{Attribute, Ident, spanned::Spanned as _};

use super::{Plan, unraw};
use crate::krate;

/// rustc's checks, each spanned at the user's token: that every argument type can be
/// decoded, and that it can carry its `#[arg(..)]` constraints.
///
/// A type that cannot be decoded gets one error, this check's, and no more: its field in
/// the argument struct is `<Arg<T, OK> as ArgType>::Field`, where `OK` says at compile time
/// whether `T` is a tool argument, and the field is a stand-in that derives cleanly when it
/// is not (the runtime's `argument.rs` says how).
pub(super) fn type_checks(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let argument_checks = plan.arg_params.iter().map(|param| {
        let ty = &param.ty;
        quote_spanned!(ty.span()=> #private::assert_argument::<#ty>();)
    });
    let aliases = plan
        .arg_params
        .iter()
        .zip(&plan.arg_aliases)
        .map(|(param, alias)| {
            let ty = &param.ty;
            quote_spanned! {ty.span()=>
                type #alias = #private::Arg<#ty, {
                    #[allow(unused_imports)]
                    use #private::ArgCheckFallback as _;
                    #private::ArgCheck::<#ty>::OK
                }>;
            }
        });
    let constraint_checks = plan.constraint_code.iter().map(|code| &code.checks);
    quote! {
        #(#aliases)*
        const _: () = {
            #(#argument_checks)*
            #(#constraint_checks)*
        };
    }
}

/// The struct the call's JSON arguments decode into, and how it decodes and describes
/// itself. Unknown arguments are refused.
///
/// Most tools' parameters carry no attribute but their docs: their struct implements the
/// runtime's `FieldArgs` with constant data (each field's name, docs and schema function)
/// and a `decode` that takes each field by name. The generic code that does the work is
/// per argument type, compiled once for a crate's tools, so a tool costs a fraction of
/// what serde's and schemars' derives cost it (issue 32, item 6). An `#[arg(..)]`
/// constraint of the schema is constant data too (`ArgField::constraints`, issue 56).
/// Parameters with `#[serde(..)]`, `#[schemars(..)]` or a `default` get the derives, which
/// read those attributes; serde and schemars are then the runtime's re-exports.
pub(super) fn args_struct(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let args_ident = &plan.args_ident;
    if plan.by_field {
        return field_args_struct(plan);
    }
    let fields = plan
        .arg_params
        .iter()
        .zip(&plan.constraint_code)
        .zip(&plan.arg_aliases)
        .map(|((param, code), alias)| {
            let docs = &param.docs;
            let field_attrs = &param.field_attrs;
            let constraint_attrs = &code.attrs;
            let ident = &param.ident;
            quote!(#(#docs)* #(#field_attrs)* #constraint_attrs #ident: <#alias as #private::ArgType>::Field,)
        });
    let constraint_methods = plan.constraint_code.iter().map(|code| &code.methods);
    let serde_crate = krate::reexport(private, "serde");
    let schemars_crate = krate::reexport(private, "schemars");
    quote! {
        #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        #[schemars(crate = #schemars_crate)]
        struct #args_ident {
            #(#fields)*
        }

        impl #args_ident {
            #(#constraint_methods)*
        }
    }
}

/// [`args_struct`] for parameters without attributes: the struct, and its `FieldArgs`.
fn field_args_struct(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let args_ident = &plan.args_ident;
    let idents: Vec<&Ident> = plan.arg_params.iter().map(|param| &param.ident).collect();
    let names: Vec<String> = idents.iter().map(|ident| unraw(ident)).collect();
    let field_types: Vec<TokenStream> = plan
        .arg_aliases
        .iter()
        .map(|alias| quote!(<#alias as #private::ArgType>::Field))
        .collect();
    let docs = plan.arg_params.iter().map(|param| doc_expr(&param.docs));
    let constraints = plan.constraint_code.iter().map(|code| &code.schema);
    quote! {
        struct #args_ident {
            #(#idents: #field_types,)*
        }

        impl #private::FieldArgs for #args_ident {
            const FIELDS: &'static [#private::ArgField] = &[
                #(#private::ArgField {
                    name: #names,
                    doc: #docs,
                    schema: #private::field_schema::<#field_types>,
                    constraints: &[#(#constraints),*],
                },)*
            ];
            const NAMES: &'static [&'static str] = &[#(#names),*];

            fn decode(
                __fusion_source: &mut #private::ArgSource<'_>,
            ) -> ::core::result::Result<Self, #private::serde_json::Error> {
                ::core::result::Result::Ok(Self {
                    #(#idents: __fusion_source.take(#names)?,)*
                })
            }
        }
    }
}

/// A parameter's doc comment as schemars' derive reads it: the lines joined by newlines,
/// each without its first space.
fn doc_expr(docs: &[Attribute]) -> TokenStream {
    let lines = docs
        .iter()
        .filter_map(|attr| attr.meta.require_name_value().ok())
        .map(|line| match &line.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => {
                let text = text.value();
                let text = text.strip_prefix(' ').unwrap_or(&text).to_owned();
                quote!(#text)
            }
            other => quote!(#other),
        });
    let mut joined = TokenStream::new();
    for (index, line) in lines.enumerate() {
        if index > 0 {
            joined.extend(quote!("\n",));
        }
        joined.extend(quote!(#line,));
    }
    quote!(::core::concat!(#joined))
}
