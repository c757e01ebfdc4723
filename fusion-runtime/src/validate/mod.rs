//! Strict argument decoding: every problem of a call at once, each with the field's path,
//! what was expected, what was received and how to fix it.
//!
//! The tool's input schema is compiled once, at registration, into a [`Validator`]. A call
//! is decoded by serde first (the fast path: a valid call costs one `Deserialize`); when
//! serde refuses, or when the schema declares constraints serde does not check, the
//! validator walks the arguments against the schema and collects every problem. What the
//! schema declares, the runtime enforces.

mod format;
pub(crate) mod literal;
pub(crate) mod number;

use std::{collections::HashMap, fmt, fmt::Write as _};

pub use literal::NUMBER_LITERALS_META_KEY;
pub(crate) use literal::NumberLiterals;
use number::{Exact, IntType, Wide};

use regex::Regex;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::suggest::closest;

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

/// The longest preview of a received value, in characters.
const PREVIEW_CHARS: usize = 60;

/// Compact JSON of a value, cut to [`PREVIEW_CHARS`] characters with an ellipsis.
///
/// Serialization stops once enough is written, so a preview of a 15 MiB value costs what a
/// preview of a short one does.
pub(crate) fn preview(value: &Value) -> String {
    // A character is at most 4 bytes, and an escape (`\u001f`) at most 6: room for
    // `PREVIEW_CHARS` characters of any kind, and one more to know whether there is more.
    let mut sink = crate::echo::Bounded::new((PREVIEW_CHARS + 1) * 6);
    // An error means the sink is full: the start is enough.
    let _ = write_preview(value, &mut sink);
    let full = !sink.is_full();
    // The sink may end inside a character; drop the partial one.
    let text = match String::from_utf8(sink.bytes) {
        Ok(text) => text,
        Err(error) => {
            let valid = error.utf8_error().valid_up_to();
            let mut bytes = error.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    let shown = crate::echo::prefix(&text, PREVIEW_CHARS);
    if full && shown.len() == text.len() {
        return text;
    }
    let mut cut = shown.to_owned();
    cut.push('…');
    cut
}

/// `text` (a number's literal) cut to [`PREVIEW_CHARS`] characters with an ellipsis.
fn cut(text: String) -> String {
    let shown = crate::echo::prefix(&text, PREVIEW_CHARS);
    if shown.len() == text.len() {
        return text;
    }
    format!("{shown}…")
}

/// Writes the compact JSON of `value` into `sink` until it is full. Strings and keys are
/// cut to one character more than a preview shows before they are serialized: serde_json
/// scans a whole string for escapes before writing any of it, so a 15 MiB string would
/// cost a full scan (a second of an unoptimized build) for 60 characters.
fn write_preview(value: &Value, sink: &mut crate::echo::Bounded) -> std::io::Result<()> {
    use std::io::Write as _;
    let text = |text: &str, sink: &mut crate::echo::Bounded| {
        serde_json::to_writer(sink, crate::echo::prefix(text, PREVIEW_CHARS + 1))
            .map_err(std::io::Error::other)
    };
    match value {
        Value::String(string) => text(string, sink),
        Value::Array(items) => {
            sink.write_all(b"[")?;
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    sink.write_all(b",")?;
                }
                write_preview(item, sink)?;
            }
            sink.write_all(b"]")
        }
        Value::Object(entries) => {
            sink.write_all(b"{")?;
            for (index, (key, item)) in entries.iter().enumerate() {
                if index > 0 {
                    sink.write_all(b",")?;
                }
                text(key, sink)?;
                sink.write_all(b":")?;
                write_preview(item, sink)?;
            }
            sink.write_all(b"}")
        }
        scalar => serde_json::to_writer(sink, scalar).map_err(std::io::Error::other),
    }
}

/// The JSON type of a value, with its article, as the messages name it.
/// JSON Schema's `integer`: a number with no fractional part (`5` and `5.0` alike).
fn is_integral(number: &serde_json::Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|n| n.fract() == 0.0)
}

fn type_name(value: &Value) -> &'static str {
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

/// The set of JSON types a schema node allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const INTEGER: u8 = 4;
    const NUMBER: u8 = 8;
    const STRING: u8 = 16;
    const ARRAY: u8 = 32;
    const OBJECT: u8 = 64;

    fn from_name(name: &str) -> u8 {
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

    fn allows(self, value: &Value) -> bool {
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

    fn allows_null(self) -> bool {
        self.0 & Self::NULL != 0
    }

    /// "an integer", "a string or null".
    fn describe(self) -> String {
        let names: Vec<&str> = [
            (Self::OBJECT, "an object"),
            (Self::ARRAY, "an array"),
            (Self::STRING, "a string"),
            (Self::INTEGER, "an integer"),
            (Self::NUMBER, "a number"),
            (Self::BOOLEAN, "a boolean"),
            (Self::NULL, "null"),
        ]
        .into_iter()
        .filter(|(bit, _)| self.0 & bit != 0)
        .map(|(_, name)| name)
        .collect();
        names.join(" or ")
    }
}

type NodeId = usize;

/// A numeric bound or value, exact for integers (an `i64` bound against a `u64` value must
/// not round through `f64`, nor an `i128` value sent as `1.7e38`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bound {
    Int(Wide),
    Float(f64),
}

impl Bound {
    fn of(number: &serde_json::Number) -> Option<Self> {
        if let Some(int) = number.as_i64() {
            Some(Self::Int(Wide::from_i128(i128::from(int))))
        } else if let Some(int) = number.as_u64() {
            Some(Self::Int(Wide::from_u128(u128::from(int))))
        } else {
            number.as_f64().map(Self::Float)
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Self::Int(int) => int.to_f64(),
            Self::Float(float) => float,
        }
    }

    fn cmp(self, other: Self) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.as_f64().partial_cmp(&b.as_f64()),
        }
    }

    fn text(self) -> String {
        match self {
            Self::Int(int) => int.to_string(),
            Self::Float(float) => number_text(float),
        }
    }
}

/// The range a fixed-width integer `format` (as schemars writes them) implies. serde
/// enforces these ranges by itself; the validator knows them to explain a refusal.
pub(crate) fn integer_format_range(format: &str) -> Option<(i128, i128)> {
    let range = match format {
        "int8" => (i128::from(i8::MIN), i128::from(i8::MAX)),
        "int16" => (i128::from(i16::MIN), i128::from(i16::MAX)),
        "int32" => (i128::from(i32::MIN), i128::from(i32::MAX)),
        "int64" | "int" => (i128::from(i64::MIN), i128::from(i64::MAX)),
        "int128" => (i128::MIN, i128::MAX),
        "uint8" => (0, i128::from(u8::MAX)),
        "uint16" => (0, i128::from(u16::MAX)),
        "uint32" => (0, i128::from(u32::MAX)),
        "uint64" | "uint" => (0, i128::from(u64::MAX)),
        "uint128" => (0, i128::MAX),
        _ => return None,
    };
    Some(range)
}

