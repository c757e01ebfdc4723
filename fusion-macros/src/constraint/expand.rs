//! Code for the constraints of one field: a schemars `transform` that writes them into the
//! field's schema (which the runtime enforces), a serde default, and one rustc check per
//! constraint that the field's type can carry it.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, Type};

use super::parse::{Constraint, Constraints, Kind, Literal, Number};

/// What the constraints of one field contribute to the generated code.
#[derive(Default)]
pub(crate) struct FieldCode {
    /// Attributes for the field (`#[schemars(transform = ..)]`, `#[serde(default = ..)]`).
    pub(crate) attrs: TokenStream,
    /// Items for an `impl` block of the containing struct (the default's function).
    pub(crate) methods: TokenStream,
    /// Statements for a `const` block: type checks, spanned at each constraint's key.
    pub(crate) checks: TokenStream,
    /// The runtime `Constraint`s of the field's schema, for a field described without
    /// schemars' derive (the runtime's `ArgField::constraints`).
    pub(crate) schema: Vec<TokenStream>,
}

/// `owner` is the struct's name as serde's `default = "..."` must spell it. `arg` is the
/// `Arg<..>` alias of a tool parameter, whose field in the argument struct has the type
/// `<arg as ArgType>::Field` (see the runtime's `argument.rs`); `None` for a field of the
/// user's own struct, which has its declared type.
pub(crate) fn field_code(
    private: &TokenStream,
    owner: &Ident,
    field: &Ident,
    ty: &Type,
    constraints: &Constraints,
    arg: Option<&Ident>,
) -> FieldCode {
    let mut code = FieldCode::default();
    if constraints.is_empty() {
        return code;
    }
    let mut schema_constraints = Vec::new();
    for constraint in &constraints.list {
        let (check, tokens) = constraint_code(private, &quote!(#ty), constraint);
        code.checks.extend(check);
        schema_constraints.extend(tokens);
    }
    if !schema_constraints.is_empty() {
        code.attrs.extend(quote! {
            #[schemars(transform = |schema: &mut #private::schemars::Schema| {
                #private::constrain(schema, &[#(#schema_constraints),*]);
            })]
        });
    }
    code.schema = schema_constraints;
    if let Some(default) = constraints.default_expr() {
        let function = format_ident!("__fusion_default_{}", field);
        let path = format!("{owner}::{function}");
        code.attrs.extend(quote!(#[serde(default = #path)]));
        code.methods.extend(match arg {
            Some(arg) => quote! {
                #[doc(hidden)]
                fn #function() -> <#arg as #private::ArgType>::Field {
                    <#arg as #private::ArgType>::field(#default)
                }
            },
            None => quote! {
                #[doc(hidden)]
                fn #function() -> #ty {
                    #default
                }
            },
        });
    }
    code
}

/// One constraint: the rustc check that `ty` can carry it (spanned at its key), and the
/// runtime `Constraint` it becomes in the schema (`None` for `default` and `validate`,
/// which are not schema keywords).
fn constraint_code(
    private: &TokenStream,
    ty: &TokenStream,
    constraint: &Constraint,
) -> (TokenStream, Option<TokenStream>) {
    let key = &constraint.key;
    let kind_check = |check: &str| {
        let check = format_ident!("{check}");
        quote_spanned!(key.span()=> #private::kinds::#check::<#ty>();)
    };
    let (check, tokens) = match &constraint.kind {
        Kind::Min(n) => (kind_check("numeric"), {
            let n = literal_number(private, n);
            Some(quote!(Minimum(#n)))
        }),
        Kind::Max(n) => (kind_check("numeric"), {
            let n = literal_number(private, n);
            Some(quote!(Maximum(#n)))
        }),
        Kind::ExclusiveMin(n) => (kind_check("numeric"), {
            let n = literal_number(private, n);
            Some(quote!(ExclusiveMinimum(#n)))
        }),
        Kind::ExclusiveMax(n) => (kind_check("numeric"), {
            let n = literal_number(private, n);
            Some(quote!(ExclusiveMaximum(#n)))
        }),
        Kind::MultipleOf(n) => (kind_check("numeric"), {
            let n = literal_number(private, n);
            Some(quote!(MultipleOf(#n)))
        }),
        Kind::Length { min, max } => {
            let count = |n: &Option<Number>| match n.as_ref().and_then(|n| n.int) {
                Some(int) => {
                    let int = int as u64;
                    quote!(::core::option::Option::Some(#int))
                }
                None => quote!(::core::option::Option::None),
            };
            let (min, max) = (count(min), count(max));
            (
                kind_check("has_length"),
                Some(quote!(Length { min: #min, max: #max })),
            )
        }
        Kind::NonEmpty => (kind_check("has_length"), Some(quote!(NonEmpty))),
        Kind::Pattern(pattern) => (kind_check("text"), Some(quote!(Pattern(#pattern)))),
        Kind::Format(format) => (kind_check("text"), Some(quote!(Format(#format)))),
        Kind::OneOf(values) => {
            let values = values.iter().map(|(value, _)| literal(private, value));
            (quote!(), Some(quote!(OneOf(&[#(#values),*]))))
        }
        Kind::Unique => (kind_check("list"), Some(quote!(Unique))),
        Kind::Deprecated => (quote!(), Some(quote!(Deprecated))),
        Kind::Secret => (quote!(), Some(quote!(Secret))),
        Kind::Default(_) | Kind::Validate(_) => (quote!(), None),
        // Each item's constraints are checked against the item type.
        Kind::Items(each) => {
            let item = quote_spanned!(key.span()=> <#ty as #private::kinds::Items>::Item);
            let mut checks = kind_check("items");
            let mut inner = Vec::new();
            for constraint in &each.list {
                let (check, tokens) = constraint_code(private, &item, constraint);
                checks.extend(check);
                inner.extend(tokens);
            }
            (checks, Some(quote!(Items(&[#(#inner),*]))))
        }
    };
    (
        check,
        tokens.map(|tokens| quote!(#private::Constraint::#tokens)),
    )
}

fn literal_number(private: &TokenStream, number: &Number) -> TokenStream {
    match number.int {
        Some(int) => quote!(#private::Literal::Int(#int)),
        None => {
            let value = number.value;
            quote!(#private::Literal::Float(#value))
        }
    }
}

fn literal(private: &TokenStream, value: &Literal) -> TokenStream {
    match value {
        Literal::Str(text) => quote!(#private::Literal::Str(#text)),
        Literal::Bool(flag) => quote!(#private::Literal::Bool(#flag)),
        Literal::Number(number) => literal_number(private, number),
    }
}
