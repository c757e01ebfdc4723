//! Code generation for a valid `#[mcp_tool]` function. Reports no errors: `valid.rs` has
//! checked everything this folder assumes.
//!
//! The function becomes a unit struct of the same name that
//! - implements `Tool<C>` (what `.tool(add)` registers), and
//! - dereferences to a function pointer to the original body, so `add(2, 3).await` still
//!   works: a call expression auto-dereferences its callee.
//!
//! The generated code is small: an argument struct (decoded and described field by field
//! from constant data, or by serde's and schemars' derives when a parameter carries their
//! attributes), the body, and calls into `__private` helpers that own everything else. Each
//! part has its own function, in the order the parts appear in the output:
//! - here, the [`unit_struct`];
//! - `args.rs`: [`type_checks`] and the [`args_struct`];
//! - `body.rs`: the [`body_fn`], the [`direct_call`] and the [`invoker`];
//! - `definition.rs`: [`tool_impl`], which carries the descriptor (the tool's `ToolSpec`,
//!   its hints and its policy).
//!
//! It takes a [`Valid`] tool, which only `valid.rs` makes: nothing here re-checks.

mod args;
mod body;
mod definition;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, Ident, LitStr, ReturnType, Type};

use super::{
    parse::{Param, ToolAttrs, ToolFn},
    valid::Valid,
};
use crate::{constraint::FieldCode, krate};
use args::{args_struct, type_checks};
use body::invoker;
pub(super) use body::{body_fn, direct_call};
use definition::tool_impl;

/// The generated struct that holds the decoded arguments.
const ARGS: &str = "__FusionArgs";
/// The user's function, renamed.
const BODY: &str = "__fusion_body";

pub(crate) fn expand(valid: &Valid<'_>) -> TokenStream {
    let plan = Plan::new(valid.tool());
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
    /// argument struct has the type `<alias as ArgType>::Field` (see `args.rs`).
    arg_aliases: Vec<Ident>,
    /// What each parameter is called when the body is invoked: the arguments keep their
    /// names; the context and the request get hidden ones.
    call_idents: Vec<Ident>,
    /// The code of each argument's `#[arg(..)]` constraints, in `arg_params`' order.
    constraint_code: Vec<FieldCode>,
    /// Whether the arguments are decoded field by field (no parameter carries a
    /// `#[serde]`, `#[schemars]` or schema-changing `#[arg]` attribute), rather than by
    /// serde's and schemars' derives: see `args.rs`.
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

fn is_doc(attr: &Attribute) -> bool {
    attr.path().is_ident(crate::symbol::DOC)
}

/// An identifier as the wire spells it: `r#type` is `type`.
fn unraw(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}
