//! The prelude's `Serialize`, `Deserialize` and `JsonSchema` derives, as met without
//! `#[mcp_type]`.
//!
//! Under `#[mcp_type]` these names never expand: the attribute, which runs first, points
//! the derive list at serde's and schemars' own derives through fusion's re-exports. Met
//! bare, serde's derive would name a `serde` crate the user does not depend on, and fail
//! with five errors and advice to add a dependency. Instead each gives the one error that
//! says what to write, and an impl that is never run (the crate does not compile while the
//! error stands), so the type's uses raise nothing more.

use crate::symbol;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

/// Which derive of the prelude met its type without `#[mcp_type]`.
#[derive(Clone, Copy)]
pub(crate) enum Derive {
    Serialize,
    Deserialize,
    JsonSchema,
}

pub(crate) fn expand(input: TokenStream, derive: Derive) -> TokenStream {
    let input: syn::DeriveInput = match syn::parse2(input) {
        Ok(input) => input,
        Err(error) => return error.to_compile_error(),
    };
    // One message, at one span, for every derive of the list: rustc reports identical
    // diagnostics once, so `#[derive(Deserialize, JsonSchema)]` gives one error.
    let message = if input.attrs.iter().any(|attr| {
        attr.path()
            .segments
            .last()
            .is_some_and(|last| last.ident == symbol::MCP_TYPE)
    }) {
        "`#[mcp_type]` must come before `#[derive(..)]`: it points fusion's `Serialize`, `Deserialize` and `JsonSchema` derives at the serde and schemars fusion re-exports, and a derive listed above it has already run"
    } else {
        "fusion's `Serialize`, `Deserialize` and `JsonSchema` derives need `#[mcp_type]` above the `#[derive(..)]` (all are in `fusion_runtime::prelude`): it points them at the serde and schemars fusion re-exports, so the crate needs neither dependency; to use your own serde and schemars instead, import their derives by name"
    };
    let span = input.ident.span();
    let error = quote_spanned!(span=> ::core::compile_error! { #message });
    let private = crate::krate::private(None);
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let never = quote!(::core::unreachable!(
        "a type with compile errors is never used"
    ));
    let stand_in = match derive {
        Derive::Serialize => quote! {
            impl #impl_generics #private::serde::Serialize for #ident #type_generics #where_clause {
                fn serialize<__S: #private::serde::Serializer>(
                    &self,
                    _: __S,
                ) -> ::core::result::Result<__S::Ok, __S::Error> {
                    #never
                }
            }
        },
        Derive::Deserialize => {
            let mut generics = input.generics.clone();
            generics.params.insert(0, syn::parse_quote!('__fusion_de));
            let (impl_generics, _, _) = generics.split_for_impl();
            quote! {
                impl #impl_generics #private::serde::Deserialize<'__fusion_de> for #ident #type_generics #where_clause {
                    fn deserialize<__D: #private::serde::Deserializer<'__fusion_de>>(
                        _: __D,
                    ) -> ::core::result::Result<Self, __D::Error> {
                        #never
                    }
                }
            }
        }
        Derive::JsonSchema => quote! {
            impl #impl_generics #private::schemars::JsonSchema for #ident #type_generics #where_clause {
                fn schema_name() -> ::std::borrow::Cow<'static, str> {
                    #never
                }
                fn json_schema(
                    _: &mut #private::schemars::SchemaGenerator,
                ) -> #private::schemars::Schema {
                    #never
                }
            }
        },
    };
    quote! {
        #error
        #stand_in
    }
}