#[derive(Debug, Default)]
enum Additional {
    #[default]
    Allowed,
    Denied,
    Schema(NodeId),
}

/// One compiled schema: the keywords the runtime enforces.
#[derive(Debug, Default)]
struct Node {
    never: bool,
    types: Option<Types>,
    properties: Vec<(String, NodeId)>,
    required: Vec<String>,
    additional: Additional,
    items: Option<NodeId>,
    enum_values: Option<Vec<Value>>,
    any_of: Vec<NodeId>,
    one_of: Vec<NodeId>,
    all_of: Vec<NodeId>,
    reference: Option<NodeId>,
    minimum: Option<Bound>,
    maximum: Option<Bound>,
    exclusive_minimum: Option<Bound>,
    exclusive_maximum: Option<Bound>,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    unique_items: bool,
    pattern: Option<Regex>,
    format: Option<String>,
    /// The Rust integer type a fixed-width `format` names (`int64` → `i64`): its range is
    /// checked exactly, apart from the declared `minimum`/`maximum`.
    int_type: Option<IntType>,
    /// `"format": "float"`: an `f32`, which a finite number beyond its range would turn
    /// into infinity.
    float32: bool,
    /// `writeOnly: true`: an `#[arg(secret)]` value, never quoted in a problem report.
    secret: bool,
}

impl Node {
    /// An integer and not any number: a float here must be an exact integer.
    fn wants_integer(&self) -> bool {
        self.types
            .is_some_and(|types| types.0 & Types::INTEGER != 0 && types.0 & Types::NUMBER == 0)
    }
}

/// A tool's input schema compiled for checking arguments.
#[derive(Debug)]
pub struct Validator {
    nodes: Vec<Node>,
    root: NodeId,
    /// The schema declares constraints (ranges, lengths, patterns) that a successful serde
    /// decode does not prove, so valid-looking arguments are walked as well.
    check_after_decode: bool,
    /// The schema has an `f32`: serde turns a finite float beyond its range into infinity,
    /// so arguments holding a float are walked after a successful decode as well.
    has_float32: bool,
}

impl Validator {
    /// Compiles an input schema. Keywords the runtime does not enforce are ignored;
    /// `$ref`s into `$defs` are resolved (recursive types included).
    pub fn compile(schema: &Map<String, Value>) -> Self {
        let mut compiler = Compiler {
            nodes: Vec::new(),
            defs: schema.get("$defs").and_then(Value::as_object),
            def_ids: HashMap::new(),
            constrained: false,
        };
        let root = compiler.compile_object(schema);
        let has_float32 = compiler.nodes.iter().any(|node| node.float32);
        Self {
            nodes: compiler.nodes,
            root,
            check_after_decode: compiler.constrained,
            has_float32,
        }
    }

    /// Decodes `args` into `A`, or returns every problem found.
    ///
    /// Numbers are judged by their value: an integer parameter takes `5.0` as `5` when the
    /// float is an integer below 2^53 (so no rounding can have made it one), and refuses
    /// larger floats, which may have been rounded on the way. Served calls are judged by
    /// the literal the client sent instead (see [`NUMBER_LITERALS_META_KEY`]).
    pub fn decode<A: DeserializeOwned>(&self, args: &Value) -> Result<A, Vec<ArgIssue>> {
        self.decode_with(args, &NumberLiterals::default())
    }

    /// [`decode`](Self::decode), judging numbers by the `literals` the transport recorded.
    ///
    /// Numbers arrive exactly as sent or are refused, never rounded, clamped or truncated:
    /// - An integer parameter takes a float literal (`5.0`, `5e0`, `1.5e1`,
    ///   `9007199254740993.0`) when its exact decimal value is an integer within the
    ///   type's range, and receives exactly that integer; otherwise (a fraction, however
    ///   small, or out of range) the call is refused with the range and the literal.
    /// - `i128`/`u128` parameters receive their whole range exactly, beyond 64 bits too:
    ///   those arguments are decoded from JSON text rebuilt with the literals, since a
    ///   `serde_json::Value` holds only 64-bit integers.
    /// - An `f32` parameter refuses a finite number beyond its range (`1e39`), which serde
    ///   would turn into infinity.
    /// - An `f64` (and an `f32` in range) takes the IEEE nearest value of the decimal
    ///   literal, as every JSON parser does: that is what a float is. Literals beyond the
    ///   `f64` range (`1e400`) are refused by the JSON parser itself.
    pub(crate) fn decode_with<A: DeserializeOwned>(
        &self,
        args: &Value,
        literals: &NumberLiterals,
    ) -> Result<A, Vec<ArgIssue>> {
        if !args.is_object() {
            return Err(vec![ArgIssue {
                path: String::new(),
                code: IssueCode::NotAnObject,
                expected: "a JSON object with one entry per parameter".into(),
                received: Some(format!("{} ({})", preview(args), type_name(args))),
                hint: Some("send the arguments as an object, e.g. {\"name\": value}".into()),
            }]);
        }
        match A::deserialize(args) {
            Ok(decoded) => {
                if self.check_after_decode || (self.has_float32 && literal::has_float(args)) {
                    let issues = self.validate_with(args, Some(literals));
                    if !issues.is_empty() {
                        return Err(issues);
                    }
                }
                Ok(decoded)
            }
            Err(error) => {
                let issues = self.validate_with(args, Some(literals));
                if issues.is_empty() {
                    // JSON Schema counts `5.0` as an integer and so does the validator;
                    // serde does not. Send serde the exact integers the schema saw.
                    let mut normalized = args.clone();
                    let mut wide = HashMap::new();
                    let mut normalize = Normalize {
                        validator: self,
                        literals,
                        pointer: String::new(),
                        wide: &mut wide,
                    };
                    if normalize.integers(self.root, &mut normalized) {
                        let decoded = if wide.is_empty() {
                            A::deserialize(&normalized).ok()
                        } else {
                            // Integers beyond 64 bits: serde_json's text parser reads them
                            // exactly into `i128`/`u128`, a `Value` cannot hold them.
                            let mut text = String::new();
                            write_json(&normalized, &mut String::new(), &wide, literals, &mut text);
                            serde_json::from_str::<A>(&text).ok()
                        };
                        if let Some(decoded) = decoded {
                            return Ok(decoded);
                        }
                    }
                    // The schema is looser than the Rust type (a custom `Deserialize`):
                    // serde's own words are the best we have.
                    return Err(vec![ArgIssue {
                        path: String::new(),
                        code: IssueCode::Decode,
                        expected: "arguments the tool's types accept".into(),
                        received: None,
                        hint: Some(error.to_string()),
                    }]);
                }
                Err(issues)
            }
        }
    }

