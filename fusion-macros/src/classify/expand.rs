//! The `Classify` impl: a `match` from each variant to its classification, looking
//! through wrapped errors where no class is given.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{DeriveInput, Path};

use super::{parse::ClassAttr, valid::Valid};
use crate::{krate, symbol};

pub(crate) fn expand(input: &DeriveInput, valid: &Valid<'_>) -> TokenStream {
    let parsed = valid.input();
    let private = krate::private(parsed.krate.as_ref());
    let type_class = parsed.type_classes.first();
    let type_fatal = type_class.is_some_and(|c| c.class == symbol::FATAL);
    let arms = parsed.variants.iter().map(|variant| {
        let class = if type_fatal { type_class } else { variant.classes.first().or(type_class) };
        let pattern_path = match &variant.ident {
            Some(ident) => quote!(Self::#ident),
            None => quote!(Self),
        };
        let explicit = !variant.classes.is_empty() || type_fatal;
        match (&variant.source, explicit, class) {
            (Some(source), false, _) => {
                let binding = format_ident!("__fusion_source");
                quote!(#pattern_path { #source: #binding, .. } => #private::classify_source!(#binding),)
            }
            (_, _, Some(class)) => {
                let value = classification(&private, class);
                quote!(#pattern_path { .. } => #value,)
            }
            (_, _, None) => quote!(#pattern_path { .. } => #private::Classification::INTERNAL,),
        }
    });
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics #private::Classify for #ident #type_generics #where_clause {
            fn classification(&self) -> #private::Classification {
                #[allow(unreachable_patterns)]
                match self {
                    #(#arms)*
                }
            }
        }
    }
}

/// On errors: an impl that says "internal" for every value, so uses of the type compile.
pub(crate) fn fallback(input: &DeriveInput, krate: Option<&Path>) -> TokenStream {
    let private = krate::private(krate);
    let ident = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    quote! {
        impl #impl_generics #private::Classify for #ident #type_generics #where_clause {
            fn classification(&self) -> #private::Classification {
                #private::Classification::INTERNAL
            }
        }
    }
}

fn classification(private: &TokenStream, class: &ClassAttr) -> TokenStream {
    let variant = match class.class.to_string().as_str() {
        symbol::TRANSIENT => quote!(Transient),
        symbol::INVALID_INPUT => quote!(InvalidInput),
        symbol::FATAL => quote!(Fatal),
        symbol::WARNING => quote!(Warning),
        _ => quote!(Internal),
    };
    let code = match class.code.as_ref().map(ToString::to_string).as_deref() {
        Some("unauthorized") => {
            quote!(::core::option::Option::Some(#private::ErrorCode::Unauthorized))
        }
        Some("forbidden") => quote!(::core::option::Option::Some(#private::ErrorCode::Forbidden)),
        Some("not_found") => quote!(::core::option::Option::Some(#private::ErrorCode::NotFound)),
        Some("conflict") => quote!(::core::option::Option::Some(#private::ErrorCode::Conflict)),
        Some("rate_limited") => {
            quote!(::core::option::Option::Some(#private::ErrorCode::RateLimited))
        }
        _ => quote!(::core::option::Option::None),
    };
    let hint = match &class.hint {
        Some(hint) => quote!(::core::option::Option::Some(#hint)),
        None => quote!(::core::option::Option::None),
    };
    let retry_after = match class.retry_after {
        Some((millis, _)) => {
            quote!(::core::option::Option::Some(::core::time::Duration::from_millis(#millis)))
        }
        None => quote!(::core::option::Option::None),
    };
    quote! {
        #private::Classification {
            class: #private::ErrorClass::#variant,
            code: #code,
            hint: #hint,
            retry_after: #retry_after,
        }
    }
}
