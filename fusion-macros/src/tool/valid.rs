//! Every rule of `#[mcp_tool]` that relates parts of the function to each other. All
//! violations are recorded; none stops the others from being checked.

use syn::{FnArg, ReturnType, Type};

use super::parse::ToolFn;
use crate::ctxt::Ctxt;

/// MCP's tool-name rule: 1–128 characters of `A-Za-z0-9_-.`.
const MAX_NAME_LEN: usize = 128;

/// A tool function that passed every check: only [`check`] makes one, and expansion
/// (`expand/`) takes nothing else, so "expansion assumes a valid tool" is a type, not a
/// convention.
pub(super) struct Valid<'a>(&'a ToolFn);

impl<'a> Valid<'a> {
    /// The checked function.
    pub(super) fn tool(&self) -> &'a ToolFn {
        self.0
    }
}

/// Checks every rule, records each violation in `cx` (the parse's too), and gives the tool
/// back as [`Valid`] when there is none; otherwise every error, together.
pub(super) fn check(tool: &ToolFn, mut cx: Ctxt) -> syn::Result<Valid<'_>> {
    check_signature(tool, &mut cx);
    check_params(tool, &mut cx);
    check_name(tool, &mut cx);
    check_description(tool, &mut cx);
    check_hints(tool, &mut cx);
    check_policy(tool, &mut cx);
    check_group(tool, &mut cx);
    check_repeat_safety(tool, &mut cx);
    let attrs = &tool.attrs;
    super::cache::check(&attrs.cache, attrs.read_only, attrs.idempotent, &mut cx);
    cx.check()?;
    Ok(Valid(tool))
}

fn check_signature(tool: &ToolFn, cx: &mut Ctxt) {
    let sig = &tool.item.sig;
    if sig.asyncness.is_none() {
        cx.error_spanned_by(
            sig.fn_token,
            "`#[mcp_tool]` needs an `async fn`; add `async` before `fn`",
        );
    }
    if let Some(constness) = &sig.constness {
        cx.error_spanned_by(constness, "a tool cannot be a `const fn`; remove `const`");
    }
    if let Some(unsafety) = &sig.unsafety {
        cx.error_spanned_by(
            unsafety,
            "a tool cannot be an `unsafe fn`: clients call it with any arguments; remove `unsafe` and keep the unsafe block inside",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a tool cannot declare an ABI; remove the `extern`");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool cannot be variadic");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool cannot be generic: its schema is generated from concrete parameter types; replace the type parameters with concrete types",
        );
    }
    if let ReturnType::Type(_, ty) = &sig.output
        && contains_impl_trait(ty)
    {
        cx.error_spanned_by(
            ty,
            "a tool cannot return `impl Trait`: the macro must name the type to render it; return a concrete type such as `String` or a struct that derives `Serialize` and `JsonSchema`",
        );
    }
}