    /// Problems with the `default` values the schema publishes for its top-level
    /// properties: a default written as an expression is only known at run time.
    pub(crate) fn check_defaults(&self, schema: &Map<String, Value>) -> Vec<ArgIssue> {
        let Some(Value::Object(properties)) = schema.get("properties") else {
            return Vec::new();
        };
        let mut walk = Walk {
            nodes: &self.nodes,
            path: Vec::new(),
            issues: Vec::new(),
            literals: None,
            secret: false,
        };
        for (name, property) in properties {
            let Some(default) = property.get("default") else {
                continue;
            };
            let node = self.nodes[self.root]
                .properties
                .iter()
                .find(|(n, _)| n == name);
            if let Some((_, id)) = node {
                walk.path.push(Segment::Key(name));
                walk.check(*id, default);
                walk.path.pop();
            }
        }
        walk.issues
    }

    /// Every problem of `value` against the schema; empty when it conforms.
    pub fn validate(&self, value: &Value) -> Vec<ArgIssue> {
        self.validate_with(value, None)
    }

    fn validate_with(&self, value: &Value, literals: Option<&NumberLiterals>) -> Vec<ArgIssue> {
        let mut walk = Walk {
            nodes: &self.nodes,
            path: Vec::new(),
            issues: Vec::new(),
            literals,
            secret: false,
        };
        walk.check(self.root, value);
        walk.issues
    }
}

/// Rewrites the integers sent as floats (`5.0`, `9007199254740993.0`) as the exact
/// integers they are, wherever the schema expects an integer; those beyond 64 bits are
/// collected in `wide` by pointer, as digits.
struct Normalize<'v> {
    validator: &'v Validator,
    literals: &'v NumberLiterals,
    /// The JSON pointer of the value being normalized.
    pointer: String,
    wide: &'v mut HashMap<String, String>,
}

impl Normalize<'_> {
    /// Returns whether anything changed.
    fn integers(&mut self, id: NodeId, value: &mut Value) -> bool {
        let node = &self.validator.nodes[id];
        let mut changed = false;
        if let Some(reference) = node.reference {
            changed |= self.integers(reference, value);
        }
        for &branch in node.any_of.iter().chain(&node.one_of).chain(&node.all_of) {
            changed |= self.integers(branch, value);
        }
        match value {
            Value::Number(number) if node.wants_integer() && number.is_f64() => {
                let literal = self.literals.get(&self.pointer);
                if let IntegerView::Exact(int) = integer_view(number, literal) {
                    match int.to_json() {
                        Some(exact) => *value = exact,
                        None => {
                            self.wide.insert(self.pointer.clone(), int.to_string());
                        }
                    }
                    changed = true;
                }
            }
            Value::Object(object) => {
                for (key, item) in object.iter_mut() {
                    let sub = node
                        .properties
                        .iter()
                        .find(|(name, _)| name == key)
                        .map(|(_, sub)| *sub)
                        .or(match node.additional {
                            Additional::Schema(sub) => Some(sub),
                            _ => None,
                        });
                    if let Some(sub) = sub {
                        let len = self.pointer.len();
                        self.pointer.push('/');
                        self.pointer.push_str(&literal::pointer_segment(key));
                        changed |= self.integers(sub, item);
                        self.pointer.truncate(len);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = node.items {
                    for (index, item) in items.iter_mut().enumerate() {
                        let len = self.pointer.len();
                        let _ = write!(self.pointer, "/{index}");
                        changed |= self.integers(item_schema, item);
                        self.pointer.truncate(len);
                    }
                }
            }
            _ => {}
        }
        changed
    }
}

/// `value` as JSON text, with the integers in `wide` written out at their pointers and
/// every float that has a believed literal written as that literal, so that serde_json's
/// text parser reads exactly what the client sent.
fn write_json(
    value: &Value,
    pointer: &mut String,
    wide: &HashMap<String, String>,
    literals: &NumberLiterals,
    out: &mut String,
) {
    if let Some(digits) = wide.get(pointer.as_str()) {
        out.push_str(digits);
        return;
    }
    match value {
        Value::Object(object) => {
            out.push('{');
            for (index, (key, item)) in object.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&literal::pointer_segment(key));
                write_json(item, pointer, wide, literals, out);
                pointer.truncate(len);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                let len = pointer.len();
                let _ = write!(pointer, "/{index}");
                write_json(item, pointer, wide, literals, out);
                pointer.truncate(len);
            }
            out.push(']');
        }
        Value::Number(number) if number.is_f64() => {
            let literal = literals
                .get(pointer)
                .filter(|text| serde_json::from_str::<f64>(text).ok() == number.as_f64());
            match literal {
                Some(text) => out.push_str(text),
                None => out.push_str(&number.to_string()),
            }
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Limits that protect the server from arguments built to exhaust it. Checked before
/// decoding; a breach is an argument problem like any other, with the path of the value.
///
/// Keys longer than [`MAX_KEY_BYTES`](crate::MAX_KEY_BYTES), at any depth, are breaches
/// too (`too_large`), whatever these limits say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How deep objects and arrays may nest (the arguments object is depth 1).
    pub max_depth: usize,
    /// The longest string, in bytes.
    pub max_string_bytes: usize,
    /// The most items in one array (or entries in one object).
    pub max_items: usize,
}

impl Default for Limits {
    /// 32 levels, 1 MiB strings, 10,000 items.
    fn default() -> Self {
        Self {
            max_depth: 32,
            max_string_bytes: 1 << 20,
            max_items: 10_000,
        }
    }
}

impl Limits {
    /// Every breach of the limits in `args`, each with its path.
    pub fn check(&self, args: &Value) -> Vec<ArgIssue> {
        let mut walk = Walk {
            nodes: &[],
            path: Vec::new(),
            issues: Vec::new(),
            literals: None,
            secret: false,
        };
        walk.limits(self, args, 1);
        walk.issues
    }
}

struct Compiler<'s> {
    nodes: Vec<Node>,
    defs: Option<&'s Map<String, Value>>,
    def_ids: HashMap<String, NodeId>,
    constrained: bool,
}

impl<'s> Compiler<'s> {
    fn compile(&mut self, schema: &'s Value) -> NodeId {
        match schema {
            Value::Object(object) => self.compile_object(object),
            Value::Bool(false) => self.push(Node {
                never: true,
                ..Node::default()
            }),
            _ => self.push(Node::default()),
        }
    }

