//! Code generation for a valid `#[mcp_tool]` function. Reports no errors: `valid.rs` has
//! checked everything this file assumes.
//!
//! The function becomes a unit struct of the same name that
//! - implements `Tool<C>` (what `.tool(add)` registers), and
//! - dereferences to a function pointer to the original body, so `add(2, 3).await` still
//!   works: a call expression auto-dereferences its callee.
//!
//! The generated code is small: an argument struct (decoded and described field by field
//! from constant data, or by serde's and schemars' derives when a parameter carries their
//! attributes), the body, and calls into `__private` helpers that own everything else. Each
//! part has its own function below, in the order the parts appear in the output:
//! [`unit_struct`], [`type_checks`], [`args_struct`], [`body_fn`], [`direct_call`],
//! [`invoker`] and [`tool_impl`], which carries the [`descriptor`] (with its
//! [`annotations`] and [`policy`]).

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{Attribute, Ident, ItemFn, LitStr, ReturnType, Type, spanned::Spanned as _};

use super::{
    parse::{CircuitAttr, Param, Retry, ToolAttrs, ToolFn},
    value::{Flag, Millis},
};
use crate::{constraint::FieldCode, krate};

/// The generated struct that holds the decoded arguments.
const ARGS: &str = "__FusionArgs";
/// The user's function, renamed.
const BODY: &str = "__fusion_body";

pub(crate) fn expand(tool: &ToolFn) -> TokenStream {
    let plan = Plan::new(tool);
    let unit_struct = unit_struct(&plan);
    let shadow = shadow(&plan);
    let type_checks = type_checks(&plan);
    let args_struct = args_struct(&plan);
    let body_fn = body_fn(&plan);
    let direct_call = direct_call(&plan);
    let invoker = invoker(&plan);
    let tool_impl = tool_impl(&plan);
    quote! {
        #unit_struct

        const _: () = {
            #shadow
            #type_checks
            #args_struct
            #body_fn
            #direct_call
            #invoker
            #tool_impl
        };
    }
}

/// What several parts need, worked out once from the parsed function.
pub(super) struct Plan<'a> {
    pub(super) tool: &'a ToolFn,
    /// `<crate>::__private`.
    pub(super) private: TokenStream,
    /// The function's name, which the unit struct takes over.
    pub(super) ident: &'a Ident,
    args_ident: Ident,
    pub(super) body_ident: Ident,
    /// The tool's name on the wire.
    name: String,
    /// The return type (`()` when none is written).
    ret: Type,
    /// The type behind the `#[ctx]` reference, when there is one.
    ctx_type: Option<Type>,
    has_call: bool,
    /// The parameters decoded from the call's arguments, in the user's order.
    arg_params: Vec<&'a Param>,
    /// For each of them, the alias of its `Arg<type, is-a-tool-argument>`: its field in the
    /// argument struct has the type `<alias as ArgType>::Field` (see [`type_checks`]).
    arg_aliases: Vec<Ident>,
    /// What each parameter is called when the body is invoked: the arguments keep their
    /// names; the context and the request get hidden ones.
    call_idents: Vec<Ident>,
    /// The code of each argument's `#[arg(..)]` constraints, in `arg_params`' order.
    constraint_code: Vec<FieldCode>,
    /// Whether the arguments are decoded field by field (no parameter carries a
    /// `#[serde]`, `#[schemars]` or schema-changing `#[arg]` attribute), rather than by
    /// serde's and schemars' derives: see [`args_struct`].
    by_field: bool,
}

