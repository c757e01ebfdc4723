//! From `#[arg(...)]` attributes to [`Constraints`]; syntax errors only.

use proc_macro2::Span;
use syn::{Attribute, Expr, Ident, Lit, LitStr, Path, Token, UnOp, meta::ParseNestedMeta};

use crate::{ctxt::Ctxt, symbol};

/// A number written in an attribute, with its source form.
#[derive(Clone)]
pub(crate) struct Number {
    pub(crate) value: f64,
    /// `Some` for an integer literal.
    pub(crate) int: Option<i128>,
    pub(crate) span: Span,
}

/// A literal in `one_of = [...]`.
#[derive(Clone)]
pub(crate) enum Literal {
    Str(String),
    Number(Number),
    Bool(bool),
}

/// One constraint and the key that declared it (errors point at the key).
pub(crate) struct Constraint {
    pub(crate) key: Ident,
    pub(crate) kind: Kind,
}

pub(crate) enum Kind {
    Min(Number),
    Max(Number),
    ExclusiveMin(Number),
    ExclusiveMax(Number),
    MultipleOf(Number),
    Length {
        min: Option<Number>,
        max: Option<Number>,
    },
    NonEmpty,
    Pattern(LitStr),
    Format(LitStr),
    OneOf(Vec<(Literal, Span)>),
    Unique,
    Default(Expr),
    Validate(Path),
    Deprecated,
    Secret,
    /// `items(..)`: constraints on each item of a list.
    Items(Constraints),
}

/// Everything `#[arg(...)]` said about one parameter or field.
#[derive(Default)]
pub(crate) struct Constraints {
    pub(crate) list: Vec<Constraint>,
}

impl Constraints {
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn default_expr(&self) -> Option<&Expr> {
        self.list.iter().find_map(|c| match &c.kind {
            Kind::Default(expr) => Some(expr),
            _ => None,
        })
    }

    pub(crate) fn validators(&self) -> impl Iterator<Item = &Path> {
        self.list.iter().filter_map(|c| match &c.kind {
            Kind::Validate(path) => Some(path),
            _ => None,
        })
    }
}