    fn push(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    fn compile_object(&mut self, schema: &'s Map<String, Value>) -> NodeId {
        // Reserve the id first so that a recursive `$ref` back to this node resolves.
        let id = self.push(Node::default());
        let mut node = Node::default();
        match schema.get("type") {
            Some(Value::String(name)) => node.types = Some(Types(Types::from_name(name))),
            Some(Value::Array(names)) => {
                let bits = names
                    .iter()
                    .filter_map(Value::as_str)
                    .fold(0, |bits, name| bits | Types::from_name(name));
                node.types = Some(Types(bits));
            }
            _ => {}
        }
        if let Some(Value::Object(properties)) = schema.get("properties") {
            for (name, sub) in properties {
                let sub = self.compile(sub);
                node.properties.push((name.clone(), sub));
            }
        }
        if let Some(Value::Array(required)) = schema.get("required") {
            node.required = required
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
        }
        node.additional = match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => Additional::Denied,
            Some(sub @ Value::Object(_)) => Additional::Schema(self.compile(sub)),
            _ => Additional::Allowed,
        };
        if let Some(items) = schema.get("items") {
            node.items = Some(self.compile(items));
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            node.enum_values = Some(values.clone());
        }
        if let Some(value) = schema.get("const") {
            node.enum_values = Some(vec![value.clone()]);
        }
        for (keyword, target) in [
            ("anyOf", &mut node.any_of),
            ("oneOf", &mut node.one_of),
            ("allOf", &mut node.all_of),
        ] {
            if let Some(Value::Array(branches)) = schema.get(keyword) {
                *target = branches.iter().map(|branch| self.compile(branch)).collect();
            }
        }
        if let Some(Value::String(reference)) = schema.get("$ref") {
            node.reference = self.resolve(reference);
        }
        node.secret = schema.get("writeOnly") == Some(&Value::Bool(true));
        self.constraints(schema, &mut node);
        self.nodes[id] = node;
        id
    }

    fn constraints(&mut self, schema: &Map<String, Value>, node: &mut Node) {
        let bound = |key: &str| match schema.get(key) {
            Some(Value::Number(number)) => Bound::of(number),
            _ => None,
        };
        let count = |key: &str| schema.get(key).and_then(Value::as_u64);
        // Bounds implied by a fixed-width integer type are the type's own: serde enforces
        // them, so they alone do not make the schema "constrained". They are checked as
        // the type's range (`int_type`); a declared bound equal to them (schemars writes
        // `minimum: 0` for unsigned types) is the same rule, not another one.
        let format = schema.get("format").and_then(Value::as_str);
        node.int_type = format.and_then(IntType::of_format);
        node.float32 = format == Some("float");
        let (implied_min, implied_max) = match node.int_type {
            Some(int_type) => (
                Some(Bound::Int(int_type.min)),
                Some(Bound::Int(int_type.max)),
            ),
            None => (None, None),
        };
        node.minimum = bound("minimum").filter(|declared| Some(*declared) != implied_min);
        node.maximum = bound("maximum").filter(|declared| Some(*declared) != implied_max);
        node.exclusive_minimum = bound("exclusiveMinimum");
        node.exclusive_maximum = bound("exclusiveMaximum");
        node.multiple_of = schema
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|step| *step > 0.0);
        node.min_length = count("minLength");
        node.max_length = count("maxLength");
        node.min_items = count("minItems");
        node.max_items = count("maxItems");
        node.unique_items = schema.get("uniqueItems") == Some(&Value::Bool(true));
        // A pattern that does not compile cannot be enforced; `#[mcp_tool]` rejects such
        // patterns at compile time, so this only skips hand-written schemas' mistakes.
        node.format = schema
            .get("format")
            .and_then(Value::as_str)
            .filter(|name| format::conforms(name, "").is_some())
            .map(str::to_owned);
        node.pattern = schema
            .get("pattern")
            .and_then(Value::as_str)
            .and_then(|pattern| Regex::new(pattern).ok());
        let declared_bounds = node.minimum.is_some() || node.maximum.is_some();
        if declared_bounds
            || node.exclusive_minimum.is_some()
            || node.exclusive_maximum.is_some()
            || node.multiple_of.is_some()
            || node.min_length.is_some()
            || node.max_length.is_some()
            || node.min_items.is_some()
            || node.max_items.is_some()
            || node.unique_items
            || node.pattern.is_some()
            || node.format.is_some()
            || node.enum_values.is_some()
        {
            self.constrained = true;
        }
    }

    fn resolve(&mut self, reference: &str) -> Option<NodeId> {
        let name = reference.strip_prefix("#/$defs/")?;
        if let Some(id) = self.def_ids.get(name) {
            return Some(*id);
        }
        let schema = self.defs?.get(name)?;
        // Register the id the compiled definition will get before compiling it, so that
        // a definition referring to itself finds it.
        let id = self.nodes.len();
        self.def_ids.insert(name.to_owned(), id);
        let compiled = self.compile(schema);
        debug_assert_eq!(compiled, id);
        Some(compiled)
    }
}

#[derive(Clone, Debug)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

struct Walk<'a> {
    nodes: &'a [Node],
    path: Vec<Segment<'a>>,
    issues: Vec<ArgIssue>,
    /// The number literals the transport recorded, to judge integers sent as floats.
    literals: Option<&'a NumberLiterals>,
    /// Inside a secret value: problems name its type, never its content.
    secret: bool,
}

/// What a number at an integer parameter is, as exactly as it can be known.
#[derive(Clone, Copy, Debug, PartialEq)]
enum IntegerView {
    /// Exactly this integer: a plain integer, a float whose literal says so, or an
    /// integral float below 2^53 (which no rounding can have produced from another
    /// integer).
    Exact(Wide),
    /// An integral float of 2^53 or more sent without its literal: close to this integer,
    /// but possibly rounded.
    Rounded(Wide),
    /// Beyond ±`u128::MAX`: outside every integer type.
    Huge { negative: bool },
    /// Not an integer.
    Fraction,
}

/// 2^53: below it, every integer is an `f64` of its own.
const EXACT_F64_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// The view of `number`, judged by `literal` when there is one that parses to the same
/// `f64` (serde_json's own parse, the one that produced the value): a literal that does
/// not is stale or forged, and ignored.
fn integer_view(number: &serde_json::Number, literal: Option<&str>) -> IntegerView {
    if let Some(int) = number.as_i64() {
        return IntegerView::Exact(Wide::from_i128(i128::from(int)));
    }
    if let Some(int) = number.as_u64() {
        return IntegerView::Exact(Wide::from_u128(u128::from(int)));
    }
    let Some(float) = number.as_f64() else {
        return IntegerView::Fraction;
    };
    if let Some(exact) = literal
        .filter(|text| serde_json::from_str::<f64>(text).ok() == Some(float))
        .and_then(number::exact)
    {
        return match exact {
            Exact::Integer(value) => IntegerView::Exact(value),
            Exact::Huge { negative } => IntegerView::Huge { negative },
            Exact::Fraction => IntegerView::Fraction,
        };
    }
    if float.fract() != 0.0 || !float.is_finite() {
        return IntegerView::Fraction;
    }
    match Wide::from_integral_f64(float) {
        Some(value) if float.abs() < EXACT_F64_INTEGERS => IntegerView::Exact(value),
        Some(value) => IntegerView::Rounded(value),
        None => IntegerView::Huge {
            negative: float < 0.0,
        },
    }
}

