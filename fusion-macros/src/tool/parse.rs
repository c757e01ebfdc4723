//! From tokens to the typed description of one tool; syntax errors only. The rules that
//! relate parts to each other live in `valid.rs`.

use proc_macro2::{Span, TokenStream};
use syn::{
    Attribute, FnArg, Ident, ItemFn, LitBool, LitStr, Pat, Path, Token, Type,
    meta::ParseNestedMeta, parse::Parser as _,
};

use super::value::{Flag, Millis, duration_value, set_once};
use crate::{ctxt::Ctxt, symbol};

/// The arguments of `#[mcp_tool(...)]`.
#[derive(Default)]
pub(crate) struct ToolAttrs {
    pub(crate) name: Option<LitStr>,
    pub(crate) description: Option<LitStr>,
    pub(crate) title: Option<LitStr>,
    pub(crate) read_only: Option<Flag>,
    pub(crate) destructive: Option<Flag>,
    pub(crate) idempotent: Option<Flag>,
    pub(crate) open_world: Option<Flag>,
    pub(crate) krate: Option<Path>,
    pub(crate) timeout: Option<Millis>,
    /// How long the call may run without progress before fusion sends one: `"0s"` never.
    pub(crate) heartbeat: Option<Millis>,
    /// How long the call may run before a client that declared tasks gets a task for it.
    pub(crate) task_after: Option<Millis>,
    pub(crate) retry: Option<Retry>,
    pub(crate) circuit: Option<CircuitAttr>,
    /// The context field (`db`, `clients.search`) to reconnect before a retry.
    pub(crate) reconnect: Option<syn::Expr>,
    pub(crate) group: Option<LitStr>,
    pub(crate) action: Option<LitStr>,
    /// A function presenting the success value: `fn(&T) -> Presentation` or
    /// `fn(&T, &Ctx) -> Presentation`.
    pub(crate) presenter: Option<Path>,
    /// The argument whose value deduplicates calls.
    pub(crate) idempotency_key: Option<LitStr>,
    /// The argument whose value serializes calls: one at a time per value.
    pub(crate) serialize: Option<LitStr>,
    /// The OAuth scopes a caller's token must grant: `scopes = ["db:write"]`.
    pub(crate) scopes: Option<Vec<LitStr>>,
    /// Labels for visibility rules and the contract: `tags = ["beta"]`.
    pub(crate) tags: Option<Vec<LitStr>>,
    /// Whether the call's span records its arguments (secrets redacted).
    pub(crate) trace_arguments: Option<Flag>,
    /// The most bytes the result may carry: `max_output = "64KiB"`.
    pub(crate) max_output: Option<u64>,
    /// `cache`, `cache_scope`, `stale_if_error` and `invalidates` (`cache.rs`).
    pub(crate) cache: super::cache::CacheAttrs,
}

/// `retry(attempts = 3, backoff = "10ms", max_backoff = "1s")`
pub(crate) struct Retry {
    pub(crate) key: syn::Ident,
    pub(crate) attempts: Option<(u32, Span)>,
    pub(crate) backoff: Option<Millis>,
    pub(crate) max_backoff: Option<Millis>,
}

/// `circuit(failures = 5, window = "30s", cooldown = "10s")`
pub(crate) struct CircuitAttr {
    pub(crate) key: syn::Ident,
    pub(crate) failures: Option<(u32, Span)>,
    pub(crate) window: Option<Millis>,
    pub(crate) cooldown: Option<Millis>,
}

/// One parameter of the function.
pub(crate) struct Param {
    pub(crate) ident: Ident,
    pub(crate) ty: Box<Type>,
    /// The `#[ctx]` attribute, when the parameter is the per-call context.
    pub(crate) ctx: Option<Attribute>,
    /// The `#[call]` attribute, when the parameter is the request being served.
    pub(crate) call: Option<Attribute>,
    /// `///` comments: the property's description.
    pub(crate) docs: Vec<Attribute>,
    /// `#[serde(..)]` and `#[schemars(..)]`: passed to the argument struct's field.
    pub(crate) field_attrs: Vec<Attribute>,
    /// `#[arg(..)]`: declared constraints.
    pub(crate) constraints: crate::constraint::Constraints,
    /// The first `#[arg]` attribute, for errors about its placement.
    pub(crate) arg_attr: Option<Attribute>,
}

/// A parsed `#[mcp_tool]` function.
pub(crate) struct ToolFn {
    pub(crate) attrs: ToolAttrs,
    /// The function as the user wrote it, minus the parameter attributes this macro owns.
    pub(crate) item: ItemFn,
    pub(crate) params: Vec<Param>,
    /// The doc comment, joined into one description.
    pub(crate) doc: Option<String>,
}

