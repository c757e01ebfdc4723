//! The caching keys of `#[mcp_tool]`: `cache = "30s"`, `cache_scope = "public"`,
//! `stale_if_error = "10m"` and `invalidates = ["quote", "db_user.find_many"]`; their
//! parsing, their rules, and the `ToolSpec` fields they become.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{LitStr, meta::ParseNestedMeta};

use super::value::{Flag, Millis, duration_value, set_once};
use crate::{ctxt::Ctxt, symbol};

/// The caching keys as written.
#[derive(Default)]
pub(crate) struct CacheAttrs {
    /// How long an answer stays fresh.
    pub(crate) ttl: Option<Millis>,
    /// `public` or `private`.
    pub(crate) scope: Option<LitStr>,
    /// How much longer an answer may be served, marked stale, while the source fails.
    pub(crate) stale_if_error: Option<Millis>,
    /// The cached tools this one's success drops.
    pub(crate) invalidates: Option<Vec<LitStr>>,
}

/// Parses `key` if it is a caching key; `false` when it is not one.
pub(crate) fn parse_key(
    key: &str,
    meta: &ParseNestedMeta<'_>,
    cx: &mut Ctxt,
    attrs: &mut CacheAttrs,
) -> syn::Result<bool> {
    match key {
        // cache = "30s"
        symbol::CACHE => {
            let ttl = duration_value(meta, cx)?;
            set_once(cx, meta, &mut attrs.ttl, ttl);
        }
        // cache_scope = "public"
        symbol::CACHE_SCOPE => {
            let scope: LitStr = meta.value()?.parse()?;
            if !matches!(scope.value().as_str(), "public" | "private") {
                cx.error_spanned_by(
                    &scope,
                    format!(
                        "`{}` is not a cache scope; write `cache_scope = \"private\"` (the default: each caller's own entries) or `cache_scope = \"public\"` (shared by every caller)",
                        scope.value()
                    ),
                );
            }
            set_once(cx, meta, &mut attrs.scope, scope);
        }
        // stale_if_error = "10m"
        symbol::STALE_IF_ERROR => {
            let stale = duration_value(meta, cx)?;
            set_once(cx, meta, &mut attrs.stale_if_error, stale);
        }
        // invalidates = ["quote", "db_user.find_many"]
        symbol::INVALIDATES => {
            let names = names_value(meta, cx)?;
            set_once(cx, meta, &mut attrs.invalidates, names);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// `["quote", "db_user.find_many"]`: string literals, each a tool's name (MCP's rule:
/// 1–128 characters of `A-Za-z0-9_-.`), none repeated. Whether each names a cached tool is
/// known only when the server is built.
fn names_value(meta: &ParseNestedMeta<'_>, cx: &mut Ctxt) -> syn::Result<Vec<LitStr>> {
    let list: syn::ExprArray = meta.value()?.parse()?;
    let mut names: Vec<LitStr> = Vec::new();
    for element in list.elems {
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(name),
            ..
        }) = element
        else {
            cx.error_spanned_by(
                &element,
                "`invalidates` takes string literals: `invalidates = [\"quote\", \"db_user.find_many\"]`",
            );
            continue;
        };
        let text = name.value();
        let is_name = text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"_-.".contains(&byte));
        if text.is_empty() || text.len() > 128 || !is_name {
            cx.error_spanned_by(
                &name,
                format!(
                    "`{text}` is not a tool name: a tool is 1 to 128 characters of `A-Za-z0-9_-.` (an action is `group.action`)"
                ),
            );
        } else if names.iter().any(|seen| seen.value() == text) {
            cx.error_spanned_by(&name, format!("`{text}` is listed twice"));
        } else {
            names.push(name);
        }
    }
    Ok(names)
}

/// The rules between the caching keys and the rest of the tool: its `read_only` and
/// `idempotent` hints.
pub(crate) fn check(
    cache: &CacheAttrs,
    read_only: Option<Flag>,
    idempotent: Option<Flag>,
    cx: &mut Ctxt,
) {
    let Some(ttl) = cache.ttl else {
        if let Some(scope) = &cache.scope {
            cx.error_spanned_by(scope, "`cache_scope` says whose calls share a cached answer, and this tool has no `cache`; add `cache = \"30s\"` or remove it");
        }
        if let Some(stale) = cache.stale_if_error {
            cx.error_at(stale.span, "`stale_if_error` serves a cached answer while the source fails, and this tool has no `cache`; add `cache = \"30s\"` or remove it");
        }
        return;
    };
    if ttl.valid && ttl.millis == 0 {
        cx.error_at(
            ttl.span,
            "a `cache` of zero would keep nothing; give a positive duration such as `cache = \"30s\"`",
        );
    }
    let set = |flag: Option<Flag>| flag.is_some_and(|flag| flag.value);
    // A cached answer cannot hide a side effect: `read_only`, or `idempotent`.
    if !(set(read_only) || set(idempotent)) {
        cx.error_at(
            ttl.span,
            "`cache` answers a call from an earlier one without running the tool, which is safe only for a tool that changes nothing; mark it `read_only` (or `idempotent`, if running it twice changes nothing more), or remove `cache`",
        );
    }
}

/// The `cache` and `invalidates` fields of the `ToolSpec`.
pub(crate) fn spec_fields(private: &TokenStream, attrs: &CacheAttrs) -> TokenStream {
    let cache = match attrs.ttl {
        Some(ttl) => {
            let ttl = ttl.millis;
            let stale = attrs.stale_if_error.map_or(0, |stale| stale.millis);
            let scope = match attrs.scope.as_ref().map(LitStr::value).as_deref() {
                Some("public") => quote!(#private::CacheScope::Public),
                _ => quote!(#private::CacheScope::Private),
            };
            quote! {
                ::core::option::Option::Some(#private::CachePolicy {
                    ttl: ::core::time::Duration::from_millis(#ttl),
                    stale_if_error: ::core::time::Duration::from_millis(#stale),
                    scope: #scope,
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let invalidates = attrs.invalidates.iter().flatten();
    quote! {
        cache: #cache,
        invalidates: &[#(#invalidates),*],
    }
}