impl<'a> Plan<'a> {
    pub(super) fn new(tool: &'a ToolFn) -> Self {
        let private = krate::private(tool.attrs.krate.as_ref());
        let item = &tool.item;
        let ident = &item.sig.ident;
        let args_ident = format_ident!("{ARGS}");
        let name = tool
            .attrs
            .name
            .as_ref()
            .map(LitStr::value)
            .unwrap_or_else(|| unraw(ident));
        let ret = match &item.sig.output {
            ReturnType::Default => syn::parse_quote!(()),
            ReturnType::Type(_, ty) => (**ty).clone(),
        };
        let ctx_type = tool
            .params
            .iter()
            .find(|param| param.ctx.is_some())
            .and_then(|param| match &*param.ty {
                Type::Reference(reference) => Some((*reference.elem).clone()),
                _ => None,
            });
        let arg_params: Vec<&Param> = tool
            .params
            .iter()
            .filter(|param| param.ctx.is_none() && param.call.is_none())
            .collect();
        let call_idents = tool
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
        let arg_aliases: Vec<Ident> = (0..arg_params.len())
            .map(|index| format_ident!("__FusionArg{index}"))
            .collect();
        let constraint_code = arg_params
            .iter()
            .zip(&arg_aliases)
            .map(|(param, alias)| {
                crate::constraint::field_code(
                    &private,
                    &args_ident,
                    &param.ident,
                    &param.ty,
                    &param.constraints,
                    Some(alias),
                )
            })
            .collect::<Vec<FieldCode>>();
        // Schema constraints go into the field's constant data; a default (a serde
        // attribute and a method) or a `#[serde]`/`#[schemars]` attribute keeps the derives.
        let by_field = arg_params
            .iter()
            .zip(&constraint_code)
            .all(|(param, code)| param.field_attrs.is_empty() && code.methods.is_empty());
        Plan {
            tool,
            private,
            ident,
            args_ident,
            body_ident: format_ident!("{BODY}"),
            name,
            ret,
            ctx_type,
            has_call: tool.params.iter().any(|param| param.call.is_some()),
            arg_params,
            arg_aliases,
            call_idents,
            constraint_code,
            by_field,
        }
    }

    fn attrs(&self) -> &'a ToolAttrs {
        &self.tool.attrs
    }

    /// `description = ".."`, else the doc comment (`valid.rs` requires one of them).
    fn description(&self) -> String {
        self.attrs()
            .description
            .as_ref()
            .map(LitStr::value)
            .or_else(|| self.tool.doc.clone())
            .unwrap_or_default()
    }

    /// The context type of the `Tool<C>` impl: the `#[ctx]` type, or any `C` when the tool
    /// takes no context.
    fn context(&self) -> TokenStream {
        match &self.ctx_type {
            Some(ty) => quote!(#ty),
            None => quote!(__FusionC),
        }
    }
}

/// The unit struct that stands for the tool, with the function's docs and visibility.
/// No `Default`: the struct's value is its name, and every impl is checked once per tool
/// (issue 32: `cargo check` of a 50-tool crate spent 4% on the unused `Default`s).
pub(super) fn unit_struct(plan: &Plan<'_>) -> TokenStream {
    let item = &plan.tool.item;
    let docs: Vec<&Attribute> = item.attrs.iter().filter(|attr| is_doc(attr)).collect();
    let struct_doc = if docs.is_empty() {
        let description = plan.description();
        quote!(#[doc = #description])
    } else {
        quote!(#(#docs)*)
    };
    let vis = &item.vis;
    let ident = plan.ident;
    quote! {
        #struct_doc
        #[allow(non_camel_case_types)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug)]
        #vis struct #ident;
    }
}

/// A parameter named like the tool itself would be read as the unit struct in a pattern
/// ("`name` is interpreted as a unit struct"); a function item of that name in the
/// generated block shadows the struct's value, and bindings may shadow functions.
pub(super) fn shadow(plan: &Plan<'_>) -> Option<TokenStream> {
    let ident = plan.ident;
    plan.tool
        .params
        .iter()
        .any(|param| param.ident == *ident)
        .then(|| quote!(#[allow(dead_code)] fn #ident() {}))
}

/// rustc's checks, each spanned at the user's token: that every argument type can be
/// decoded, and that it can carry its `#[arg(..)]` constraints.
///
/// A type that cannot be decoded gets one error, this check's, and no more: its field in
/// the argument struct is `<Arg<T, OK> as ArgType>::Field`, where `OK` says at compile time
/// whether `T` is a tool argument, and the field is a stand-in that derives cleanly when it
/// is not (the runtime's `argument.rs` says how).
fn type_checks(plan: &Plan<'_>) -> TokenStream {
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
fn args_struct(plan: &Plan<'_>) -> TokenStream {
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

/// The body, as written, under a hidden name. Its attributes other than the docs stay on
/// it (`#[allow]`, `#[cfg_attr]`, `#[tracing::instrument]`), since they are about the code.
pub(super) fn body_fn(plan: &Plan<'_>) -> ItemFn {
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
pub(super) fn direct_call(plan: &Plan<'_>) -> TokenStream {
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
fn invoker(plan: &Plan<'_>) -> TokenStream {
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

/// `impl Tool<C>`: the definition the server registers, with the reconnect hook when the
/// tool names one.
fn tool_impl(plan: &Plan<'_>) -> TokenStream {
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
    let cache = super::cache::spec_fields(private, &attrs.cache);
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

fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident(crate::symbol::DOC)
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

/// An identifier as the wire spells it: `r#type` is `type`.
fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}