pub(crate) fn parse(attr: TokenStream, item: TokenStream, cx: &mut Ctxt) -> Option<ToolFn> {
    let attrs = parse_attrs(attr, cx);
    let mut item: ItemFn = match syn::parse2(item) {
        Ok(item) => item,
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "`#[mcp_tool]` goes on an `async fn`; put it on a function such as `async fn add(a: i64, b: i64) -> i64`",
            );
            return None;
        }
    };
    let mut params = Vec::new();
    for input in &mut item.sig.inputs {
        let FnArg::Typed(typed) = input else { continue };
        let (owned, kept): (Vec<Attribute>, Vec<Attribute>) =
            typed.attrs.drain(..).partition(|attr| {
                [
                    symbol::CTX,
                    symbol::CALL,
                    symbol::DOC,
                    symbol::SERDE,
                    symbol::SCHEMARS,
                    symbol::ARG,
                ]
                .iter()
                .any(|key| attr.path().is_ident(key))
            });
        typed.attrs = kept;
        let constraints = crate::constraint::parse_arg_attrs(&owned, cx);
        let arg_attr = owned
            .iter()
            .find(|attr| attr.path().is_ident(symbol::ARG))
            .cloned();
        let mut ctx = None;
        let mut call = None;
        let mut docs = Vec::new();
        let mut field_attrs = Vec::new();
        for attr in owned {
            if attr.path().is_ident(symbol::CTX) {
                if let Err(error) = attr.meta.require_path_only() {
                    cx.push(syn::Error::new(error.span(), "`#[ctx]` takes no arguments"));
                }
                if ctx.is_some() {
                    cx.error_spanned_by(
                        &attr,
                        "`#[ctx]` is written twice on this parameter; remove one",
                    );
                }
                ctx = Some(attr);
            } else if attr.path().is_ident(symbol::CALL) {
                if let Err(error) = attr.meta.require_path_only() {
                    cx.push(syn::Error::new(
                        error.span(),
                        "`#[call]` takes no arguments",
                    ));
                }
                call = Some(attr);
            } else if attr.path().is_ident(symbol::DOC) {
                docs.push(attr);
            } else if attr.path().is_ident(symbol::ARG) {
                // Parsed above into `constraints`.
            } else {
                field_attrs.push(attr);
            }
        }
        let ident = match &*typed.pat {
            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
            other => {
                cx.error_spanned_by(
                    other,
                    "a tool parameter needs a plain name (it becomes the argument's name in the schema); write `name: Type` and destructure inside the function",
                );
                continue;
            }
        };
        params.push(Param {
            ident,
            ty: typed.ty.clone(),
            ctx,
            call,
            docs,
            field_attrs,
            constraints,
            arg_attr,
        });
    }
    let doc = doc_text(&item.attrs);
    Some(ToolFn {
        attrs,
        item,
        params,
        doc,
    })
}

