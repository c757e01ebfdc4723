//! The words of invalid arguments: what each check expected and how to fix it, what came,
//! and the block the model reads that lists every problem of a call.
//!
//! The validator (`validate/`) decides which rule a value breaks and where; the sentences
//! are built here, from plain values (counts, bounds as text, JSON type names), so that
//! this file depends on nothing of the validator but the [`ArgIssue`] it fills in.

use std::fmt::{Display, Write as _};

use serde_json::Value;

use crate::{
    failure::Target,
    failure::issue::{ArgIssue, IssueCode},
    limits::{PREVIEW_CHARS, REDACTED, preview, preview_text},
};

/// What an issue says besides its path, rule and received value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Words {
    /// What the schema expects there ("an integer", "at most 50").
    pub(crate) expected: String,
    /// How to fix it, when there is more to say than the expectation.
    pub(crate) hint: Option<String>,
}

impl Words {
    fn new(expected: impl Into<String>, hint: Option<String>) -> Self {
        Self {
            expected: expected.into(),
            hint,
        }
    }

    /// An expectation with no hint of its own.
    pub(crate) fn expected(expected: impl Into<String>) -> Self {
        Self::new(expected, None)
    }

    /// An expectation with a hint.
    pub(crate) fn with_hint(expected: impl Into<String>, hint: Option<String>) -> Self {
        Self::new(expected, hint)
    }
}

// What came.

/// The JSON type of a value, with its article, as the messages name it.
pub(crate) fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A received value: its preview and its type.
pub(crate) fn received(value: &Value) -> String {
    format!("{} ({})", preview(value), type_of(value))
}

/// A received secret: its type, never its content (not even a prefix).
pub(crate) fn received_secret(value: &Value) -> String {
    format!("{REDACTED} ({})", type_of(value))
}

/// A received number, as the client wrote it.
pub(crate) fn received_literal(literal: &str) -> String {
    format!("{} (a number)", preview_text(literal.to_owned()))
}

// What is expected, in general.

/// A JSON Schema type name (`"integer"`) with its article ("an integer").
fn type_words(name: &str) -> &'static str {
    match name {
        "object" => "an object",
        "array" => "an array",
        "string" => "a string",
        "integer" => "an integer",
        "number" => "a number",
        "boolean" => "a boolean",
        "null" => "null",
        _ => "a value",
    }
}

/// The JSON Schema types a node allows, in words: "an integer", "a string or null".
pub(crate) fn types<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let words: Vec<&str> = names.into_iter().map(type_words).collect();
    words.join(" or ")
}

/// Alternatives: "an integer or a string".
pub(crate) fn either(words: &[String]) -> String {
    words.join(" or ")
}

/// An expectation that also takes null.
pub(crate) fn or_null(expected: &str) -> String {
    format!("{expected} or null")
}

/// What a node without a type, values or branches expects.
pub(crate) fn any_value() -> String {
    "a value".into()
}

/// The allowed values: "exactly 3", "one of "a", "b"".
pub(crate) fn one_of(values: &[Value]) -> String {
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    match listed.as_slice() {
        [single] => format!("exactly {single}"),
        _ => format!("one of {}", listed.join(", ")),
    }
}

/// A number as messages write it: `5`, not `5.0`.
pub(crate) fn number(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        format!("{}", number as i64)
    } else {
        number.to_string()
    }
}

/// "an integer from -128 to 127 (i8)".
pub(crate) fn integer_range(min: impl Display, max: impl Display, name: &str) -> String {
    format!("an integer from {min} to {max} ({name})")
}

/// "a number from -3.4028235e38 to 3.4028235e38 (f32)".
pub(crate) fn f32_range() -> String {
    format!("a number from {:e} to {:e} (f32)", f32::MIN, f32::MAX)
}

