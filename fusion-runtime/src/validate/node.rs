//! A compiled schema: one [`Node`] per schema object, the keywords the runtime enforces,
//! with the set of JSON types ([`Types`]) and exact numeric bounds ([`Bound`]) it checks.
//! `compile.rs` builds them; the walker (`walk/`) reads them.

use regex::Regex;
use serde_json::Value;

use crate::failure::wording::args as words;

use super::number::{IntType, Wide};

/// The index of a node in its validator's nodes.
pub(super) type NodeId = usize;

/// JSON Schema's `integer`: a number with no fractional part (`5` and `5.0` alike).
pub(super) fn is_integral(number: &serde_json::Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|n| n.fract() == 0.0)
}

/// The set of JSON types a schema node allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Types(pub(super) u8);

impl Types {
    pub(super) const NULL: u8 = 1;
    pub(super) const BOOLEAN: u8 = 2;
    pub(super) const INTEGER: u8 = 4;
    pub(super) const NUMBER: u8 = 8;
    pub(super) const STRING: u8 = 16;
    pub(super) const ARRAY: u8 = 32;
    pub(super) const OBJECT: u8 = 64;

    /// The JSON Schema names, in the order messages list them.
    const NAMES: [(u8, &'static str); 7] = [
        (Self::OBJECT, "object"),
        (Self::ARRAY, "array"),
        (Self::STRING, "string"),
        (Self::INTEGER, "integer"),
        (Self::NUMBER, "number"),
        (Self::BOOLEAN, "boolean"),
        (Self::NULL, "null"),
    ];

    pub(super) fn from_name(name: &str) -> u8 {
        match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => 0,
        }
    }

    pub(super) fn allows(self, value: &Value) -> bool {
        let bit = match value {
            Value::Null => Self::NULL,
            Value::Bool(_) => Self::BOOLEAN,
            Value::Number(n) if is_integral(n) => Self::INTEGER | Self::NUMBER,
            Value::Number(_) => Self::NUMBER,
            Value::String(_) => Self::STRING,
            Value::Array(_) => Self::ARRAY,
            Value::Object(_) => Self::OBJECT,
        };
        self.0 & bit != 0
    }

    /// Whether the type named `name` (`"integer"`, `"null"`, ...) is in the set.
    pub(super) fn has(self, name: &str) -> bool {
        self.0 & Self::from_name(name) != 0
    }

    pub(super) fn allows_null(self) -> bool {
        self.0 & Self::NULL != 0
    }

    /// "an integer", "a string or null".
    pub(super) fn describe(self) -> String {
        let names = Self::NAMES
            .into_iter()
            .filter(|(bit, _)| self.0 & bit != 0)
            .map(|(_, name)| name);
        words::types(names)
    }
}

/// A numeric bound or value, exact for integers (an `i64` bound against a `u64` value must
/// not round through `f64`, nor an `i128` value sent as `1.7e38`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Bound {
    Int(Wide),
    Float(f64),
}

impl Bound {
    pub(super) fn of(number: &serde_json::Number) -> Option<Self> {
        if let Some(int) = number.as_i64() {
            Some(Self::Int(Wide::from_i128(i128::from(int))))
        } else if let Some(int) = number.as_u64() {
            Some(Self::Int(Wide::from_u128(u128::from(int))))
        } else {
            number.as_f64().map(Self::Float)
        }
    }

    pub(super) fn as_f64(self) -> f64 {
        match self {
            Self::Int(int) => int.to_f64(),
            Self::Float(float) => float,
        }
    }

    pub(super) fn cmp(self, other: Self) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }

    pub(super) fn text(self) -> String {
        match self {
            Self::Int(int) => int.to_string(),
            Self::Float(float) => words::number(float),
        }
    }
}

/// What an object node says of the properties it does not declare.
#[derive(Debug, Default)]
pub(super) enum Additional {
    #[default]
    Allowed,
    Denied,
    Schema(NodeId),
}

/// One compiled schema: the keywords the runtime enforces.
#[derive(Debug, Default)]
pub(super) struct Node {
    pub(super) never: bool,
    pub(super) types: Option<Types>,
    pub(super) properties: Vec<(String, NodeId)>,
    pub(super) required: Vec<String>,
    pub(super) additional: Additional,
    pub(super) items: Option<NodeId>,
    pub(super) enum_values: Option<Vec<Value>>,
    pub(super) any_of: Vec<NodeId>,
    pub(super) one_of: Vec<NodeId>,
    pub(super) all_of: Vec<NodeId>,
    pub(super) reference: Option<NodeId>,
    pub(super) minimum: Option<Bound>,
    pub(super) maximum: Option<Bound>,
    pub(super) exclusive_minimum: Option<Bound>,
    pub(super) exclusive_maximum: Option<Bound>,
    pub(super) multiple_of: Option<f64>,
    pub(super) min_length: Option<u64>,
    pub(super) max_length: Option<u64>,
    pub(super) min_items: Option<u64>,
    pub(super) max_items: Option<u64>,
    pub(super) unique_items: bool,
    pub(super) pattern: Option<Regex>,
    pub(super) format: Option<String>,
    /// The Rust integer type a fixed-width `format` names (`int64` → `i64`): its range is
    /// checked exactly, apart from the declared `minimum`/`maximum`.
    pub(super) int_type: Option<IntType>,
    /// `"format": "float"`: an `f32`, which a finite number beyond its range would turn
    /// into infinity.
    pub(super) float32: bool,
    /// `writeOnly: true`: an `#[arg(secret)]` value, never quoted in a problem report.
    pub(super) secret: bool,
}

impl Node {
    /// An integer and not any number: a float here must be an exact integer.
    pub(super) fn wants_integer(&self) -> bool {
        self.types
            .is_some_and(|types| types.0 & Types::INTEGER != 0 && types.0 & Types::NUMBER == 0)
    }
}