/// The JSON pointer (RFC 6901) of a path.
fn pointer_of(path: &[Segment<'_>]) -> String {
    let mut pointer = String::new();
    for segment in path {
        pointer.push('/');
        match segment {
            Segment::Key(key) => pointer.push_str(&literal::pointer_segment(key)),
            Segment::Index(index) => {
                let _ = write!(pointer, "{index}");
            }
        }
    }
    pointer
}

impl<'a> Walk<'a> {
    fn path(&self) -> String {
        let mut text = String::new();
        for segment in &self.path {
            match segment {
                // A key over the limit is quoted cut (`is_plain_key` would read it whole).
                Segment::Key(key) if key.len() > crate::echo::MAX_KEY_BYTES => {
                    let _ = write!(text, "[{}]", Value::String(crate::echo::key(key).into()));
                }
                Segment::Key(key) if is_plain_key(key) => {
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(key);
                }
                Segment::Key(key) => {
                    let _ = write!(text, "[{}]", Value::String((*key).to_owned()));
                }
                Segment::Index(index) => {
                    let _ = write!(text, "[{index}]");
                }
            }
        }
        text
    }

    fn report(
        &mut self,
        code: IssueCode,
        expected: String,
        received: Option<&Value>,
        hint: Option<String>,
    ) {
        let received = received.map(|value| self.received(value));
        self.report_as(code, expected, received, hint);
    }

    /// What came, for a message: a number as the client wrote it when the transport kept
    /// its literal, otherwise the value's compact JSON.
    fn received(&self, value: &Value) -> String {
        if self.secret {
            // Not even a prefix: a secret that fails a check is still a secret.
            return format!("{} ({})", crate::echo::REDACTED, type_name(value));
        }
        match self.literal_of(value) {
            Some(literal) => format!("{} (a number)", cut(literal.to_owned())),
            None => format!("{} ({})", preview(value), type_name(value)),
        }
    }

    /// The literal recorded for the float `value` at the current path, if it is believed
    /// (it parses to the same `f64`).
    fn literal_of(&self, value: &Value) -> Option<&'a str> {
        let Value::Number(number) = value else {
            return None;
        };
        let literals = self.literals.filter(|literals| !literals.is_empty())?;
        if !number.is_f64() {
            return None;
        }
        let float = number.as_f64()?;
        literals
            .get(&pointer_of(&self.path))
            .filter(|text| serde_json::from_str::<f64>(text).ok() == Some(float))
    }

    /// The integer view of the number `value` at the current path.
    fn integer_view(&self, number: &serde_json::Number, value: &Value) -> IntegerView {
        integer_view(number, self.literal_of(value))
    }

    fn report_as(
        &mut self,
        code: IssueCode,
        expected: String,
        received: Option<String>,
        hint: Option<String>,
    ) {
        self.issues.push(ArgIssue {
            path: self.path(),
            code,
            expected,
            received,
            hint,
        });
    }

    fn check(&mut self, id: NodeId, value: &'a Value) {
        if self.nodes[id].secret && !self.secret {
            self.secret = true;
            self.check_node(id, value);
            self.secret = false;
        } else {
            self.check_node(id, value);
        }
    }

    fn check_node(&mut self, id: NodeId, value: &'a Value) {
        let node = &self.nodes[id];
        if node.never {
            self.report(
                IssueCode::NoMatch,
                "nothing (no value is allowed here)".into(),
                Some(value),
                None,
            );
            return;
        }
        if let Some(reference) = node.reference {
            self.check(reference, value);
        }
        // An integer sent as a float is judged by what the client wrote, not by the `f64`
        // it became: `4611686018427387903.5` is not an integer, though its `f64` is.
        if let Value::Number(number) = value
            && number.is_f64()
            && node.wants_integer()
            && self.integer_view(number, value) == IntegerView::Fraction
        {
            let expected = match (node.int_type, node.types) {
                (Some(int_type), Some(types)) if types.allows_null() => {
                    format!("{} or null", int_type.describe())
                }
                (Some(int_type), _) => int_type.describe(),
                (None, Some(types)) => types.describe(),
                (None, None) => "an integer".to_owned(),
            };
            let received = self.received(value);
            self.report_as(
                IssueCode::Type,
                expected,
                Some(received),
                Some("send a whole number; this one has a fractional part".into()),
            );
            return;
        }
        if let Some(types) = node.types
            && !types.allows(value)
        {
            // The type hints quote the value ("send 1234 without quotes").
            let hint = if self.secret {
                None
            } else {
                type_hint(types, value)
            };
            let code = if value.is_null() {
                IssueCode::Null
            } else {
                IssueCode::Type
            };
            self.report(code, types.describe(), Some(value), hint);
            // The other keywords speak of a value of the right type: stop here.
            return;
        }
        if let Some(allowed) = &node.enum_values
            && !allowed.contains(value)
        {
            let expected = one_of_text(allowed);
            self.report(IssueCode::Enum, expected, Some(value), None);
            return;
        }
        for branch in node.all_of.clone() {
            self.check(branch, value);
        }
        if !node.any_of.is_empty() {
            self.check_branches(&node.any_of, value, false);
        }
        if !node.one_of.is_empty() {
            self.check_branches(&node.one_of, value, true);
        }
        match value {
            Value::Object(object) => self.check_object(id, object),
            Value::Array(items) => self.check_array(id, items, value),
            Value::String(text) => self.check_string(id, text, value),
            Value::Number(_) => self.check_number(id, value),
            _ => {}
        }
    }

    fn limits(&mut self, limits: &Limits, value: &'a Value, depth: usize) {
        match value {
            Value::String(text) if text.len() > limits.max_string_bytes => self.report(
                IssueCode::TooLarge,
                format!("a string of at most {} bytes", limits.max_string_bytes),
                Some(value),
                Some(format!("it has {} bytes; send less", text.len())),
            ),
            Value::Array(_) | Value::Object(_) if depth > limits.max_depth => self.report(
                IssueCode::TooDeep,
                format!("values nested at most {} levels deep", limits.max_depth),
                None,
                Some("flatten the structure".into()),
            ),
            Value::Array(items) if items.len() > limits.max_items => self.report(
                IssueCode::TooLarge,
                format!("at most {} items", limits.max_items),
                None,
                Some(format!("it has {}; send fewer", items.len())),
            ),
            Value::Object(object) if object.len() > limits.max_items => self.report(
                IssueCode::TooLarge,
                format!("at most {} entries", limits.max_items),
                None,
                Some(format!("it has {}; send fewer", object.len())),
            ),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.path.push(Segment::Index(index));
                    self.limits(limits, item, depth + 1);
                    self.path.pop();
                }
            }
            Value::Object(object) => {
                for (key, item) in object {
                    self.path.push(Segment::Key(key));
                    if key.len() > crate::echo::MAX_KEY_BYTES {
                        // Refused before any decode, did-you-mean or schema walk reads it;
                        // the path quotes it cut. Its value is not looked at.
                        self.issues.push(ArgIssue {
                            path: self.path(),
                            code: IssueCode::TooLarge,
                            expected: format!(
                                "a key of at most {} bytes",
                                crate::echo::MAX_KEY_BYTES
                            ),
                            received: Some(format!("a key of {} bytes", key.len())),
                            hint: Some("no parameter has a name this long; remove it".into()),
                        });
                    } else {
                        self.limits(limits, item, depth + 1);
                    }
                    self.path.pop();
                }
            }
            _ => {}
        }
    }

    /// `anyOf` / `oneOf`: when no branch fits, report the problems of the branch that came
    /// closest, so that `Option<Filter>` given a bad filter names the filter's bad field.
    fn check_branches(&mut self, branches: &[NodeId], value: &'a Value, exactly_one: bool) {
        let mut best: Option<Vec<ArgIssue>> = None;
        let mut matches = 0;
        for &branch in branches {
            let mut trial = Walk {
                nodes: self.nodes,
                path: self.path.clone(),
                issues: Vec::new(),
                literals: self.literals,
                secret: self.secret,
            };
            trial.check(branch, value);
            if trial.issues.is_empty() {
                matches += 1;
            } else if best
                .as_ref()
                .is_none_or(|top| rank(&trial.issues) < rank(top))
            {
                best = Some(trial.issues);
            }
        }
        if matches == 0 {
            let literals: Option<Vec<Value>> = branches
                .iter()
                .map(|&branch| self.literal_values(branch))
                .collect::<Option<Vec<Vec<Value>>>>()
                .map(|lists| lists.into_iter().flatten().collect());
            match (literals, best) {
                (Some(literals), _) => {
                    self.report(IssueCode::Enum, one_of_text(&literals), Some(value), None)
                }
                (None, Some(issues)) => self.issues.extend(issues),
                (None, None) => {}
            }
        } else if exactly_one && matches > 1 {
            self.report(
                IssueCode::NoMatch,
                "exactly one of the allowed shapes".into(),
                Some(value),
                Some("the value fits several shapes; add the field that tells them apart".into()),
            );
        }
    }

    /// The values a branch allows when it is a plain list of literals (`const`/`enum`).
    fn literal_values(&self, id: NodeId) -> Option<Vec<Value>> {
        let node = &self.nodes[id];
        if let Some(reference) = node.reference {
            return self.literal_values(reference);
        }
        node.enum_values.clone()
    }

    fn check_object(&mut self, id: NodeId, object: &'a Map<String, Value>) {
        let nodes = self.nodes;
        let node = &nodes[id];
        if node.types.is_none() && node.properties.is_empty() && node.required.is_empty() {
            if let Additional::Schema(sub) = node.additional {
                for (key, item) in object {
                    self.path.push(Segment::Key(key));
                    self.check(sub, item);
                    self.path.pop();
                }
            }
            return;
        }
        for required in &node.required {
            if !object.contains_key(required) {
                let expected = node
                    .properties
                    .iter()
                    .find(|(name, _)| name == required)
                    .map(|(_, sub)| self.expectation(*sub))
                    .unwrap_or_else(|| "a value".into());
                self.path.push(Segment::Key(required));
                self.report(
                    IssueCode::Missing,
                    expected,
                    None,
                    Some("this field is required".into()),
                );
                self.path.pop();
            }
        }
        for (key, item) in object {
            let known = node.properties.iter().find(|(name, _)| name == key);
            self.path.push(Segment::Key(key));
            match (known, &node.additional) {
                (Some((_, sub)), _) => {
                    let required = node.required.iter().any(|name| name == key);
                    if item.is_null() && required && !self.allows_null(*sub) {
                        let expected = self.expectation(*sub);
                        self.report(
                            IssueCode::Null,
                            expected,
                            Some(item),
                            Some("this field is required and cannot be null".into()),
                        );
                    } else {
                        self.check(*sub, item);
                    }
                }
                (None, Additional::Denied) => {
                    let names = node.properties.iter().map(|(name, _)| name.as_str());
                    let hint = match closest(key, names) {
                        Some(close) => format!("did you mean `{close}`?"),
                        None => "remove it".into(),
                    };
                    let valid: Vec<String> = node
                        .properties
                        .iter()
                        .map(|(name, _)| format!("`{name}`"))
                        .collect();
                    let expected = if valid.is_empty() {
                        "no fields".into()
                    } else {
                        format!("only the fields {}", valid.join(", "))
                    };
                    self.report(IssueCode::UnknownField, expected, Some(item), Some(hint));
                }
                (None, Additional::Schema(sub)) => self.check(*sub, item),
                (None, Additional::Allowed) => {}
            }
            self.path.pop();
        }
    }

    fn check_array(&mut self, id: NodeId, items: &'a [Value], value: &Value) {
        let node = &self.nodes[id];
        let (min, max, unique, item_schema) = (
            node.min_items,
            node.max_items,
            node.unique_items,
            node.items,
        );
        let len = items.len() as u64;
        if let Some(min) = min
            && len < min
        {
            self.report(
                IssueCode::MinLength,
                format!("at least {min} item{}", plural(min)),
                Some(value),
                Some(format!("it has {len}; add more")),
            );
        }
        if let Some(max) = max
            && len > max
        {
            self.report(
                IssueCode::MaxLength,
                format!("at most {max} item{}", plural(max)),
                Some(value),
                Some(format!("it has {len}; send fewer")),
            );
        }
        if unique {
            for (index, item) in items.iter().enumerate() {
                if let Some(first) = items[..index].iter().position(|earlier| earlier == item) {
                    self.path.push(Segment::Index(index));
                    self.report(
                        IssueCode::Unique,
                        "items that are all different".into(),
                        Some(item),
                        Some(format!("it repeats item {first}; remove the duplicate")),
                    );
                    self.path.pop();
                }
            }
        }
        if let Some(item_schema) = item_schema {
            for (index, item) in items.iter().enumerate() {
                self.path.push(Segment::Index(index));
                self.check(item_schema, item);
                self.path.pop();
            }
        }
    }

    fn check_string(&mut self, id: NodeId, text: &str, value: &Value) {
        let node = &self.nodes[id];
        let chars = text.chars().count() as u64;
        if let Some(min) = node.min_length
            && chars < min
        {
            self.report(
                IssueCode::MinLength,
                format!("at least {min} character{}", plural(min)),
                Some(value),
                None,
            );
        }
        if let Some(max) = node.max_length
            && chars > max
        {
            self.report(
                IssueCode::MaxLength,
                format!("at most {max} character{}", plural(max)),
                Some(value),
                Some(format!("it has {chars}; shorten it")),
            );
        }
        if let Some(format) = &node.format
            && format::conforms(format, text) == Some(false)
        {
            self.report(
                IssueCode::Format,
                format::describe(format),
                Some(value),
                None,
            );
        }
        if let Some(pattern) = &node.pattern
            && !pattern.is_match(text)
        {
            let expected = format!("text matching the pattern `{}`", pattern.as_str());
            self.report(IssueCode::Pattern, expected, Some(value), None);
        }
    }

    fn check_number(&mut self, id: NodeId, value: &Value) {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let node = &self.nodes[id];
        let Value::Number(raw) = value else { return };
        // At an integer parameter, the number's exact integer (a value beyond every type
        // compares as an infinity); elsewhere the number as it is.
        let view = node.wants_integer().then(|| self.integer_view(raw, value));
        let number = match view {
            Some(IntegerView::Exact(int) | IntegerView::Rounded(int)) => Bound::Int(int),
            Some(IntegerView::Huge { negative }) => Bound::Float(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }),
            // Reported by `check` already.
            Some(IntegerView::Fraction) => return,
            None => match Bound::of(raw) {
                Some(number) => number,
                None => return,
            },
        };
        let before = self.issues.len();
        let checks = [
            (
                node.minimum,
                IssueCode::Minimum,
                "at least",
                &[Greater, Equal][..],
            ),
            (
                node.maximum,
                IssueCode::Maximum,
                "at most",
                &[Less, Equal][..],
            ),
            (
                node.exclusive_minimum,
                IssueCode::Minimum,
                "greater than",
                &[Greater][..],
            ),
            (
                node.exclusive_maximum,
                IssueCode::Maximum,
                "less than",
                &[Less][..],
            ),
        ];
        for (bound, code, words, allowed) in checks {
            if let Some(bound) = bound
                && !number
                    .cmp(bound)
                    .is_some_and(|order| allowed.contains(&order))
            {
                self.report(code, format!("{words} {}", bound.text()), Some(value), None);
            }
        }
        // The type's own range, when no declared bound said more already.
        if let Some(view) = view
            && self.issues.len() == before
        {
            let int_type = node.int_type.unwrap_or(number::JSON_INTEGERS);
            let inside = match view {
                IntegerView::Exact(int) | IntegerView::Rounded(int) => int_type.holds(int),
                IntegerView::Huge { .. } | IntegerView::Fraction => false,
            };
            if !inside {
                let hint = match view {
                    IntegerView::Exact(int) | IntegerView::Rounded(int) if int < int_type.min => {
                        format!(
                            "it is below {}, the smallest {}",
                            int_type.min, int_type.name
                        )
                    }
                    IntegerView::Huge { negative: true } => {
                        format!(
                            "it is below {}, the smallest {}",
                            int_type.min, int_type.name
                        )
                    }
                    _ => format!(
                        "it is above {}, the largest {}",
                        int_type.max, int_type.name
                    ),
                };
                let hint = format!("{hint}; send a value in range (it is never clamped)");
                self.report(
                    IssueCode::Range,
                    int_type.describe(),
                    Some(value),
                    Some(hint),
                );
            } else if let IntegerView::Rounded(_) = view {
                self.report(
                    IssueCode::Inexact,
                    format!("{}, sent exactly", int_type.describe()),
                    Some(value),
                    Some(
                        "a float this large may already be rounded; write the integer out in \
                         full, without a fraction or exponent"
                            .into(),
                    ),
                );
            }
        }
        if node.float32 && !node.wants_integer() && number::overflows_f32(number.as_f64()) {
            self.report(
                IssueCode::Range,
                number::f32_range(),
                Some(value),
                Some(
                    "it is beyond the largest f32 and would become infinity; send a smaller number"
                        .into(),
                ),
            );
        }
        let number = number.as_f64();
        if let Some(step) = node.multiple_of {
            let quotient = number / step;
            if (quotient - quotient.round()).abs() > 1e-9 {
                self.report(
                    IssueCode::MultipleOf,
                    format!("a multiple of {}", number_text(step)),
                    Some(value),
                    None,
                );
            }
        }
    }

    fn allows_null(&self, id: NodeId) -> bool {
        let mut trial = Walk {
            nodes: self.nodes,
            path: Vec::new(),
            issues: Vec::new(),
            literals: None,
            secret: false,
        };
        trial.check(id, &Value::Null);
        trial.issues.is_empty()
    }

    /// What a schema node expects, in words, for "missing" and "null" messages.
    fn expectation(&self, id: NodeId) -> String {
        let node = &self.nodes[id];
        if let Some(types) = node.types {
            return types.describe();
        }
        if let Some(values) = &node.enum_values {
            return one_of_text(values);
        }
        if let Some(reference) = node.reference {
            return self.expectation(reference);
        }
        let branches = if node.any_of.is_empty() {
            &node.one_of
        } else {
            &node.any_of
        };
        if !branches.is_empty() {
            let mut words: Vec<String> = branches
                .iter()
                .map(|&branch| self.expectation(branch))
                .collect();
            words.dedup();
            return words.join(" or ");
        }
        "a value".into()
    }
}