fn check_params(tool: &ToolFn, cx: &mut Ctxt) {
    for input in &tool.item.sig.inputs {
        if let FnArg::Receiver(receiver) = input {
            cx.error_spanned_by(
                receiver,
                "a tool is a free function, so it cannot take `self`; move it out of the `impl` block and pass shared state through a `#[ctx]` parameter",
            );
        }
    }
    let mut seen_ctx = false;
    let mut seen_call = false;
    for param in &tool.params {
        if let Some(attr) = &param.call {
            if seen_call {
                cx.error_spanned_by(
                    attr,
                    "only one parameter can be `#[call]`: a tool serves one request at a time",
                );
            }
            seen_call = true;
            if param.ctx.is_some() {
                cx.error_spanned_by(attr, "a parameter is either the context (`#[ctx]`) or the request (`#[call]`), not both");
            }
            if let Some(arg) = &param.arg_attr {
                cx.error_spanned_by(arg, "`#[arg(..)]` constrains an argument, and a `#[call]` parameter is not one; remove it");
            }
            if !matches!(&*param.ty, Type::Reference(reference) if reference.mutability.is_none() && reference.lifetime.is_none())
            {
                cx.error_spanned_by(
                    &param.ty,
                    "a `#[call]` parameter is a shared reference: write `#[call] call: &Call`",
                );
            }
            continue;
        }
        crate::constraint::check(&param.constraints, cx);
        if let (Some(_), Some(arg)) = (&param.ctx, &param.arg_attr) {
            cx.error_spanned_by(
                arg,
                "`#[arg(..)]` constrains an argument, and a `#[ctx]` parameter is not one; remove it",
            );
        }
        if contains_impl_trait(&param.ty) {
            cx.error_spanned_by(
                &param.ty,
                "a tool parameter cannot be `impl Trait`: its schema is generated from a concrete type; use a concrete type",
            );
            continue;
        }
        match &param.ctx {
            Some(attr) => {
                if seen_ctx {
                    cx.error_spanned_by(
                        attr,
                        "only one parameter can be `#[ctx]`: a call has one context; put what you need into the context type",
                    );
                }
                seen_ctx = true;
                match &*param.ty {
                    Type::Reference(reference) if reference.mutability.is_none() && reference.lifetime.is_none() => {}
                    Type::Reference(reference) if reference.mutability.is_some() => cx.error_spanned_by(
                        &param.ty,
                        "a `#[ctx]` parameter must be a shared reference such as `&App`, not `&mut`: use interior mutability (a `Mutex`, an atomic) for state that changes",
                    ),
                    Type::Reference(reference) => cx.error_spanned_by(
                        &reference.lifetime,
                        "a `#[ctx]` parameter takes no named lifetime; write `&App`",
                    ),
                    other => cx.error_spanned_by(
                        other,
                        "a `#[ctx]` parameter must be a shared reference to the context type, e.g. `#[ctx] app: &App`",
                    ),
                }
            }
            None => {
                if let Type::Reference(reference) = &*param.ty {
                    cx.error_spanned_by(
                        reference,
                        "a tool parameter is decoded from the call's JSON arguments, so it must own its data: use `String` instead of `&str`, `Vec<T>` instead of `&[T]`; mark the context parameter `#[ctx]`",
                    );
                }
            }
        }
    }
}

