//! The tool's body and the ways into it: the function as written under a hidden name
//! ([`body_fn`]), the unit struct's `Deref` to it ([`direct_call`]), and the invoker the
//! runtime calls with decoded arguments ([`invoker`]).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{ItemFn, Type, spanned::Spanned as _};

use super::{Plan, is_doc, unraw};

/// The body, as written, under a hidden name. Its attributes other than the docs stay on
/// it (`#[allow]`, `#[cfg_attr]`, `#[tracing::instrument]`), since they are about the code.
pub(in crate::tool) fn body_fn(plan: &Plan<'_>) -> ItemFn {
    let mut body_fn = plan.tool.item.clone();
    body_fn.sig.ident = plan.body_ident.clone();
    body_fn.vis = syn::Visibility::Inherited;
    body_fn.attrs.retain(|attr| !is_doc(attr));
    // A tool takes one parameter per argument, and that may be many.
    body_fn
        .attrs
        .push(syn::parse_quote!(#[allow(clippy::too_many_arguments)]));
    // The idempotency key (and the `serialize` argument) is read by the runtime, from the
    // arguments; the body need not use it. Without this rustc warns it unused, and its
    // advice (`_request_id`) renames the argument the attribute names (issue 36).
    let attrs = &plan.tool.attrs;
    for key in [&attrs.idempotency_key, &attrs.serialize]
        .into_iter()
        .flatten()
    {
        let key = key.value();
        for input in &mut body_fn.sig.inputs {
            if let syn::FnArg::Typed(typed) = input
                && let syn::Pat::Ident(pat) = &*typed.pat
                && pat.ident == key
            {
                typed
                    .attrs
                    .push(syn::parse_quote!(#[allow(unused_variables)]));
            }
        }
    }
    body_fn
}

/// `Deref` from the unit struct to a function pointer that calls the body, so the tool
/// stays callable as the function it was written as.
pub(in crate::tool) fn direct_call(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let ident = plan.ident;
    let ret = &plan.ret;
    let body_ident = &plan.body_ident;
    let call_idents = &plan.call_idents;
    // A `&Ctx` (or `&Call`) parameter lends the future its lifetime; without one the
    // future owns everything.
    let pointer_inputs = plan.tool.params.iter().map(|param| {
        match (param.ctx.is_some() || param.call.is_some(), &*param.ty) {
            (true, Type::Reference(reference)) => {
                let elem = &reference.elem;
                quote!(&'__fusion_ctx #elem)
            }
            _ => {
                let ty = &param.ty;
                quote!(#ty)
            }
        }
    });
    let pointer_type = if plan.ctx_type.is_some() || plan.has_call {
        quote!(for<'__fusion_ctx> fn(#(#pointer_inputs),*) -> #private::CallFuture<'__fusion_ctx, #ret>)
    } else {
        quote!(fn(#(#pointer_inputs),*) -> #private::CallFuture<'static, #ret>)
    };
    // Spanned at the signature, so a body whose future is not `Send` is reported there.
    let call = quote_spanned! {plan.tool.item.sig.span()=>
        const __FUSION_CALL: #pointer_type =
            |#(#call_idents),*| #private::boxed_call(#body_ident(#(#call_idents),*));
    };
    quote! {
        impl ::core::ops::Deref for #ident {
            type Target = #pointer_type;
            fn deref(&self) -> &Self::Target {
                #call
                &__FUSION_CALL
            }
        }
    }
}

/// `__fusion_invoke`: from decoded arguments to the rendered outcome. It runs the
/// `validate = ..` checks, then the body, then renders its value (through the presenter,
/// when there is one).
pub(super) fn invoker(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let args_ident = &plan.args_ident;
    let ret = &plan.ret;
    let arg_idents = plan.arg_params.iter().map(|param| &param.ident);
    let param_idents = plan.arg_params.iter().map(|param| &param.ident);
    let aliases = &plan.arg_aliases;
    let context = plan.context();
    let generics = if plan.ctx_type.is_some() {
        quote!(<'__fusion_a>)
    } else {
        quote!(<'__fusion_a, __FusionC: ::core::marker::Send + ::core::marker::Sync + 'static>)
    };
    let call_binding = if plan.has_call {
        quote!(__fusion_call)
    } else {
        quote!(_)
    };
    let custom_checks = custom_checks(plan);
    let body_ident = &plan.body_ident;
    let call_idents = &plan.call_idents;
    let body_call = quote!(#body_ident(#(#call_idents),*).await);
    let render = match &plan.attrs().presenter {
        Some(presenter) => {
            let present = quote_spanned!(presenter.span()=> #private::present(&#presenter, __fusion_value, __fusion_ctx));
            quote!(#private::render_presented!(#ret, #body_call, |__fusion_value| #present))
        }
        None => quote!(#private::render_outcome!(#ret, #body_call)),
    };
    quote! {
        fn __fusion_invoke #generics (
            __fusion_ctx: &'__fusion_a #context,
            #call_binding: &'__fusion_a #private::Call,
            __fusion_args: #args_ident,
        ) -> #private::BoxFuture<'__fusion_a, #private::Outcome> {
            let #args_ident { #(#arg_idents),* } = __fusion_args;
            #(let #param_idents = <#aliases as #private::ArgType>::param(#param_idents);)*
            #custom_checks
            #private::boxed(async move {
                #render
            })
        }
    }
}

/// The `validate = path` checks, run on the decoded arguments before the body; all of
/// them run, and their issues are answered together.
fn custom_checks(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let checks: Vec<TokenStream> = plan
        .arg_params
        .iter()
        .flat_map(|param| {
            let ident = &param.ident;
            let name = unraw(ident);
            param.constraints.validators().map(
                move |path| quote!(#private::custom_check(&#ident, #name, #path, __fusion_issues);),
            )
        })
        .collect();
    if checks.is_empty() {
        return TokenStream::new();
    }
    quote! {
        if let ::core::option::Option::Some(__fusion_failure) =
            #private::run_custom_checks(|__fusion_issues| { #(#checks)* })
        {
            return #private::boxed(async move { __fusion_failure });
        }
    }
}