/// Orders candidate explanations: fewer problems first, then deeper ones (a problem inside
/// the value explains more than "wrong type" at the value itself).
fn rank(issues: &[ArgIssue]) -> (usize, usize) {
    let shallow = issues
        .iter()
        .filter(|issue| issue.code == IssueCode::Type)
        .count();
    (shallow, issues.len())
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

fn number_text(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        format!("{}", number as i64)
    } else {
        number.to_string()
    }
}

fn one_of_text(values: &[Value]) -> String {
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    match listed.as_slice() {
        [single] => format!("exactly {single}"),
        _ => format!("one of {}", listed.join(", ")),
    }
}

/// A fix for the commonest type mistakes: a number or boolean in quotes, a lone item for a
/// list, a number where text goes.
fn type_hint(types: Types, value: &Value) -> Option<String> {
    let wants_number = types.0 & (Types::INTEGER | Types::NUMBER) != 0;
    match value {
        Value::String(text) if wants_number => {
            let trimmed = text.trim();
            match trimmed.parse::<f64>() {
                Ok(number) if types.0 & Types::NUMBER == 0 && number.fract() != 0.0 => {
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
        Value::String(text)
            if types.0 & Types::BOOLEAN != 0 && matches!(text.as_str(), "true" | "false") =>
        {
            Some(format!("send {text} without quotes"))
        }
        Value::Number(_) if types.0 & Types::INTEGER != 0 && types.0 & Types::NUMBER == 0 => {
            Some("send a whole number".into())
        }
        Value::Number(_) | Value::Bool(_) if types.0 & Types::STRING != 0 => {
            Some(format!("send it as a JSON string: \"{value}\""))
        }
        _ if types.0 & Types::ARRAY != 0 && !value.is_array() && !value.is_null() => {
            Some(format!("wrap it in a list: [{}]", preview(value)))
        }
        _ if types.allows_null() => None,
        Value::Null => {
            Some("this field cannot be null; send a value or leave it out if it is optional".into())
        }
        _ => None,
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

/// Decodes a map of named arguments (a prompt's arguments, a URI template's variables)
/// into `T`. An empty map also decodes as `null`, so `()` and unit structs take no
/// arguments.
pub(crate) fn decode_map<T: DeserializeOwned>(map: Map<String, Value>) -> Result<T, String> {
    let empty = map.is_empty();
    match serde_json::from_value(Value::Object(map)) {
        Ok(decoded) => Ok(decoded),
        Err(error) if empty => serde_json::from_value(Value::Null).map_err(|_| error.to_string()),
        Err(error) => Err(error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn validator(schema: Value) -> Validator {
        match schema {
            Value::Object(object) => Validator::compile(&object),
            _ => unreachable!("test schemas are objects"),
        }
    }

    #[test]
    fn reports_every_problem_with_its_path() {
        let v = validator(json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "b": {"type": "integer"},
                "nested": {"type": "object", "properties": {"limit": {"type": "integer", "maximum": 50}},
                           "additionalProperties": false}
            },
            "required": ["a", "b"],
            "additionalProperties": false
        }));
        let issues = v.validate(&json!({"a": "10", "nested": {"limit": 99, "lmit": 1}, "c": 1}));
        let summary: Vec<(String, IssueCode)> =
            issues.iter().map(|i| (i.path.clone(), i.code)).collect();
        assert_eq!(
            summary,
            vec![
                ("b".to_owned(), IssueCode::Missing),
                ("a".to_owned(), IssueCode::Type),
                ("nested.limit".to_owned(), IssueCode::Maximum),
                ("nested.lmit".to_owned(), IssueCode::UnknownField),
                ("c".to_owned(), IssueCode::UnknownField),
            ]
        );
        assert_eq!(issues[1].hint.as_deref(), Some("send 10 without quotes"));
        assert_eq!(issues[3].hint.as_deref(), Some("did you mean `limit`?"));
    }

    #[test]
    fn array_items_get_an_index() {
        let v = validator(json!({"type": "array", "items": {"type": "string"}}));
        let issues = v.validate(&json!(["ok", 3]));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "[1]");
    }

    #[test]
    fn closest_folds_case_and_separators() {
        let names = ["user_id", "limit"];
        assert_eq!(closest("userId", names.iter().copied()), Some("user_id"));
        assert_eq!(closest("limt", names.iter().copied()), Some("limit"));
        assert_eq!(closest("zzz", names.iter().copied()), None);
    }

    #[test]
    fn previews_are_truncated() {
        let long = Value::String("x".repeat(500));
        assert!(preview(&long).chars().count() <= PREVIEW_CHARS + 1);
    }

    #[test]
    fn previews_are_exact_when_short_and_cut_when_long() {
        assert_eq!(preview(&json!({"a": [1, "b"]})), r#"{"a":[1,"b"]}"#);
        // Exactly the preview's length: shown whole, no ellipsis.
        let fits = Value::String("y".repeat(PREVIEW_CHARS - 2));
        assert_eq!(
            preview(&fits),
            format!("\"{}\"", "y".repeat(PREVIEW_CHARS - 2))
        );
        // One character more: cut, with an ellipsis.
        let over = Value::String("y".repeat(PREVIEW_CHARS - 1));
        assert_eq!(
            preview(&over),
            format!("\"{}…", "y".repeat(PREVIEW_CHARS - 1))
        );
        // Huge strings and keys, anywhere, cost what short ones do, and cut on characters.
        let giant = "é".repeat(1 << 20);
        let nested = json!([{ giant.clone(): giant.clone() }]);
        let shown = preview(&nested);
        assert!(shown.starts_with("[{\"ééé"), "{shown}");
        assert!(shown.ends_with('…'), "{shown}");
        assert_eq!(shown.chars().count(), PREVIEW_CHARS + 1);
        let many = Value::Array(vec![Value::from(1); 1 << 20]);
        assert_eq!(preview(&many).chars().count(), PREVIEW_CHARS + 1);
    }

    #[test]
    fn suggestions_only_for_bounded_words() {
        let names = ["user_id", "limit"];
        let giant = format!("user_id{}", "x".repeat(crate::echo::MAX_KEY_BYTES));
        assert_eq!(closest(&giant, names.iter().copied()), None);
        let near = format!("user_i{}", "d".repeat(3));
        assert_eq!(closest(&near, names.iter().copied()), Some("user_id"));
    }

    #[test]
    fn giant_keys_are_refused_before_decoding_and_quoted_cut() {
        let key = "k".repeat(crate::echo::MAX_KEY_BYTES + 1);
        let args = json!({"ok": 1, "nested": {key.clone(): 2}});
        let issues = Limits::default().check(&args);
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].code, IssueCode::TooLarge);
        assert_eq!(
            issues[0].path,
            format!("nested[\"{}… (257 bytes in all)\"]", "k".repeat(60))
        );
        // At the limit: accepted.
        let fits = json!({"k".repeat(crate::echo::MAX_KEY_BYTES): 1});
        assert!(Limits::default().check(&fits).is_empty());
    }

    #[test]
    fn secret_values_are_never_quoted() {
        let v = validator(json!({
            "type": "object",
            "properties": {
                "pin": {"type": "integer", "writeOnly": true},
                "creds": {"type": "object", "properties": {
                    "token": {"type": "string", "pattern": "^[0-9]+$", "writeOnly": true}}}
            }
        }));
        let issues = v.validate(&json!({"pin": "1234", "creds": {"token": "abc-secret"}}));
        assert_eq!(issues.len(), 2, "{issues:?}");
        for issue in &issues {
            assert_eq!(
                issue
                    .received
                    .as_deref()
                    .map(|r| r.starts_with("[redacted] (")),
                Some(true)
            );
            let shown = format!("{issue:?}");
            assert!(
                !shown.contains("1234") && !shown.contains("abc-secret"),
                "{shown}"
            );
        }
        // The type hint would have quoted the PIN ("send 1234 without quotes").
        assert_eq!(issues[0].hint, None);
    }

    #[test]
    fn recursive_definitions_compile() {
        let v = validator(json!({
            "$ref": "#/$defs/Tree",
            "$defs": {"Tree": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}}
        }));
        let issues = v.validate(&json!({"children": [{"children": [{"children": 5}]}]}));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].path, "children[0].children[0].children");
    }
}
