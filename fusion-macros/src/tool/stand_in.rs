//! What `#[mcp_tool]` emits next to its errors: a stand-in for the tool, so that each
//! mistake gives one error and not a second at every place the tool is used.
//!
//! The stand-in is the same unit struct a valid tool becomes, with
//! - an `impl Tool<C>` for every context, so `.tool(add)` raises nothing more (its body is
//!   never run: the crate does not compile while the errors stand);
//! - the `Deref` to the body that keeps `add(2, 3).await` working, when the signature is
//!   one a valid tool could have; otherwise the body is kept, unused, so its own type
//!   errors are still reported.

use proc_macro2::{TokenStream, TokenTree};
use quote::{ToTokens as _, quote};
use syn::{FnArg, ReturnType, Type};

use super::expand::{Plan, body_fn, direct_call, shadow, unit_struct};
use super::parse::ToolFn;

pub(crate) fn stand_in(tool: &ToolFn) -> TokenStream {
    if tool.item.sig.receiver().is_some() {
        // A method, inside an `impl` block, where no struct can be declared: give it back
        // as written.
        return tool.item.to_token_stream();
    }
    let plan = Plan::new(tool);
    let private = &plan.private;
    let ident = plan.ident;
    let unit_struct = unit_struct(&plan);
    let shadow = shadow(&plan);
    let body_fn = body_fn(&plan);
    let direct_call = if callable_as_written(tool) {
        Some(direct_call(&plan))
    } else {
        plain_fn_pointer(&plan)
    };
    quote! {
        #unit_struct

        const _: () = {
            #shadow
            #[allow(dead_code)]
            #body_fn
            #direct_call
            impl<__FusionC: ::core::marker::Send + ::core::marker::Sync + 'static>
                #private::Tool<__FusionC> for #ident
            {
                fn definition(&self) -> #private::ToolDefinition<__FusionC> {
                    ::core::unreachable!("a tool with compile errors is never built")
                }
            }
        };
    }
}

/// Whether the `Deref` of a valid tool fits this signature: an `async fn` without
/// generics, receiver or `impl Trait`, every parameter named, at most one `#[ctx]` and one
/// `#[call]`, those references and the others owned. Any other shape is already an error of its own,
/// and a `Deref` built for it would add more.
fn callable_as_written(tool: &ToolFn) -> bool {
    let sig = &tool.item.sig;
    let plain_inputs = sig
        .inputs
        .iter()
        .all(|input| matches!(input, FnArg::Typed(_)));
    let params_fit = tool.params.iter().all(|param| {
        let ty = &param.ty;
        if param.ctx.is_some() || param.call.is_some() {
            matches!(&**ty, Type::Reference(_)) && !has_impl(&quote!(#ty))
        } else {
            owned(&quote!(#ty))
        }
    });
    let return_fits = match &sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => owned(&quote!(#ty)),
    };
    sig.asyncness.is_some()
        && sig.generics.params.is_empty()
        && sig.generics.where_clause.is_none()
        && sig.variadic.is_none()
        && plain_inputs
        && tool.params.len() == sig.inputs.len()
        && tool
            .params
            .iter()
            .filter(|param| param.ctx.is_some())
            .count()
            <= 1
        && tool
            .params
            .iter()
            .filter(|param| param.call.is_some())
            .count()
            <= 1
        && params_fit
        && return_fits
}

/// For a function that is not `async` (its own error), a `Deref` to the body as written,
/// so `add(2, 3)` still calls it; `None` for a shape a function pointer cannot name.
fn plain_fn_pointer(plan: &Plan<'_>) -> Option<TokenStream> {
    let sig = &plan.tool.item.sig;
    let output = &sig.output;
    let types: Vec<&Type> = sig
        .inputs
        .iter()
        .map(|input| match input {
            FnArg::Typed(typed) => Some(&*typed.ty),
            FnArg::Receiver(_) => None,
        })
        .collect::<Option<_>>()?;
    let nameable = sig.asyncness.is_none()
        && sig.generics.params.is_empty()
        && sig.generics.where_clause.is_none()
        && sig.variadic.is_none()
        && !has_impl(&quote!(#(#types)* #output));
    if !nameable {
        return None;
    }
    let ident = plan.ident;
    let body = &plan.body_ident;
    let unsafety = &sig.unsafety;
    let abi = &sig.abi;
    Some(quote! {
        impl ::core::ops::Deref for #ident {
            type Target = #unsafety #abi fn(#(#types),*) #output;
            fn deref(&self) -> &Self::Target {
                const __FUSION_CALL: #unsafety #abi fn(#(#types),*) #output = #body;
                &__FUSION_CALL
            }
        }
    })
}

/// A type without references, lifetimes or `impl Trait`: one a boxed `'static` future can
/// take or give.
fn owned(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().all(|tree| match tree {
        TokenTree::Punct(punct) => punct.as_char() != '&' && punct.as_char() != '\'',
        TokenTree::Ident(ident) => ident != "impl",
        TokenTree::Group(group) => owned(&group.stream()),
        TokenTree::Literal(_) => true,
    })
}

fn has_impl(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == "impl",
        TokenTree::Group(group) => has_impl(&group.stream()),
        _ => false,
    })
}
