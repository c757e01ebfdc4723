//! `impl Tool<C>` ([`tool_impl`]): the definition the server registers, with its
//! descriptor (the `ToolSpec`: name, description, hints, policy, group, cache).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::{LitStr, spanned::Spanned as _};

use super::Plan;
use crate::tool::{
    parse::{CircuitAttr, Retry, ToolAttrs},
    value::{Flag, Millis},
};

/// `impl Tool<C>`: the definition the server registers, with the reconnect hook when the
/// tool names one.
pub(super) fn tool_impl(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let ident = plan.ident;
    let ret = &plan.ret;
    let args_ident = &plan.args_ident;
    let context = plan.context();
    let (impl_generics, invoke_turbofish) = if plan.ctx_type.is_some() {
        (quote!(), quote!())
    } else {
        (
            quote!(<__FusionC: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(::<__FusionC>),
        )
    };
    let descriptor = descriptor(plan);
    let reconnect = plan.attrs().reconnect.as_ref().map(|field| {
        // Spanned at the field, so "does not implement `Reconnect`" points at its name.
        let call = quote_spanned!(field.span()=> #private::reconnect(&__fusion_ctx.#field));
        quote! {
            .with_reconnect(|__fusion_ctx: &#context| #call)
        }
    });
    // Spanned at the return type, the path included: a type a tool cannot return is
    // reported there (the ladder's last rung, `RenderUnsupported`, asks for `ToolResult`).
    let output_schema = respanned(quote!(#private::output_schema!(#ret)), ret.span());
    let constructor = if plan.by_field {
        quote!(#private::field_definition::<#context, #args_ident, _>)
    } else {
        quote!(#private::ToolDefinition::new::<#args_ident, _>)
    };
    quote! {
        impl #impl_generics #private::Tool<#context> for #ident {
            fn definition(&self) -> #private::ToolDefinition<#context> {
                #constructor(
                    #descriptor,
                    #output_schema,
                    __fusion_invoke #invoke_turbofish,
                )
                #reconnect
            }
        }
    }
}

/// The `ToolSpec`: what `tools/list` shows and how calls are run.
fn descriptor(plan: &Plan<'_>) -> TokenStream {
    let private = &plan.private;
    let attrs = plan.attrs();
    let name = &plan.name;
    let description = plan.description();
    let title = option_lit(attrs.title.as_ref());
    let annotations = annotations(private, attrs);
    let policy = policy(private, attrs);
    let group = option_lit(attrs.group.as_ref());
    // A handler in a group is an action; its name in the group defaults to the tool's.
    let action = match (&attrs.group, &attrs.action) {
        (Some(_), Some(action)) => option_lit(Some(action)),
        (Some(_), None) => option_lit(Some(&LitStr::new(name, plan.ident.span()))),
        (None, _) => option_lit(None),
    };
    let idempotency_key = option_lit(attrs.idempotency_key.as_ref());
    let serialize = option_lit(attrs.serialize.as_ref());
    let scopes = attrs.scopes.iter().flatten();
    let tags = attrs.tags.iter().flatten();
    let trace_arguments = attrs.trace_arguments.is_some_and(|flag| flag.value);
    let max_output = match attrs.max_output {
        // The platform's `usize` holds any size a result can have; a larger one is no limit.
        Some(bytes) => {
            quote!(::core::option::Option::Some(::core::primitive::usize::try_from(#bytes).unwrap_or(::core::primitive::usize::MAX)))
        }
        None => quote!(::core::option::Option::None),
    };
    let cache = crate::tool::cache::spec_fields(private, &attrs.cache);
    quote! {
        #private::ToolSpec {
            name: #name,
            description: #description,
            title: #title,
            annotations: #annotations,
            policy: #policy,
            group: #group,
            action: #action,
            idempotency_key: #idempotency_key,
            serialize: #serialize,
            scopes: &[#(#scopes),*],
            tags: &[#(#tags),*],
            trace_arguments: #trace_arguments,
            max_output: #max_output,
            #cache
        }
    }
}

/// The behaviour hints, each `None` when unwritten: what an unset hint means is MCP's
/// rule, applied by the runtime.
fn annotations(private: &TokenStream, attrs: &ToolAttrs) -> TokenStream {
    let read_only = option_flag(attrs.read_only);
    let destructive = option_flag(attrs.destructive);
    let idempotent = option_flag(attrs.idempotent);
    let open_world = option_flag(attrs.open_world);
    quote! {
        #private::Annotations {
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            open_world: #open_world,
        }
    }
}

/// The tool's recovery policy: each part is `None` when unwritten, so the server's
/// policy (or the runtime's default timeout) applies.
fn policy(private: &TokenStream, attrs: &ToolAttrs) -> TokenStream {
    let timeout = option(attrs.timeout.map(duration));
    let heartbeat = option(attrs.heartbeat.map(duration));
    let task_after = option(attrs.task_after.map(duration));
    let retry = option(
        attrs
            .retry
            .as_ref()
            .map(|retry| retry_policy(private, retry)),
    );
    let circuit = option(
        attrs
            .circuit
            .as_ref()
            .map(|circuit| circuit_policy(private, circuit)),
    );
    quote!(#private::Policy { timeout: #timeout, retry: #retry, circuit: #circuit, heartbeat: #heartbeat, task_after: #task_after })
}

/// `retry(..)`: the runtime fills in what the attribute leaves out.
fn retry_policy(private: &TokenStream, retry: &Retry) -> TokenStream {
    let Some((attempts, _)) = retry.attempts else {
        unreachable!("`valid::check_policy` refuses `retry(..)` without `attempts`")
    };
    // The runtime owns the defaults of the parts the attribute leaves out.
    let backoff = option(retry.backoff.map(duration));
    let max_backoff = option(retry.max_backoff.map(duration));
    quote!(#private::RetryPolicy::from_attribute(#attempts, #backoff, #max_backoff))
}

/// `circuit(..)`: the runtime fills in what the attribute leaves out.
fn circuit_policy(private: &TokenStream, circuit: &CircuitAttr) -> TokenStream {
    let Some((failures, _)) = circuit.failures else {
        unreachable!("`valid::check_policy` refuses `circuit(..)` without `failures`")
    };
    // The runtime owns the defaults of the parts the attribute leaves out.
    let window = option(circuit.window.map(duration));
    let cooldown = option(circuit.cooldown.map(duration));
    quote!(#private::CircuitPolicy::from_attribute(#failures, #window, #cooldown))
}

fn duration(value: Millis) -> TokenStream {
    let millis = value.millis;
    quote!(::core::time::Duration::from_millis(#millis))
}

fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

fn option_lit(value: Option<&LitStr>) -> TokenStream {
    option(value.map(|text| quote!(#text)))
}

fn option_flag(flag: Option<Flag>) -> TokenStream {
    option(flag.map(|Flag { value, .. }| quote!(#value)))
}

/// `tokens` with every span set to `span`, so that an error in them is reported there and
/// only there (a macro call whose path is spanned elsewhere would underline both places).
fn respanned(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(group) = &tree {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respanned(group.stream(), span));
                inner.set_span(span);
                tree = proc_macro2::TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}
