//! Code generation for a valid `#[mcp_tool]` function. Reports no errors: `valid.rs` has
//! checked everything this file assumes.
//!
//! The function becomes a unit struct of the same name that
//! - implements `Tool<C>` (what `.tool(add)` registers), and
//! - dereferences to a function pointer to the original body, so `add(2, 3).await` still
//!   works: a call expression auto-dereferences its callee.
//!
//! The generated code is small: an argument struct (derives do the decoding and the
//! schema), the body, and calls into `__private` helpers that own everything else.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Ident, LitStr, ReturnType, Type, spanned::Spanned as _};

use super::parse::{Flag, ToolFn};

pub(crate) fn expand(tool: &ToolFn) -> TokenStream {
    let private = crate::krate::private(tool.attrs.krate.as_ref());
    let item = &tool.item;
    let vis = &item.vis;
    let ident = &item.sig.ident;
    let body_ident = format_ident!("__fusion_body");
    let args_ident = format_ident!("__FusionArgs");

    // The unit struct keeps the function's docs and visibility.
    let docs: Vec<_> = item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .collect();
    let other_attrs: Vec<_> = item
        .attrs
        .iter()
        .filter(|attr| !attr.path().is_ident("doc"))
        .collect();
    let description = tool
        .attrs
        .description
        .as_ref()
        .map(LitStr::value)
        .or_else(|| tool.doc.clone())
        .unwrap_or_default();
    let struct_doc = if docs.is_empty() {
        quote!(#[doc = #description])
    } else {
        quote!(#(#docs)*)
    };
    let name = tool
        .attrs
        .name
        .as_ref()
        .map(LitStr::value)
        .unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_owned());

    let ret: Type = match &item.sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => (**ty).clone(),
    };

    // Parameters: the context (at most one) and the arguments, in the user's order.
    let ctx_param = tool.params.iter().find(|param| param.ctx.is_some());
    let ctx_type = ctx_param.and_then(|param| match &*param.ty {
        Type::Reference(reference) => Some((*reference.elem).clone()),
        _ => None,
    });
    let has_call = tool.params.iter().any(|param| param.call.is_some());
    let arg_params: Vec<_> = tool
        .params
        .iter()
        .filter(|param| param.ctx.is_none() && param.call.is_none())
        .collect();
    let arg_idents: Vec<&Ident> = arg_params.iter().map(|param| &param.ident).collect();
    let call_idents: Vec<Ident> = tool
        .params
        .iter()
        .map(|param| {
            if param.ctx.is_some() {
                format_ident!("__fusion_ctx")
            } else if param.call.is_some() {
                format_ident!("__fusion_call")
            } else {
                param.ident.clone()
            }
        })
        .collect();

    let constraint_code: Vec<_> = arg_params
        .iter()
        .map(|param| {
            crate::constraint::field_code(
                &private,
                &args_ident,
                &param.ident,
                &param.ty,
                &param.constraints,
            )
        })
        .collect();
    let fields = arg_params
        .iter()
        .zip(&constraint_code)
        .map(|(param, code)| {
            let docs = &param.docs;
            let field_attrs = &param.field_attrs;
            let constraint_attrs = &code.attrs;
            let ident = &param.ident;
            let ty = &param.ty;
            quote!(#(#docs)* #(#field_attrs)* #constraint_attrs #ident: #ty,)
        });
    let constraint_methods = constraint_code.iter().map(|code| &code.methods);
    let constraint_checks = constraint_code.iter().map(|code| &code.checks);
    // `validate = path` checks run on the decoded arguments, before the body.
    let custom_checks: Vec<TokenStream> = arg_params
        .iter()
        .flat_map(|param| {
            let ident = &param.ident;
            let name = ident.to_string().trim_start_matches("r#").to_owned();
            let private = &private;
            param.constraints.validators().map(
                move |path| quote!(#private::custom_check(&#ident, #name, #path, __fusion_issues);),
            )
        })
        .collect();
    let run_custom_checks = if custom_checks.is_empty() {
        quote!()
    } else {
        quote! {
            if let ::core::option::Option::Some(__fusion_failure) =
                #private::run_custom_checks(|__fusion_issues| { #(#custom_checks)* })
            {
                return #private::boxed(async move { __fusion_failure });
            }
        }
    };
    // rustc reports a parameter type that cannot be decoded here, at the user's type.
    let argument_checks = arg_params.iter().map(|param| {
        let ty = &param.ty;
        quote_spanned!(ty.span()=> #private::assert_argument::<#ty>();)
    });
    let serde_crate = crate::krate::reexport(&private, "serde");
    let schemars_crate = crate::krate::reexport(&private, "schemars");

    // The body, as written, under a hidden name.
    let mut body_fn = item.clone();
    body_fn.sig.ident = body_ident.clone();
    body_fn.vis = syn::Visibility::Inherited;
    body_fn.attrs = other_attrs.into_iter().cloned().collect();
    // A tool takes one parameter per argument, and that may be many.
    body_fn
        .attrs
        .push(syn::parse_quote!(#[allow(clippy::too_many_arguments)]));

    // The function-pointer type the struct dereferences to. A `&Ctx` parameter lends the
    // future its lifetime; without one the future owns everything.
    let pointer_inputs = tool.params.iter().map(|param| {
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
    let pointer_type = if ctx_type.is_some() || has_call {
        quote!(for<'__fusion_ctx> fn(#(#pointer_inputs),*) -> #private::CallFuture<'__fusion_ctx, #ret>)
    } else {
        quote!(fn(#(#pointer_inputs),*) -> #private::CallFuture<'static, #ret>)
    };
    let sig_span = item.sig.span();
    let direct_call = quote_spanned! {sig_span=>
        const __FUSION_CALL: #pointer_type =
            |#(#call_idents),*| #private::boxed_call(#body_ident(#(#call_idents),*));
    };

    let duration = |millis: u64| quote!(::core::time::Duration::from_millis(#millis));
    let policy = {
        let timeout = match tool.attrs.timeout {
            Some(timeout) => {
                let limit = duration(timeout.millis);
                quote!(::core::option::Option::Some(#limit))
            }
            None => quote!(::core::option::Option::None),
        };
        let retry = match &tool.attrs.retry {
            Some(retry) => {
                let attempts = retry.attempts.map_or(1, |(n, _)| n);
                let backoff = duration(retry.backoff.map_or(100, |b| b.millis));
                let max_backoff = duration(retry.max_backoff.map_or(30_000, |b| b.millis));
                quote!(::core::option::Option::Some(#private::RetryPolicy {
                    attempts: #attempts,
                    backoff: #backoff,
                    max_backoff: #max_backoff,
                }))
            }
            None => quote!(::core::option::Option::None),
        };
        let circuit = match &tool.attrs.circuit {
            Some(circuit) => {
                let failures = circuit.failures.map_or(5, |(n, _)| n);
                let window = duration(circuit.window.map_or(30_000, |w| w.millis));
                let cooldown = duration(circuit.cooldown.map_or(10_000, |c| c.millis));
                quote!(::core::option::Option::Some(#private::CircuitPolicy {
                    failures: #failures,
                    window: #window,
                    cooldown: #cooldown,
                }))
            }
            None => quote!(::core::option::Option::None),
        };
        quote!(#private::Policy { timeout: #timeout, retry: #retry, circuit: #circuit })
    };
    let group = option_lit(tool.attrs.group.as_ref());
    // A handler in a group is an action; its name in the group defaults to the function's.
    let action = match (&tool.attrs.group, &tool.attrs.action) {
        (Some(_), Some(action)) => option_lit(Some(action)),
        (Some(_), None) => {
            let default = LitStr::new(&name, ident.span());
            option_lit(Some(&default))
        }
        (None, _) => option_lit(None),
    };
    let idempotency_key = option_lit(tool.attrs.idempotency_key.as_ref());
    let spec = {
        let title = option_lit(tool.attrs.title.as_ref());
        let read_only = option_flag(tool.attrs.read_only);
        let destructive = option_flag(tool.attrs.destructive);
        let idempotent = option_flag(tool.attrs.idempotent);
        let open_world = option_flag(tool.attrs.open_world);
        quote! {
            #private::ToolSpec {
                name: #name,
                description: #description,
                title: #title,
                annotations: #private::Annotations {
                    read_only: #read_only,
                    destructive: #destructive,
                    idempotent: #idempotent,
                    open_world: #open_world,
                },
                policy: #policy,
                group: #group,
                action: #action,
                idempotency_key: #idempotency_key,
            }
        }
    };

    let (impl_generics, context, ctx_binding) = match &ctx_type {
        Some(ty) => (quote!(), quote!(#ty), quote!(__fusion_ctx)),
        None => (
            quote!(<__FusionC: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(__FusionC),
            quote!(__fusion_ctx),
        ),
    };
    let reconnect = tool.attrs.reconnect.as_ref().map(|field| {
        // Spanned at the field, so "does not implement `Reconnect`" points at its name.
        let call = quote_spanned!(field.span()=> #private::reconnect(&__fusion_ctx.#field));
        quote! {
            .with_reconnect(|__fusion_ctx: &#context| #call)
        }
    });
    let body_call = quote!(#body_ident(#(#call_idents),*).await);
    let render = match &tool.attrs.presenter {
        Some(presenter) => {
            let present = quote_spanned!(presenter.span()=> #private::present(&#presenter, __fusion_value, __fusion_ctx));
            quote!(#private::render_presented!(#ret, #body_call, |__fusion_value| #present))
        }
        None => quote!(#private::render_outcome!(#ret, #body_call)),
    };
    let call_binding = if has_call {
        quote!(__fusion_call)
    } else {
        quote!(_)
    };
    let invoke_generics = if ctx_type.is_some() {
        quote!(<'__fusion_a>)
    } else {
        quote!(<'__fusion_a, __FusionC: ::core::marker::Send + ::core::marker::Sync + 'static>)
    };
    let invoke_turbofish = if ctx_type.is_some() {
        quote!()
    } else {
        quote!(::<__FusionC>)
    };

    // A parameter named like the tool itself would be read as the unit struct in a
    // pattern ("`name` is interpreted as a unit struct"); a function item of that name in
    // the generated block shadows the struct's value, and bindings may shadow functions.
    let shadow = tool
        .params
        .iter()
        .any(|param| param.ident == *ident)
        .then(|| quote!(#[allow(dead_code)] fn #ident() {}));

    quote! {
        #struct_doc
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;

        const _: () = {
            #shadow
            #(#argument_checks)*
            #(#constraint_checks)*

            #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
            #[serde(crate = #serde_crate, deny_unknown_fields)]
            #[schemars(crate = #schemars_crate)]
            struct #args_ident {
                #(#fields)*
            }

            impl #args_ident {
                #(#constraint_methods)*
            }

            #body_fn

            impl ::core::ops::Deref for #ident {
                type Target = #pointer_type;
                fn deref(&self) -> &Self::Target {
                    #direct_call
                    &__FUSION_CALL
                }
            }

            fn __fusion_invoke #invoke_generics (
                #ctx_binding: &'__fusion_a #context,
                #call_binding: &'__fusion_a #private::Call,
                __fusion_args: #args_ident,
            ) -> #private::BoxFuture<'__fusion_a, #private::Outcome> {
                let #args_ident { #(#arg_idents),* } = __fusion_args;
                #run_custom_checks
                #private::boxed(async move {
                    #render
                })
            }

            impl #impl_generics #private::Tool<#context> for #ident {
                fn definition(&self) -> #private::ToolDefinition<#context> {
                    #private::ToolDefinition::new::<#args_ident, _>(
                        #spec,
                        #private::output_schema!(#ret),
                        __fusion_invoke #invoke_turbofish,
                    )
                    #reconnect
                }
            }
        };
    }
}

fn option_lit(value: Option<&LitStr>) -> TokenStream {
    match value {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    }
}

fn option_flag(flag: Option<Flag>) -> TokenStream {
    match flag {
        Some(Flag { value, .. }) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}
