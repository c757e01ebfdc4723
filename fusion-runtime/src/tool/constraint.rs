//! Declared constraints on parameters and fields: `#[arg(min = 1, max = 50)]` and friends.
//!
//! A constraint is written once, in the attribute; the macro turns it into a schemars
//! `transform` that adds the matching JSON Schema keyword to the field's schema, and the
//! runtime's validator enforces every keyword of the schema. So the schema a client sees
//! and the check the server makes cannot drift apart.
//!
//! | attribute | JSON Schema | applies to |
//! |---|---|---|
//! | `min = 1`, `max = 50` | `minimum`, `maximum` | numbers |
//! | `exclusive_min = 0`, `exclusive_max = 1` | `exclusiveMinimum`, `exclusiveMaximum` | numbers |
//! | `multiple_of = 5` | `multipleOf` | numbers |
//! | `length(min = 1, max = 80)` | `minLength`/`maxLength` (text), `minItems`/`maxItems` (lists) | text, lists |
//! | `non_empty` | `minLength: 1` or `minItems: 1` | text, lists |
//! | `pattern = "^[a-z]+$"` | `pattern` | text |
//! | `format = "email"` (`uri`, `uuid`, `date`, `date-time`, `ipv4`, `ipv6`) | `format` | text |
//! | `one_of = ["a", "b"]` | `enum` | any literal type |
//! | `unique` | `uniqueItems: true` | lists |
//! | `default = expr` | `default` (and the field becomes optional) | any `Serialize` type |
//! | `deprecated` | `deprecated: true` | any |
//! | `validate = path::to::check` | (none: a runtime check, `fn(&T) -> Result<(), E: Display>`) | any |
//! | `items(length(max = 32), pattern = "..")` | the same keywords in `items` | lists (the keys apply to the item type) |

use std::fmt::Display;

use schemars::Schema;
use serde_json::{Map, Number, Value};

use crate::validate::{ArgIssue, IssueCode};

/// A literal written in an attribute: a bound, a list item.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Literal {
    /// A string.
    Str(&'static str),
    /// An integer.
    Int(i128),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
}

impl Literal {
    fn to_json(self) -> Value {
        match self {
            Self::Str(text) => Value::String(text.to_owned()),
            Self::Int(int) => i64::try_from(int)
                .map(Value::from)
                .or_else(|_| u64::try_from(int).map(Value::from))
                .unwrap_or_else(|_| float(int as f64)),
            Self::Float(value) => float(value),
            Self::Bool(value) => Value::Bool(value),
        }
    }
}