/// What a string `format` means.
pub(crate) fn format(format: &str) -> String {
    match format {
        "email" => "an email address such as \"ada@example.com\"".into(),
        "uri" => "an absolute URI such as \"https://example.com/a\"".into(),
        "uuid" => "a UUID such as \"67e55044-10b1-426f-9247-bb680e5fe0c8\"".into(),
        "date" => "a date as YYYY-MM-DD, such as \"2026-11-29\"".into(),
        "date-time" => "an RFC 3339 date-time such as \"2026-11-29T17:30:00Z\"".into(),
        "ipv4" => "an IPv4 address such as \"192.0.2.1\"".into(),
        "ipv6" => "an IPv6 address such as \"2001:db8::1\"".into(),
        other => format!("text in the `{other}` format"),
    }
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

// The arguments as a whole.

/// The arguments are not an object.
pub(crate) fn not_an_object() -> Words {
    Words::with_hint(
        "a JSON object with one entry per parameter",
        Some("send the arguments as an object, e.g. {\"name\": value}".into()),
    )
}

/// The arguments passed the schema, but the Rust types refused them: serde's own words
/// are the best there are.
pub(crate) fn undecodable(serde_error: String) -> Words {
    Words::with_hint("arguments the tool's types accept", Some(serde_error))
}

// Types and values.

/// `false` as a schema: nothing fits.
pub(crate) fn nothing_allowed() -> Words {
    Words::expected("nothing (no value is allowed here)")
}

/// A float with a fraction where an integer goes.
pub(crate) fn not_whole(expected: String) -> Words {
    Words::with_hint(
        expected,
        Some("send a whole number; this one has a fractional part".into()),
    )
}

/// A value that fits several `oneOf` branches.
pub(crate) fn several_shapes() -> Words {
    Words::with_hint(
        "exactly one of the allowed shapes",
        Some("the value fits several shapes; add the field that tells them apart".into()),
    )
}

/// A fix for the commonest type mistakes: a number or boolean in quotes, a lone item for a
/// list, a number where text goes. `allows` says whether the schema takes a JSON type
/// (`"integer"`, `"null"`, ...).
pub(crate) fn type_hint(allows: impl Fn(&str) -> bool, value: &Value) -> Option<String> {
    let wants_number = allows("integer") || allows("number");
    match value {
        Value::String(text) if wants_number => {
            let trimmed = text.trim();
            match trimmed.parse::<f64>() {
                Ok(number) if !allows("number") && number.fract() != 0.0 => {
                    Some("send a whole number without quotes".into())
                }
                // A long number is not repeated whole: the hint must stay short.
                Ok(_) if trimmed.len() > PREVIEW_CHARS => {
                    Some("send the number without quotes".into())
                }
                Ok(_) => Some(format!("send {trimmed} without quotes")),
                Err(_) => None,
            }
        }
        Value::String(text) if allows("boolean") && matches!(text.as_str(), "true" | "false") => {
            Some(format!("send {text} without quotes"))
        }
        Value::Number(_) if allows("integer") && !allows("number") => {
            Some("send a whole number".into())
        }
        Value::Number(_) | Value::Bool(_) if allows("string") => {
            Some(format!("send it as a JSON string: \"{value}\""))
        }
        _ if allows("array") && !value.is_array() && !value.is_null() => {
            Some(format!("wrap it in a list: [{}]", preview(value)))
        }
        _ if allows("null") => None,
        Value::Null => {
            Some("this field cannot be null; send a value or leave it out if it is optional".into())
        }
        _ => None,
    }
}

// Objects.

/// A required field is absent.
pub(crate) fn missing(expected: String) -> Words {
    Words::with_hint(expected, Some("this field is required".into()))
}

/// A required field is null.
pub(crate) fn required_null(expected: String) -> Words {
    Words::with_hint(
        expected,
        Some("this field is required and cannot be null".into()),
    )
}

/// A field the object does not declare: the fields it has, and the closest of them.
pub(crate) fn unknown_field<'a>(
    fields: impl Iterator<Item = &'a str>,
    closest: Option<&str>,
) -> Words {
    let valid: Vec<String> = fields.map(|name| format!("`{name}`")).collect();
    let expected = if valid.is_empty() {
        "no fields".into()
    } else {
        format!("only the fields {}", valid.join(", "))
    };
    let hint = match closest {
        Some(close) => format!("did you mean `{close}`?"),
        None => "remove it".into(),
    };
    Words::with_hint(expected, Some(hint))
}