fn parse_attrs(attr: TokenStream, cx: &mut Ctxt) -> ToolAttrs {
    let mut attrs = ToolAttrs::default();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match key.as_str() {
            // name = "get_weather"
            symbol::NAME => set_once(cx, &meta, &mut attrs.name, string_value(&meta)?),
            // description = "What the tool does."
            symbol::DESCRIPTION => {
                set_once(cx, &meta, &mut attrs.description, string_value(&meta)?)
            }
            // title = "Weather"
            symbol::TITLE => set_once(cx, &meta, &mut attrs.title, string_value(&meta)?),
            // read_only | read_only = true | read_only = false (likewise the other hints)
            symbol::READ_ONLY => set_once(cx, &meta, &mut attrs.read_only, flag_value(&meta)?),
            symbol::DESTRUCTIVE => set_once(cx, &meta, &mut attrs.destructive, flag_value(&meta)?),
            symbol::IDEMPOTENT => set_once(cx, &meta, &mut attrs.idempotent, flag_value(&meta)?),
            symbol::OPEN_WORLD => set_once(cx, &meta, &mut attrs.open_world, flag_value(&meta)?),
            // trace_arguments | trace_arguments = true
            symbol::TRACE_ARGUMENTS => {
                set_once(cx, &meta, &mut attrs.trace_arguments, flag_value(&meta)?)
            }
            // max_output = "64KiB"
            symbol::MAX_OUTPUT => {
                let text: LitStr = meta.value()?.parse()?;
                match crate::size::parse_bytes(&text.value()) {
                    Some(bytes) => set_once(cx, &meta, &mut attrs.max_output, bytes),
                    None => cx.error_spanned_by(
                        &text,
                        format!(
                            "`{}` is not a size; {}",
                            text.value(),
                            crate::size::EXPECTED
                        ),
                    ),
                }
            }
            // timeout = "100ms"
            symbol::TIMEOUT => {
                let value = duration_value(&meta, cx)?;
                set_once(cx, &meta, &mut attrs.timeout, value);
            }
            // heartbeat = "5s" ("0s": none)
            symbol::HEARTBEAT => {
                let value = duration_value(&meta, cx)?;
                set_once(cx, &meta, &mut attrs.heartbeat, value);
            }
            // task_after = "20s"
            symbol::TASK_AFTER => {
                let value = duration_value(&meta, cx)?;
                set_once(cx, &meta, &mut attrs.task_after, value);
            }
            // retry(attempts = 3, backoff = "10ms", max_backoff = "1s")
            symbol::RETRY => {
                let key = meta
                    .path
                    .get_ident()
                    .cloned()
                    .unwrap_or_else(|| syn::Ident::new("retry", Span::call_site()));
                let mut retry = Retry {
                    key,
                    attempts: None,
                    backoff: None,
                    max_backoff: None,
                };
                meta.parse_nested_meta(|inner| {
                    if inner.path.is_ident(symbol::ATTEMPTS) {
                        retry.attempts = Some(count_value(&inner)?);
                    } else if inner.path.is_ident(symbol::BACKOFF) {
                        retry.backoff = Some(duration_value(&inner, cx)?);
                    } else if inner.path.is_ident(symbol::MAX_BACKOFF) {
                        retry.max_backoff = Some(duration_value(&inner, cx)?);
                    } else {
                        cx.error_spanned_by(
                            &inner.path,
                            "`retry(..)` takes `attempts = N`, `backoff = \"10ms\"` and `max_backoff = \"1s\"`",
                        );
                        skip_value(&inner)?;
                    }
                    Ok(())
                })?;
                set_once(cx, &meta, &mut attrs.retry, retry);
            }
            // circuit(failures = 5, window = "30s", cooldown = "10s")
            symbol::CIRCUIT => {
                let key = meta
                    .path
                    .get_ident()
                    .cloned()
                    .unwrap_or_else(|| syn::Ident::new("circuit", Span::call_site()));
                let mut circuit = CircuitAttr {
                    key,
                    failures: None,
                    window: None,
                    cooldown: None,
                };
                meta.parse_nested_meta(|inner| {
                    if inner.path.is_ident(symbol::FAILURES) {
                        circuit.failures = Some(count_value(&inner)?);
                    } else if inner.path.is_ident(symbol::WINDOW) {
                        circuit.window = Some(duration_value(&inner, cx)?);
                    } else if inner.path.is_ident(symbol::COOLDOWN) {
                        circuit.cooldown = Some(duration_value(&inner, cx)?);
                    } else {
                        cx.error_spanned_by(
                            &inner.path,
                            "`circuit(..)` takes `failures = N`, `window = \"30s\"` and `cooldown = \"10s\"`",
                        );
                        skip_value(&inner)?;
                    }
                    Ok(())
                })?;
                set_once(cx, &meta, &mut attrs.circuit, circuit);
            }
            // reconnect = field | reconnect = field.inner
            symbol::RECONNECT => {
                let expr: syn::Expr = meta.value()?.parse()?;
                set_once(cx, &meta, &mut attrs.reconnect, expr);
            }
            // group = "db_user"
            symbol::GROUP => set_once(cx, &meta, &mut attrs.group, string_value(&meta)?),
            // action = "find_many"
            symbol::ACTION => set_once(cx, &meta, &mut attrs.action, string_value(&meta)?),
            // presenter = path::to::present
            symbol::PRESENTER => {
                let path: Path = meta.value()?.parse()?;
                set_once(cx, &meta, &mut attrs.presenter, path);
            }
            // idempotency_key = "request_id"
            symbol::IDEMPOTENCY_KEY => {
                set_once(cx, &meta, &mut attrs.idempotency_key, string_value(&meta)?)
            }
            // serialize = "account"
            symbol::SERIALIZE => set_once(cx, &meta, &mut attrs.serialize, string_value(&meta)?),
            // scopes = ["db:read", "db:write"]
            symbol::SCOPES => {
                let value = scopes_value(&meta, cx)?;
                set_once(cx, &meta, &mut attrs.scopes, value);
            }
            // tags = ["beta", "billing"]
            symbol::TAGS => {
                let value = tags_value(&meta, cx)?;
                set_once(cx, &meta, &mut attrs.tags, value);
            }
            // cache = "30s", cache_scope = "public", stale_if_error = "10m", invalidates = [..]
            key if super::cache::parse_key(key, &meta, cx, &mut attrs.cache)? => {}
            // crate = "my::path" | crate = my::path
            symbol::CRATE => set_once(cx, &meta, &mut attrs.krate, crate::krate::parse(&meta)?),
            _ => {
                let shown = quote::ToTokens::to_token_stream(&meta.path)
                    .to_string()
                    .replace(' ', "");
                let suggestion = crate::ctxt::closest(&shown, symbol::TOOL_KEYS)
                    .map(|key| format!("did you mean `{key}`? "))
                    .unwrap_or_default();
                cx.error_spanned_by(
                    &meta.path,
                    format!(
                        "unknown `#[mcp_tool]` key `{shown}`; {suggestion}valid keys are: {}",
                        symbol::TOOL_KEYS
                            .iter()
                            .map(|key| format!("`{key}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
                skip_value(&meta)?;
            }
        }
        Ok(())
    });
    if let Err(error) = parser.parse2(attr) {
        cx.push(error);
    }
    attrs
}

fn count_value(meta: &ParseNestedMeta<'_>) -> syn::Result<(u32, Span)> {
    let lit: syn::LitInt = meta.value()?.parse()?;
    Ok((lit.base10_parse::<u32>()?, lit.span()))
}

/// `["db:read", "db:write"]`: string literals, each a scope token as OAuth defines it
/// (RFC 6749 §3.3: printable ASCII without spaces, `"` or `\`), none repeated.
fn scopes_value(meta: &ParseNestedMeta<'_>, cx: &mut Ctxt) -> syn::Result<Vec<LitStr>> {
    let list: syn::ExprArray = meta.value()?.parse()?;
    let mut scopes: Vec<LitStr> = Vec::new();
    for element in list.elems {
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(scope),
            ..
        }) = element
        else {
            cx.error_spanned_by(
                &element,
                "`scopes` takes string literals: `scopes = [\"db:read\", \"db:write\"]`",
            );
            continue;
        };
        let text = scope.value();
        let is_token = text.bytes().all(|byte| {
            byte == 0x21 || (0x23..=0x5B).contains(&byte) || (0x5D..=0x7E).contains(&byte)
        });
        if text.is_empty() {
            cx.error_spanned_by(&scope, "a scope cannot be empty");
        } else if !is_token {
            cx.error_spanned_by(
                &scope,
                format!(
                    "`{text}` is not an OAuth scope: a scope is printable ASCII without spaces, `\"` or `\\` (RFC 6749 §3.3)"
                ),
            );
        } else if scopes.iter().any(|seen| seen.value() == text) {
            cx.error_spanned_by(&scope, format!("the scope `{text}` is listed twice"));
        } else {
            scopes.push(scope);
        }
    }
    Ok(scopes)
}

