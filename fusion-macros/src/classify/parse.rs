//! From the derive input to the classes of its variants; syntax errors only.

use proc_macro2::Span;
use syn::{Attribute, Data, DeriveInput, Fields, Ident, LitStr, Member, Path};

use crate::{ctxt::Ctxt, duration, symbol};

/// A class attribute (`#[transient(code = rate_limited, retry_after = "2s")]`).
pub(crate) struct ClassAttr {
    /// The attribute's name, which is the class.
    pub(crate) class: Ident,
    pub(crate) code: Option<Ident>,
    pub(crate) hint: Option<LitStr>,
    pub(crate) retry_after: Option<(u64, Span)>,
}

/// One variant (or the struct itself).
pub(crate) struct Variant {
    /// `None` for a struct.
    pub(crate) ident: Option<Ident>,
    pub(crate) span: Span,
    pub(crate) classes: Vec<ClassAttr>,
    /// The field that holds the wrapped error, looked through when no class is given.
    pub(crate) source: Option<Member>,
}

pub(crate) struct Input {
    /// The class given on the type itself.
    pub(crate) type_classes: Vec<ClassAttr>,
    pub(crate) variants: Vec<Variant>,
    pub(crate) is_enum: bool,
    pub(crate) krate: Option<Path>,
}

pub(crate) fn parse(input: &DeriveInput, cx: &mut Ctxt) -> Option<Input> {
    let mut krate = None;
    let type_classes = class_attrs(&input.attrs, cx, &mut krate);
    let (variants, is_enum) = match &input.data {
        Data::Enum(data) => (
            data.variants
                .iter()
                .map(|variant| Variant {
                    ident: Some(variant.ident.clone()),
                    span: variant.ident.span(),
                    classes: class_attrs(&variant.attrs, cx, &mut None),
                    source: source_field(&variant.fields, &variant.attrs),
                })
                .collect(),
            true,
        ),
        Data::Struct(data) => (
            vec![Variant {
                ident: None,
                span: input.ident.span(),
                classes: Vec::new(),
                source: source_field(&data.fields, &input.attrs),
            }],
            false,
        ),
        Data::Union(_) => {
            cx.error_spanned_by(
                &input.ident,
                "`Classify` derives on enums and structs, not unions",
            );
            return None;
        }
    };
    Some(Input {
        type_classes,
        variants,
        is_enum,
        krate,
    })
}

fn class_attrs(attrs: &[Attribute], cx: &mut Ctxt, krate: &mut Option<Path>) -> Vec<ClassAttr> {
    let mut classes = Vec::new();
    for attr in attrs {
        let Some(name) = attr.path().get_ident() else {
            continue;
        };
        if name == symbol::CLASSIFY {
            // #[classify(crate = "path")]
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(symbol::CRATE) {
                    // crate = "my::path" | crate = my::path
                    *krate = Some(crate::krate::parse(&meta)?);
                    Ok(())
                } else {
                    Err(meta.error("`#[classify(..)]` takes only `crate = \"path\"`; the class is its own attribute, such as `#[transient]`"))
                }
            });
            if let Err(error) = result {
                cx.push(error);
            }
            continue;
        }
        if !symbol::CLASSES.contains(&name.to_string().as_str()) {
            continue;
        }
        let mut class = ClassAttr {
            class: name.clone(),
            code: None,
            hint: None,
            retry_after: None,
        };
        if matches!(attr.meta, syn::Meta::List(_)) {
            let result = attr.parse_nested_meta(|meta| {
                if meta.path.is_ident(symbol::CODE) {
                    // code = not_found
                    class.code = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident(symbol::HINT) {
                    // hint = "what to do instead"
                    class.hint = Some(meta.value()?.parse()?);
                } else if meta.path.is_ident(symbol::RETRY_AFTER) {
                    // retry_after = "2s"
                    let text: LitStr = meta.value()?.parse()?;
                    match duration::parse_millis(&text.value()) {
                        Some(millis) => class.retry_after = Some((millis, text.span())),
                        None => cx.error_spanned_by(
                            &text,
                            format!("`{}` is not a duration; {}", text.value(), duration::EXPECTED),
                        ),
                    }
                } else {
                    let shown = quote::ToTokens::to_token_stream(&meta.path).to_string();
                    cx.error_spanned_by(
                        &meta.path,
                        format!("unknown key `{shown}` in `#[{name}(..)]`; valid keys are: `code`, `hint`, `retry_after`"),
                    );
                    if meta.input.peek(syn::Token![=]) {
                        meta.value()?.parse::<syn::Expr>()?;
                    }
                }
                Ok(())
            });
            if let Err(error) = result {
                cx.push(error);
            }
        } else if let Err(error) = attr.meta.require_path_only() {
            cx.push(error);
        }
        classes.push(class);
    }
    classes
}

/// The field that wraps another error, as thiserror marks it: `#[from]`, `#[source]`, a
/// field named `source`, or the one field of an `#[error(transparent)]` variant.
fn source_field(fields: &Fields, attrs: &[Attribute]) -> Option<Member> {
    let transparent = attrs.iter().any(|attr| {
        attr.path().is_ident("error")
            && attr
                .parse_args::<Ident>()
                .is_ok_and(|arg| arg == "transparent")
    });
    for (index, field) in fields.iter().enumerate() {
        let marked = field
            .attrs
            .iter()
            .any(|attr| attr.path().is_ident("from") || attr.path().is_ident("source"));
        let named_source = field.ident.as_ref().is_some_and(|ident| ident == "source");
        if marked || named_source || (transparent && fields.len() == 1) {
            return Some(match &field.ident {
                Some(ident) => Member::Named(ident.clone()),
                None => Member::Unnamed(syn::Index::from(index)),
            });
        }
    }
    None
}