// Arrays.

/// Fewer items than `minItems`.
pub(crate) fn too_few_items(min: u64, len: u64) -> Words {
    Words::with_hint(
        format!("at least {min} item{}", plural(min)),
        Some(format!("it has {len}; add more")),
    )
}

/// More items than `maxItems`.
pub(crate) fn too_many_items(max: u64, len: u64) -> Words {
    Words::with_hint(
        format!("at most {max} item{}", plural(max)),
        Some(format!("it has {len}; send fewer")),
    )
}

/// An item equal to an earlier one, under `uniqueItems`.
pub(crate) fn repeated_item(first: usize) -> Words {
    Words::with_hint(
        "items that are all different",
        Some(format!("it repeats item {first}; remove the duplicate")),
    )
}

// Strings.

/// Fewer characters than `minLength`.
pub(crate) fn too_short(min: u64) -> Words {
    Words::expected(format!("at least {min} character{}", plural(min)))
}

/// More characters than `maxLength`.
pub(crate) fn too_long(max: u64, chars: u64) -> Words {
    Words::with_hint(
        format!("at most {max} character{}", plural(max)),
        Some(format!("it has {chars}; shorten it")),
    )
}

/// Text that does not match `pattern`.
pub(crate) fn pattern(pattern: &str) -> Words {
    Words::expected(format!("text matching the pattern `{pattern}`"))
}

// Numbers.

/// Below `minimum`.
pub(crate) fn at_least(bound: &str) -> String {
    format!("at least {bound}")
}

/// Above `maximum`.
pub(crate) fn at_most(bound: &str) -> String {
    format!("at most {bound}")
}

/// At or below `exclusiveMinimum`.
pub(crate) fn greater_than(bound: &str) -> String {
    format!("greater than {bound}")
}

/// At or above `exclusiveMaximum`.
pub(crate) fn less_than(bound: &str) -> String {
    format!("less than {bound}")
}

/// An integer outside its Rust type: below its smallest value or above its largest.
pub(crate) fn out_of_range(
    expected: String,
    below: bool,
    edge: impl Display,
    type_name: &str,
) -> Words {
    let side = if below {
        format!("it is below {edge}, the smallest {type_name}")
    } else {
        format!("it is above {edge}, the largest {type_name}")
    };
    Words::with_hint(
        expected,
        Some(format!(
            "{side}; send a value in range (it is never clamped)"
        )),
    )
}

/// An integer sent as a float too large to be exact.
pub(crate) fn inexact(type_expected: &str) -> Words {
    Words::with_hint(
        format!("{type_expected}, sent exactly"),
        Some(
            "a float this large may already be rounded; write the integer out in full, \
             without a fraction or exponent"
                .into(),
        ),
    )
}

/// A finite number beyond the range of an `f32`.
pub(crate) fn f32_overflow() -> Words {
    Words::with_hint(
        f32_range(),
        Some(
            "it is beyond the largest f32 and would become infinity; send a smaller number".into(),
        ),
    )
}

/// Not a multiple of `multipleOf`.
pub(crate) fn multiple_of(step: f64) -> Words {
    Words::expected(format!("a multiple of {}", number(step)))
}

// The server's limits.

/// A string over the server's limit.
pub(crate) fn string_over_limit(max_bytes: usize, bytes: usize) -> Words {
    Words::with_hint(
        format!("a string of at most {max_bytes} bytes"),
        Some(format!("it has {bytes} bytes; send less")),
    )
}