/// `["beta", "billing"]`: string literals, each a non-empty label of at most 64 characters
/// from `A-Za-z0-9_-.:`, none repeated.
fn tags_value(meta: &ParseNestedMeta<'_>, cx: &mut Ctxt) -> syn::Result<Vec<LitStr>> {
    let list: syn::ExprArray = meta.value()?.parse()?;
    let mut tags: Vec<LitStr> = Vec::new();
    for element in list.elems {
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(tag),
            ..
        }) = element
        else {
            cx.error_spanned_by(
                &element,
                "`tags` takes string literals: `tags = [\"beta\", \"billing\"]`",
            );
            continue;
        };
        let text = tag.value();
        let is_label = text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"_-.:".contains(&byte));
        if text.is_empty() || text.len() > 64 || !is_label {
            cx.error_spanned_by(
                &tag,
                format!("`{text}` is not a tag: a tag is 1 to 64 characters of `A-Za-z0-9_-.:`"),
            );
        } else if tags.iter().any(|seen| seen.value() == text) {
            cx.error_spanned_by(&tag, format!("the tag `{text}` is listed twice"));
        } else {
            tags.push(tag);
        }
    }
    Ok(tags)
}

fn string_value(meta: &ParseNestedMeta<'_>) -> syn::Result<LitStr> {
    meta.value()?.parse()
}

fn flag_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Flag> {
    let span = quote::ToTokens::to_token_stream(&meta.path)
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |token| token.span());
    if meta.input.peek(Token![=]) {
        let value: LitBool = meta.value()?.parse()?;
        Ok(Flag {
            value: value.value,
            span: value.span,
        })
    } else {
        Ok(Flag { value: true, span })
    }
}

/// Consumes an unknown key's value (`= expr` or `(...)`), so parsing goes on to the next key.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

/// The doc comment as one text: each `///` line without its first space, trimmed.
fn doc_text(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident(symbol::DOC))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => Some(text.value()),
            _ => None,
        })
        .map(|line| line.strip_prefix(' ').map(str::to_owned).unwrap_or(line))
        .collect();
    let text = lines.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}