fn check_group(tool: &ToolFn, cx: &mut Ctxt) {
    let attrs = &tool.attrs;
    if let (Some(action), None) = (&attrs.action, &attrs.group) {
        cx.error_spanned_by(
            action,
            "an `action` belongs to a group: add `group = \"...\"` (the tool the action is part of)",
        );
    }
    for (key, value) in [("group", &attrs.group), ("action", &attrs.action)] {
        if let Some(value) = value
            && !valid_name(&value.value())
        {
            cx.error_spanned_by(
                value,
                format!(
                    "`{}` is not a valid {key} name: use 1 to {MAX_NAME_LEN} characters of `A-Z a-z 0-9 _ - .`",
                    value.value()
                ),
            );
        }
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

fn check_name(tool: &ToolFn, cx: &mut Ctxt) {
    let (name, span) = match &tool.attrs.name {
        Some(name) => (name.value(), name.span()),
        None => {
            let ident = &tool.item.sig.ident;
            (
                ident.to_string().trim_start_matches("r#").to_owned(),
                ident.span(),
            )
        }
    };
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if name.is_empty() || name.len() > MAX_NAME_LEN || !valid_chars {
        let advice = if tool.attrs.name.is_some() {
            "change `name = \"...\"`"
        } else {
            "set another with `#[mcp_tool(name = \"...\")]`"
        };
        cx.error_at(
            span,
            format!(
                "`{name}` is not a valid MCP tool name: use 1 to {MAX_NAME_LEN} characters of `A-Z a-z 0-9 _ - .`; {advice}"
            ),
        );
    }
}

fn check_description(tool: &ToolFn, cx: &mut Ctxt) {
    match &tool.attrs.description {
        Some(description) if description.value().trim().is_empty() => cx.error_spanned_by(
            description,
            "the description is empty; say what the tool does, the model reads it to decide when to call the tool",
        ),
        Some(_) => {}
        None if tool.doc.is_none() => cx.error_spanned_by(
            &tool.item.sig.ident,
            "a tool needs a description (clients reject tools without one): add a doc comment such as `/// Adds two numbers.` above the function, or `#[mcp_tool(description = \"...\")]`",
        ),
        None => {}
    }
}

fn check_policy(tool: &ToolFn, cx: &mut Ctxt) {
    let attrs = &tool.attrs;
    if let Some(timeout) = attrs.timeout
        && timeout.valid
        && timeout.millis == 0
    {
        cx.error_at(
            timeout.span,
            "a `timeout` of zero would stop every call; give a positive duration",
        );
    }
    if let Some(retry) = &attrs.retry {
        match retry.attempts {
            None => cx.error_spanned_by(&retry.key, "`retry(..)` needs `attempts = N`, the number of runs in all, e.g. `retry(attempts = 3)`"),
            Some((0, span)) => cx.error_at(span, "`attempts` counts runs in all, so it must be at least 1"),
            _ => {}
        }
        if let (Some(backoff), Some(max)) = (retry.backoff, retry.max_backoff)
            && backoff.millis > max.millis
        {
            cx.error_at(
                backoff.span,
                "`backoff` is longer than `max_backoff`; swap them",
            );
        }
    }
    if let Some(circuit) = &attrs.circuit {
        match circuit.failures {
            None => cx.error_spanned_by(&circuit.key, "`circuit(..)` needs `failures = N`, e.g. `circuit(failures = 5, window = \"30s\", cooldown = \"10s\")`"),
            Some((0, span)) => cx.error_at(span, "`failures` must be at least 1"),
            _ => {}
        }
    }
    if let Some(reconnect) = &attrs.reconnect {
        if !tool.params.iter().any(|param| param.ctx.is_some()) {
            cx.error_spanned_by(
                reconnect,
                "`reconnect = field` names a field of the tool's context, and this tool has no `#[ctx]` parameter; add one (`#[ctx] app: &App`)",
            );
        }
        if !matches!(reconnect, syn::Expr::Path(_) | syn::Expr::Field(_)) {
            cx.error_spanned_by(
                reconnect,
                "`reconnect` takes a field of the context, such as `db` or `clients.search`",
            );
        }
    }
}

fn check_repeat_safety(tool: &ToolFn, cx: &mut Ctxt) {
    let attrs = &tool.attrs;
    let destructive = attrs.destructive.is_some_and(|flag| flag.value);
    let idempotent = attrs.idempotent.is_some_and(|flag| flag.value);
    if let Some(retry) = &attrs.retry
        && destructive
        && !idempotent
    {
        cx.error_spanned_by(
            &retry.key,
            "a `destructive` tool that is not `idempotent` is never retried: running it again may repeat its effect; mark it `idempotent` if repeating is harmless, or drop `retry(..)`",
        );
    }
    if let Some(key) = &attrs.idempotency_key {
        check_names_argument(tool, key, "idempotency_key", "Option<String>", cx);
    }
    if let Some(key) = &attrs.serialize {
        check_names_argument(tool, key, "serialize", "String", cx);
    }
}

/// `key`, the value of the attribute key `what`, names an argument of the tool (not its
/// `#[ctx]` or `#[call]`): the runtime reads that argument's value from each call.
fn check_names_argument(
    tool: &ToolFn,
    key: &syn::LitStr,
    what: &str,
    example: &str,
    cx: &mut Ctxt,
) {
    let name = key.value();
    let found = tool.params.iter().any(|param| {
        param.ctx.is_none()
            && param.call.is_none()
            && param.ident.to_string().trim_start_matches("r#") == name
    });
    if !found {
        cx.error_spanned_by(
            key,
            format!("`{what}` names an argument of the tool, and there is no argument `{name}`; add one (e.g. `{name}: {example}`) or name an existing one"),
        );
    }
}

fn check_hints(tool: &ToolFn, cx: &mut Ctxt) {
    let attrs = &tool.attrs;
    if let (Some(read_only), Some(destructive)) = (attrs.read_only, attrs.destructive)
        && read_only.value
        && destructive.value
    {
        cx.error_at(
            destructive.span,
            "a tool cannot be both `read_only` and `destructive`: a read-only tool changes nothing; remove one",
        );
    }
}

fn contains_impl_trait(ty: &Type) -> bool {
    struct Finder(bool);
    impl<'ast> syn::visit::Visit<'ast> for Finder {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut finder = Finder(false);
    syn::visit::Visit::visit_type(&mut finder, ty);
    finder.0
}
