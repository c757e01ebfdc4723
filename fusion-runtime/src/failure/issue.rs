//! [`ArgIssue`]: one problem with a call's arguments, and the rule it breaks
//! ([`IssueCode`]); as JSON for programmatic clients ([`issue_json`]). The validator, the
//! limits and the `validate = ..` checks fill them in; `failure/wording/args.rs` words them
//! for the model.

use std::fmt;

use serde_json::Value;

/// One problem with a call's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgIssue {
    /// Where: `city`, `filters[2].limit`; empty for the arguments object itself.
    pub path: String,
    /// Which rule was broken.
    pub code: IssueCode,
    /// What the schema expects there, in words ("an integer", "at most 50").
    pub expected: String,
    /// What came, as compact JSON truncated to about 60 characters; `None` when absent.
    pub received: Option<String>,
    /// How to fix it, when there is something better to say than the expectation.
    pub hint: Option<String>,
}

/// The rule an [`ArgIssue`] breaks. The `Display` form is stable (snake case).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IssueCode {
    /// The arguments are not a JSON object.
    NotAnObject,
    /// A field the tool does not declare.
    UnknownField,
    /// A required field is absent.
    Missing,
    /// A required field is `null`.
    Null,
    /// The JSON type is wrong.
    Type,
    /// Not one of the allowed values.
    Enum,
    /// Below the minimum.
    Minimum,
    /// Above the maximum.
    Maximum,
    /// Not a multiple of the declared step.
    MultipleOf,
    /// Too short (a string or an array).
    MinLength,
    /// Too long (a string or an array).
    MaxLength,
    /// The string does not match the declared pattern.
    Pattern,
    /// Array items repeat.
    Unique,
    /// The value matches none (or several) of the allowed shapes.
    NoMatch,
    /// The string is not in the declared format (email, uri, uuid, ...).
    Format,
    /// A `validate = ..` check of the tool refused the value.
    Custom,
    /// Nested deeper than the server allows.
    TooDeep,
    /// A string or an array larger than the server allows.
    TooLarge,
    /// The value passed the schema but the Rust type refused it.
    Decode,
    /// A number outside the range its Rust type holds (`300` for an `i8`, `1e39` for an
    /// `f32`): refused, never clamped.
    Range,
    /// An integer sent as a float too large to be exact (`1e19` without the text it was
    /// written as): it may already have been rounded, so it is refused.
    Inexact,
}

impl IssueCode {
    /// The stable snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotAnObject => "not_an_object",
            Self::UnknownField => "unknown_field",
            Self::Missing => "missing",
            Self::Null => "null",
            Self::Type => "type",
            Self::Enum => "enum",
            Self::Minimum => "minimum",
            Self::Maximum => "maximum",
            Self::MultipleOf => "multiple_of",
            Self::MinLength => "min_length",
            Self::MaxLength => "max_length",
            Self::Pattern => "pattern",
            Self::Unique => "unique",
            Self::NoMatch => "no_match",
            Self::Format => "format",
            Self::Custom => "custom",
            Self::TooDeep => "too_deep",
            Self::TooLarge => "too_large",
            Self::Decode => "decode",
            Self::Range => "range",
            Self::Inexact => "inexact",
        }
    }
}

impl fmt::Display for IssueCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An issue as JSON for programmatic clients: `{path, code, expected, received, hint}`.
pub(crate) fn issue_json(issue: &ArgIssue) -> Value {
    serde_json::json!({
        "path": issue.path,
        "code": issue.code.as_str(),
        "expected": issue.expected,
        "received": issue.received,
        "hint": issue.hint,
    })
}