/// Parses every `#[arg(...)]` among `attrs` into one [`Constraints`].
pub(crate) fn parse_arg_attrs(attrs: &[Attribute], cx: &mut Ctxt) -> Constraints {
    let mut constraints = Constraints::default();
    for attr in attrs
        .iter()
        .filter(|attr| attr.path().is_ident(symbol::ARG))
    {
        let result = attr.parse_nested_meta(|meta| {
            if let Some(constraint) = parse_key(&meta, cx, Place::Value)? {
                constraints.list.push(constraint);
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.push(error);
        }
    }
    constraints
}

/// Where a key is written: on the value itself, or inside `items(..)`, on each item.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Value,
    Items,
}

/// One key of `#[arg(..)]` (or of `items(..)` in it); `None` after an error reported to
/// `cx`, so the other keys are still read.
fn parse_key(
    meta: &ParseNestedMeta<'_>,
    cx: &mut Ctxt,
    place: Place,
) -> syn::Result<Option<Constraint>> {
    let Some(key) = meta.path.get_ident().cloned() else {
        cx.error_spanned_by(&meta.path, unknown_key_message(meta));
        skip_value(meta)?;
        return Ok(None);
    };
    let name = key.to_string();
    if place == Place::Items && symbol::VALUE_ONLY_KEYS.contains(&name.as_str()) {
        cx.error_spanned_by(
            &key,
            format!("`{name}` applies to the parameter as a whole, not to each item; write it outside `items(..)`"),
        );
        skip_value(meta)?;
        return Ok(None);
    }
    let kind = match name.as_str() {
        // min = 1 | min = -0.5
        symbol::MIN => Kind::Min(number_value(meta)?),
        // max = 50
        symbol::MAX => Kind::Max(number_value(meta)?),
        // exclusive_min = 0
        symbol::EXCLUSIVE_MIN => Kind::ExclusiveMin(number_value(meta)?),
        // exclusive_max = 1.0
        symbol::EXCLUSIVE_MAX => Kind::ExclusiveMax(number_value(meta)?),
        // multiple_of = 5
        symbol::MULTIPLE_OF => Kind::MultipleOf(number_value(meta)?),
        // length(min = 1, max = 80) | length(max = 80)
        symbol::LENGTH => {
            let (mut min, mut max) = (None, None);
            meta.parse_nested_meta(|inner| {
                if inner.path.is_ident(symbol::MIN) {
                    min = Some(count_value(&inner)?);
                } else if inner.path.is_ident(symbol::MAX) {
                    max = Some(count_value(&inner)?);
                } else {
                    cx.error_spanned_by(
                        &inner.path,
                        "`length(..)` takes `min = N` and `max = N`, e.g. `length(min = 1, max = 80)`",
                    );
                    skip_value(&inner)?;
                }
                Ok(())
            })?;
            if min.is_none() && max.is_none() {
                cx.error_spanned_by(&key, "`length(..)` needs `min = N`, `max = N` or both");
            }
            Kind::Length { min, max }
        }
        // non_empty
        symbol::NON_EMPTY => Kind::NonEmpty,
        // pattern = "^[a-z]+$"
        symbol::PATTERN => Kind::Pattern(meta.value()?.parse()?),
        // format = "email"
        symbol::FORMAT => Kind::Format(meta.value()?.parse()?),
        // one_of = ["a", "b"] | one_of = [1, 2, 3]
        symbol::ONE_OF => {
            let list: syn::ExprArray = meta.value()?.parse()?;
            let mut values = Vec::new();
            for element in &list.elems {
                match literal(element) {
                    Some(value) => values.push((value, syn::spanned::Spanned::span(element))),
                    None => cx.error_spanned_by(
                        element,
                        "`one_of` lists literals: strings, numbers or booleans",
                    ),
                }
            }
            Kind::OneOf(values)
        }
        // unique
        symbol::UNIQUE => Kind::Unique,
        // default = expr
        symbol::DEFAULT => Kind::Default(meta.value()?.parse()?),
        // validate = path::to::check
        symbol::VALIDATE => Kind::Validate(meta.value()?.parse()?),
        // deprecated
        symbol::DEPRECATED => Kind::Deprecated,
        // secret
        symbol::SECRET => Kind::Secret,
        // items(length(max = 32), pattern = "^[a-z]+$"): the same keys, on each item
        symbol::ITEMS if place == Place::Value => {
            let mut each = Constraints::default();
            meta.parse_nested_meta(|inner| {
                if let Some(constraint) = parse_key(&inner, cx, Place::Items)? {
                    each.list.push(constraint);
                }
                Ok(())
            })?;
            if each.is_empty() {
                cx.error_spanned_by(&key, "`items(..)` needs the constraints of each item, e.g. `items(length(max = 32))`");
            }
            Kind::Items(each)
        }
        _ => {
            cx.error_spanned_by(&key, unknown_key_message(meta));
            skip_value(meta)?;
            return Ok(None);
        }
    };
    Ok(Some(Constraint { key, kind }))
}

fn unknown_key_message(meta: &ParseNestedMeta<'_>) -> String {
    let shown = quote::ToTokens::to_token_stream(&meta.path)
        .to_string()
        .replace(' ', "");
    let suggestion = crate::ctxt::closest(&shown, symbol::ARG_KEYS)
        .map(|key| format!("did you mean `{key}`? "))
        .unwrap_or_default();
    format!(
        "unknown `#[arg]` key `{shown}`; {suggestion}valid keys are: {}",
        symbol::ARG_KEYS
            .iter()
            .map(|key| format!("`{key}`"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

fn number_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Number> {
    let expr: Expr = meta.value()?.parse()?;
    match literal(&expr) {
        Some(Literal::Number(number)) => Ok(number),
        _ => Err(syn::Error::new_spanned(
            &expr,
            "expected a number literal such as `10`, `-5` or `0.5`",
        )),
    }
}

fn count_value(meta: &ParseNestedMeta<'_>) -> syn::Result<Number> {
    let expr: Expr = meta.value()?.parse()?;
    match literal(&expr) {
        Some(Literal::Number(number)) if number.int.is_some_and(|n| n >= 0) => Ok(number),
        _ => Err(syn::Error::new_spanned(
            &expr,
            "expected a whole number of characters or items, such as `1` or `80`",
        )),
    }
}

/// A literal expression (with an optional leading minus on numbers).
pub(crate) fn literal(expr: &Expr) -> Option<Literal> {
    match expr {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Str(text) => Some(Literal::Str(text.value())),
            Lit::Bool(value) => Some(Literal::Bool(value.value)),
            Lit::Int(int) => {
                let value = int.base10_parse::<i128>().ok()?;
                Some(Literal::Number(Number {
                    value: value as f64,
                    int: Some(value),
                    span: int.span(),
                }))
            }
            Lit::Float(float) => Some(Literal::Number(Number {
                value: float.base10_parse::<f64>().ok()?,
                int: None,
                span: float.span(),
            })),
            _ => None,
        },
        Expr::Unary(unary) if matches!(unary.op, UnOp::Neg(_)) => match literal(&unary.expr)? {
            Literal::Number(number) => Some(Literal::Number(Number {
                value: -number.value,
                int: number.int.map(|n| -n),
                span: number.span,
            })),
            _ => None,
        },
        Expr::Group(group) => literal(&group.expr),
        _ => None,
    }
}