/// Nesting deeper than the server allows.
pub(crate) fn too_deep(max_depth: usize) -> Words {
    Words::with_hint(
        format!("values nested at most {max_depth} levels deep"),
        Some("flatten the structure".into()),
    )
}

/// An array over the server's limit.
pub(crate) fn items_over_limit(max_items: usize, len: usize) -> Words {
    Words::with_hint(
        format!("at most {max_items} items"),
        Some(format!("it has {len}; send fewer")),
    )
}

/// An object over the server's limit.
pub(crate) fn entries_over_limit(max_items: usize, len: usize) -> Words {
    Words::with_hint(
        format!("at most {max_items} entries"),
        Some(format!("it has {len}; send fewer")),
    )
}

/// A key over [`MAX_KEY_BYTES`](crate::limits::MAX_KEY_BYTES): the words, and what came (its
/// size, never the key, which the path quotes cut).
pub(crate) fn key_over_limit(max_bytes: usize, bytes: usize) -> (Words, String) {
    let words = Words::with_hint(
        format!("a key of at most {max_bytes} bytes"),
        Some("no parameter has a name this long; remove it".into()),
    );
    (words, format!("a key of {bytes} bytes"))
}

// The block the model reads.

/// The text block the model reads for invalid arguments: a headline naming the tool, one
/// line per problem, and what to do next.
pub(crate) fn render_issues(tool: &Target<'_>, issues: &[ArgIssue]) -> String {
    let mut text = format!("Invalid arguments for tool {tool}:\n");
    for issue in issues {
        let place = if issue.path.is_empty() {
            "arguments".to_owned()
        } else {
            format!("`{}`", issue.path)
        };
        let expected = &issue.expected;
        let rule = match issue.code {
            IssueCode::Missing => format!("required, expected {expected}"),
            IssueCode::UnknownField => format!("not a parameter here, expected {expected}"),
            IssueCode::Null => format!("expected {expected}, not null"),
            IssueCode::Custom => expected.clone(),
            _ => format!("expected {expected}"),
        };
        let received = issue.received.as_deref().unwrap_or("(missing)");
        let fix = issue.hint.clone().unwrap_or_else(|| default_fix(issue));
        let _ = writeln!(
            text,
            "- {place} ({code}): {rule}; received {received}. Fix: {fix}.",
            code = issue.code
        );
    }
    let _ = write!(
        text,
        "Fix the field{} above and call {tool} again.",
        if issues.len() == 1 { "" } else { "s" }
    );
    text
}

/// The fix to suggest when the check that found a problem had nothing more specific.
fn default_fix(issue: &ArgIssue) -> String {
    let expected = &issue.expected;
    match issue.code {
        IssueCode::Missing => format!(
            "add `{}`",
            issue.path.rsplit('.').next().unwrap_or(&issue.path)
        ),
        IssueCode::UnknownField => "remove it".to_owned(),
        IssueCode::Null => format!("send {expected}, or leave the field out if it is optional"),
        IssueCode::Custom | IssueCode::Decode => "correct the value".to_owned(),
        IssueCode::MinLength | IssueCode::MaxLength => format!("make it {expected}"),
        IssueCode::Pattern => "send text that matches the pattern".to_owned(),
        _ => format!("send {expected}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_name_their_type() {
        assert_eq!(
            integer_range(-128, 127, "i8"),
            "an integer from -128 to 127 (i8)"
        );
        assert_eq!(
            f32_range(),
            "a number from -3.4028235e38 to 3.4028235e38 (f32)"
        );
    }

    #[test]
    fn types_are_named_with_their_article() {
        assert_eq!(types(["string", "null"]), "a string or null");
        assert_eq!(types(["integer"]), "an integer");
        assert_eq!(type_of(&Value::from(1.5)), "a number");
    }
}