fn float(value: f64) -> Value {
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

/// One declared constraint, as the macro emits it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constraint {
    /// `min = ..`
    Minimum(Literal),
    /// `max = ..`
    Maximum(Literal),
    /// `exclusive_min = ..`
    ExclusiveMinimum(Literal),
    /// `exclusive_max = ..`
    ExclusiveMaximum(Literal),
    /// `multiple_of = ..`
    MultipleOf(Literal),
    /// `length(min = .., max = ..)`
    Length {
        /// The least length.
        min: Option<u64>,
        /// The greatest length.
        max: Option<u64>,
    },
    /// `non_empty`
    NonEmpty,
    /// `pattern = ".."`
    Pattern(&'static str),
    /// `format = ".."`
    Format(&'static str),
    /// `one_of = [..]`
    OneOf(&'static [Literal]),
    /// `unique`
    Unique,
    /// `deprecated`
    Deprecated,
    /// `secret`: hidden in logs and messages; `writeOnly` in the schema.
    Secret,
    /// `items(..)`: constraints on each item of a list, in its `items` schema.
    Items(&'static [Constraint]),
}

/// Adds the keywords of `constraints` to a field's schema (a schemars `transform`).
///
/// Length constraints pick `minLength`/`maxLength` or `minItems`/`maxItems` from the
/// schema's own `type`, so `length(max = 3)` means characters on a `String` and items on
/// a `Vec`.
#[doc(hidden)]
pub fn apply(schema: &mut Schema, constraints: &[Constraint]) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let is_list = has_type(object, "array");
    let (min_key, max_key) = if is_list {
        ("minItems", "maxItems")
    } else {
        ("minLength", "maxLength")
    };
    for constraint in constraints {
        let (key, value) = match *constraint {
            Constraint::Minimum(bound) => ("minimum", bound.to_json()),
            Constraint::Maximum(bound) => ("maximum", bound.to_json()),
            Constraint::ExclusiveMinimum(bound) => ("exclusiveMinimum", bound.to_json()),
            Constraint::ExclusiveMaximum(bound) => ("exclusiveMaximum", bound.to_json()),
            Constraint::MultipleOf(step) => ("multipleOf", step.to_json()),
            Constraint::Length { min, max } => {
                if let Some(max) = max {
                    object.insert(max_key.into(), Value::from(max));
                }
                match min {
                    Some(min) => (min_key, Value::from(min)),
                    None => continue,
                }
            }
            Constraint::NonEmpty => (min_key, Value::from(1)),
            Constraint::Pattern(pattern) => ("pattern", Value::String(pattern.to_owned())),
            Constraint::Format(format) => ("format", Value::String(format.to_owned())),
            Constraint::OneOf(values) => ("enum", one_of_values(object, values)),
            Constraint::Unique => ("uniqueItems", Value::Bool(true)),
            Constraint::Deprecated => ("deprecated", Value::Bool(true)),
            Constraint::Secret => ("writeOnly", Value::Bool(true)),
            Constraint::Items(each) => {
                let items = object
                    .entry("items")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Ok(mut item) = Schema::try_from(items.clone()) {
                    apply(&mut item, each);
                    *items = item.to_value();
                }
                continue;
            }
        };
        object.insert(key.into(), value);
    }
}

/// The `enum` list; an optional field also accepts `null`, as its `type` says.
fn one_of_values(object: &Map<String, Value>, values: &[Literal]) -> Value {
    let mut list: Vec<Value> = values.iter().map(|value| value.to_json()).collect();
    if has_type(object, "null") {
        list.push(Value::Null);
    }
    Value::Array(list)
}

fn has_type(object: &Map<String, Value>, name: &str) -> bool {
    match object.get("type") {
        Some(Value::String(single)) => single == name,
        Some(Value::Array(names)) => names.iter().any(|n| n == name),
        _ => false,
    }
}

/// Runs a `validate = path` check on a decoded argument and records its complaint.
#[doc(hidden)]
pub fn custom_check<T, U, E>(
    value: &T,
    path: &str,
    check: impl FnOnce(&U) -> Result<(), E>,
    issues: &mut Vec<ArgIssue>,
) where
    // A check may take what the value borrows as: `fn(&str)` for a `String`.
    T: std::borrow::Borrow<U> + ?Sized,
    U: ?Sized,
    E: Display,
{
    if let Err(error) = check(value.borrow()) {
        issues.push(ArgIssue {
            path: path.to_owned(),
            code: IssueCode::Custom,
            expected: error.to_string(),
            received: None,
            hint: None,
        });
    }
}

/// Runs the `validate = ..` checks of a call; a failure when any of them complained.
#[doc(hidden)]
pub fn run_custom_checks(
    checks: impl FnOnce(&mut Vec<ArgIssue>),
) -> Option<crate::tool::output::Outcome> {
    let mut issues = Vec::new();
    checks(&mut issues);
    (!issues.is_empty()).then(|| {
        crate::tool::output::Outcome::Failure(crate::failure::Failure::new(
            crate::failure::FailureKind::InvalidArguments(issues),
        ))
    })
}

/// Compile-time kinds: which constraints apply to which parameter types. `#[mcp_tool]`
/// emits a check per constraint, spanned at the constraint's key, so `length` on an `i64`
/// is an error on the word `length` that says why.
#[doc(hidden)]
pub mod kinds {
    use std::{
        borrow::Cow,
        collections::{BTreeSet, HashSet, VecDeque},
    };

    /// Numbers: `min`, `max`, `exclusive_min`, `exclusive_max`, `multiple_of`.
    #[diagnostic::on_unimplemented(
        message = "this constraint applies to numbers, and `{Self}` is not a number",
        label = "a numeric constraint on a parameter of type `{Self}`",
        note = "`min`, `max`, `exclusive_min`, `exclusive_max` and `multiple_of` apply to integer and float parameters; use `length(..)` for text and lists"
    )]
    pub trait Numeric {}

    /// Text: `pattern`, `format`.
    #[diagnostic::on_unimplemented(
        message = "this constraint applies to text, and `{Self}` is not text",
        label = "a text constraint on a parameter of type `{Self}`",
        note = "`pattern` and `format` apply to `String` parameters; use `min`/`max` for numbers"
    )]
    pub trait Text {}

    /// Text or lists: `length`, `non_empty`.
    #[diagnostic::on_unimplemented(
        message = "this constraint applies to text and lists, and `{Self}` is neither",
        label = "a length constraint on a parameter of type `{Self}`",
        note = "`length(..)` and `non_empty` apply to `String` and `Vec<T>` parameters; use `min`/`max` for numbers"
    )]
    pub trait HasLength {}

    /// Lists: `unique`.
    #[diagnostic::on_unimplemented(
        message = "`unique` applies to lists, and `{Self}` is not a list",
        label = "`unique` on a parameter of type `{Self}`",
        note = "`unique` applies to `Vec<T>` and sets; remove it or change the type"
    )]
    pub trait List {}

    macro_rules! impls {
        ($kind:ident: $($ty:ty),*) => { $(impl $kind for $ty {})* };
    }
    impls!(Numeric: i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64);
    impls!(Text: String, Box<str>, Cow<'static, str>);
    impls!(HasLength: String, Box<str>, Cow<'static, str>);
    impl<T: Numeric> Numeric for Option<T> {}
    impl<T: Text> Text for Option<T> {}
    impl<T: HasLength> HasLength for Option<T> {}
    impl<T: List> List for Option<T> {}
    impl<T> HasLength for Vec<T> {}
    impl<T> HasLength for VecDeque<T> {}
    impl<T> HasLength for HashSet<T> {}
    impl<T> HasLength for BTreeSet<T> {}
    impl<T, const N: usize> HasLength for [T; N] {}
    impl<T> List for Vec<T> {}
    impl<T> List for VecDeque<T> {}
    impl<T> List for HashSet<T> {}
    impl<T> List for BTreeSet<T> {}
    impl<T, const N: usize> List for [T; N] {}

    /// Lists, for `items(..)`: what their items are, to check each item's constraints on.
    #[diagnostic::on_unimplemented(
        message = "`items(..)` applies to lists, and `{Self}` is not a list",
        label = "`items(..)` on a parameter of type `{Self}`",
        note = "`items(..)` constrains each item of a `Vec<T>` or a set; on a single value, write the constraints without it"
    )]
    pub trait Items {
        /// The type of each item.
        type Item: ?Sized;
    }
    impl<T> Items for Vec<T> {
        type Item = T;
    }
    impl<T> Items for VecDeque<T> {
        type Item = T;
    }
    impl<T> Items for HashSet<T> {
        type Item = T;
    }
    impl<T> Items for BTreeSet<T> {
        type Item = T;
    }
    impl<T, const N: usize> Items for [T; N] {
        type Item = T;
    }
    impl<T: Items> Items for Option<T> {
        type Item = T::Item;
    }

    /// Checks that `items(..)` applies to `T`.
    pub const fn items<T: Items + ?Sized>() {}
    /// Checks that a numeric constraint applies to `T`.
    pub const fn numeric<T: Numeric + ?Sized>() {}
    /// Checks that a text constraint applies to `T`.
    pub const fn text<T: Text + ?Sized>() {}
    /// Checks that a length constraint applies to `T`.
    pub const fn has_length<T: HasLength + ?Sized>() {}
    /// Checks that `unique` applies to `T`.
    pub const fn list<T: List + ?Sized>() {}
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(value: Value) -> Schema {
        Schema::try_from(value).expect("an object schema")
    }

    #[test]
    fn length_picks_the_keyword_from_the_type() {
        let mut text = schema(json!({"type": "string"}));
        apply(
            &mut text,
            &[Constraint::Length {
                min: Some(1),
                max: Some(3),
            }],
        );
        assert_eq!(
            text.as_value(),
            &json!({"type": "string", "maxLength": 3, "minLength": 1})
        );
        let mut list = schema(json!({"type": ["array", "null"]}));
        apply(&mut list, &[Constraint::NonEmpty, Constraint::Unique]);
        assert_eq!(
            list.as_value(),
            &json!({"type": ["array", "null"], "minItems": 1, "uniqueItems": true})
        );
    }

    #[test]
    fn one_of_keeps_null_for_optional_fields() {
        let mut optional = schema(json!({"type": ["string", "null"]}));
        apply(
            &mut optional,
            &[Constraint::OneOf(&[Literal::Str("a"), Literal::Str("b")])],
        );
        assert_eq!(optional.as_value()["enum"], json!(["a", "b", null]));
    }

    #[test]
    fn integer_bounds_stay_integers() {
        let mut number = schema(json!({"type": "integer"}));
        apply(
            &mut number,
            &[
                Constraint::Minimum(Literal::Int(1)),
                Constraint::Maximum(Literal::Float(2.5)),
            ],
        );
        assert_eq!(
            number.as_value(),
            &json!({"type": "integer", "minimum": 1, "maximum": 2.5})
        );
    }
}
