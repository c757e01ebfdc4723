//! The schemas of a tool or an action, walked node by node and rated from the caller's
//! side. An input schema is rated by what it accepts: a rule that refuses a call that
//! worked is Breaking. An output schema is rated the other way round, by what the caller
//! may now receive. Top-level properties are parameters (`limit`), nested ones are dotted
//! (`filter.limit`), array items end in `[]` (`tags[]`).
//!
//! A file of its own so that neither it nor `diff.rs` passes the layout's 600 lines. It
//! adds [`Report::schemas`] to the parent's `Report`, so `diff.rs` names nothing of it
//! and the two do not import each other.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

use serde_json::{Map, Value};

use super::{Report, Severity, short};
use crate::contract::model::ToolContract;

impl Report<'_> {
    /// The changes of a tool's (or an action's) input and output schemas.
    pub(super) fn schemas(&mut self, old: &ToolContract, new: &ToolContract) {
        let input = Spot::root(Side::Input);
        match (&old.input_schema, &new.input_schema) {
            (Some(old), Some(new)) => schema(self, &input, old, new),
            (None, Some(_)) => self.push(Severity::Risky, "an input schema was added"),
            (Some(_), None) => self.push(Severity::Risky, "the input schema was removed"),
            (None, None) => {}
        }
        let output = Spot::root(Side::Output);
        match (&old.output_schema, &new.output_schema) {
            (Some(old), Some(new)) => schema(self, &output, old, new),
            (None, Some(_)) => self.push(Severity::Safe, "an output schema was added"),
            // A caller reading the structured result finds none.
            (Some(_), None) => self.push(Severity::Breaking, "the output schema was removed"),
            (None, None) => {}
        }
    }
}

/// Which schema a node is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// The arguments a caller sends.
    Input,
    /// The structured result a caller reads.
    Output,
}

/// How a keyword's change moves the set of values a node allows.
#[derive(Clone, Copy)]
enum Effect {
    /// Fewer values: a bound added or raised, an enum value gone.
    Tighter,
    /// More values: a bound removed or lowered, an enum value added.
    Looser,
    /// Other values (a `pattern` changed): some allowed before are not now.
    Different,
}

/// Where a schema node is: its schema, and its path there (empty for the schema itself).
struct Spot {
    /// The schema.
    side: Side,
    /// `filter.limit`, `tags[]`; empty for the schema itself.
    path: String,
}

impl Spot {
    /// The node at `path` of the `side` schema.
    fn new(side: Side, path: String) -> Self {
        Self { side, path }
    }

    /// The schema itself.
    fn root(side: Side) -> Self {
        Self::new(side, String::new())
    }

    /// A property of this node: `name` at the top, `parent.name` below.
    fn child(&self, name: &str) -> Self {
        match self.path.as_str() {
            "" => Self::new(self.side, name.to_owned()),
            path => Self::new(self.side, format!("{path}.{name}")),
        }
    }

    /// The items of this (array) node.
    fn items(&self) -> Self {
        Self::new(self.side, format!("{}[]", self.path))
    }

    /// How the node reads in a message: a parameter, an output field, or the schema.
    fn label(&self) -> String {
        match (self.side, self.path.as_str()) {
            (Side::Input, "") => "the input schema".to_owned(),
            (Side::Output, "") => "the output schema".to_owned(),
            (Side::Input, path) => format!("parameter `{path}`"),
            (Side::Output, path) => format!("output field `{path}`"),
        }
    }

    /// The severity of a change with this effect here. In the input only a looser rule is
    /// Safe: any other refuses a call that worked. In the output a tighter rule is Safe
    /// (the caller gets a part of what it handled), any other Risky: the caller may
    /// receive a value it never saw.
    fn rate(&self, effect: Effect) -> Severity {
        match (self.side, effect) {
            (Side::Input, Effect::Looser) | (Side::Output, Effect::Tighter) => Severity::Safe,
            (Side::Input, _) => Severity::Breaking,
            (Side::Output, _) => Severity::Risky,
        }
    }

    /// Records a change of this node, the message led by its label.
    fn push(&self, report: &mut Report, severity: Severity, message: impl Display) {
        report.push(severity, format!("{}: {message}", self.label()));
    }

    /// Records a keyword added (tighter), removed (looser) or changed, rated here.
    fn keyword(&self, report: &mut Report, key: &str, old: Option<&Value>, new: Option<&Value>) {
        if let Some((effect, message)) = describe(key, old, new) {
            self.push(report, self.rate(effect), message);
        }
    }
}

/// A schema node's keywords, with the JSON types it accepts taken apart: `type` as a set
/// (with `null` when a nullable `anyOf` says so), so that `"type": ["string", "null"]` and
/// schemars' `anyOf: [{"type": "string"}, {"type": "null"}]` compare equal.
struct Node {
    /// Every keyword but a parsed `type` (and a nullable `anyOf`, merged in).
    keywords: Map<String, Value>,
    /// `None` when the node names no type (any, or as its branches say).
    types: Option<BTreeSet<String>>,
    /// A node with no `type` made nullable by an `anyOf` with a `null` branch.
    null: bool,
}

impl Node {
    /// The node of a schema object; `None` for `true`, `false` or anything else.
    fn read(schema: &Value) -> Option<Self> {
        let mut keywords = schema.as_object()?.clone();
        let nullable = non_null_branch(&keywords);
        if let Some(branch) = &nullable {
            keywords.remove("anyOf");
            // The outer keywords (the field's own description) win over the branch's.
            for (key, value) in branch {
                keywords.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
        let mut types: Option<BTreeSet<String>> = match keywords.get("type") {
            Some(Value::String(name)) => Some(BTreeSet::from([name.clone()])),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect(),
            _ => None,
        };
        if let Some(types) = &mut types {
            keywords.remove("type");
            if nullable.is_some() {
                types.insert("null".to_owned());
            }
        }
        let null = types.is_none() && nullable.is_some();
        Some(Self {
            keywords,
            types,
            null,
        })
    }

    /// One keyword's value.
    fn get(&self, key: &str) -> Option<&Value> {
        self.keywords.get(key)
    }
}

/// The other branch of `anyOf: [X, {"type": "null"}]` (either order), schemars' nullable.
fn non_null_branch(keywords: &Map<String, Value>) -> Option<Map<String, Value>> {
    let branches = keywords.get("anyOf")?.as_array()?;
    let null = serde_json::json!({"type": "null"});
    match branches.as_slice() {
        [first, second] if *second == null => first.as_object().cloned(),
        [first, second] if *first == null => second.as_object().cloned(),
        _ => None,
    }
}

/// Keywords that only describe: a title is Cosmetic; the model reads the description and
/// fills in arguments by the default.
const NOTES: [(&str, Severity); 3] = [
    ("title", Severity::Cosmetic),
    ("description", Severity::Risky),
    ("default", Severity::Risky),
];

/// The bounds, lower and upper: raising a lower one, or lowering an upper one, refuses
/// values that passed.
const BOUNDS: [(&str, &str); 5] = [
    ("minimum", "maximum"),
    ("exclusiveMinimum", "exclusiveMaximum"),
    ("minLength", "maxLength"),
    ("minItems", "maxItems"),
    ("minProperties", "maxProperties"),
];

/// Keywords any change of which refuses some value that passed (`multipleOf` 2 to 3
/// refuses 4, a new `format` refuses a string that was not one).
const EXACT: [&str; 4] = ["pattern", "format", "multipleOf", "const"];

/// Whether a rule rates `key` (those above, and the structure's below); any other keyword
/// that differs is Risky.
fn rated(key: &str) -> bool {
    let structure = [
        "enum",
        "properties",
        "required",
        "additionalProperties",
        "items",
    ];
    NOTES.iter().any(|(note, _)| *note == key)
        || BOUNDS
            .iter()
            .any(|bounds| bounds.0 == key || bounds.1 == key)
        || EXACT.contains(&key)
        || structure.contains(&key)
        || key == "anyOf"
        || key == "oneOf"
}

/// Every difference between two schema nodes, and between their children.
fn schema(report: &mut Report, spot: &Spot, old: &Value, new: &Value) {
    if old == new {
        return;
    }
    let (Some(old), Some(new)) = (Node::read(old), Node::read(new)) else {
        return spot.push(report, Severity::Risky, "its schema changed");
    };
    for (key, severity) in NOTES {
        if let Some((_, message)) = describe(key, old.get(key), new.get(key)) {
            spot.push(report, severity, message);
        }
    }
    types(report, spot, &old, &new);
    for (lower, upper) in BOUNDS {
        bound(report, spot, (lower, true), old.get(lower), new.get(lower));
        bound(report, spot, (upper, false), old.get(upper), new.get(upper));
    }
    for key in EXACT {
        spot.keyword(report, key, old.get(key), new.get(key));
    }
    enumeration(report, spot, old.get("enum"), new.get("enum"));
    object(report, spot, &old, &new);
    let key = "additionalProperties";
    additional(report, spot, old.get(key), new.get(key));
    match (old.get("items"), new.get("items")) {
        (Some(old), Some(new)) => schema(report, &spot.items(), old, new),
        (old, new) => spot.keyword(report, "items", old, new),
    }
    for key in ["anyOf", "oneOf"] {
        branches(report, spot, key, old.get(key), new.get(key));
    }
    let keys: BTreeSet<&String> = old.keywords.keys().chain(new.keywords.keys()).collect();
    for key in keys.into_iter().filter(|key| !rated(key)) {
        if old.get(key) != new.get(key) {
            let message = format!("its schema changed (`{key}`)");
            spot.push(report, Severity::Risky, message);
        }
    }
}

/// A keyword added (tighter), removed (looser) or changed, with its message; `None` when
/// it did not change.
fn describe(key: &str, old: Option<&Value>, new: Option<&Value>) -> Option<(Effect, String)> {
    match (old, new) {
        (Some(old), Some(new)) if old != new => Some((
            Effect::Different,
            format!("`{key}` changed{}", from_to(old, new)),
        )),
        (None, Some(new)) => Some((Effect::Tighter, format!("`{key}` added{}", aside("", new)))),
        (Some(old), None) => Some((
            Effect::Looser,
            format!("`{key}` removed{}", aside("was ", old)),
        )),
        _ => None,
    }
}

/// A value as a message shows it: a number bare, anything else in backticks; `None` when
/// it is too long.
fn show(value: &Value) -> Option<String> {
    match value {
        Value::Number(number) => Some(number.to_string()),
        Value::String(text) => short(text),
        other => short(&other.to_string()),
    }
}

/// ` from <old> to <new>`, or nothing when either is too long.
fn from_to(old: &Value, new: &Value) -> String {
    match (show(old), show(new)) {
        (Some(old), Some(new)) => format!(" from {old} to {new}"),
        _ => String::new(),
    }
}

/// ` (<value>)` led by `lead`, or nothing when the value is too long.
fn aside(lead: &str, value: &Value) -> String {
    show(value).map_or_else(String::new, |value| format!(" ({lead}{value})"))
}

/// The JSON types accepted, as sets: `number` to `integer` narrows (`integer` is a kind of
/// `number`), `["string", "null"]` to `string` narrows, `string` to `integer` changes.
fn types(report: &mut Report, spot: &Spot, old: &Node, new: &Node) {
    let effect = match (&old.types, &new.types) {
        (Some(old), Some(new)) => {
            let lost = old.iter().any(|name| !accepts(new, name));
            let gained = new.iter().any(|name| !accepts(old, name));
            match (lost, gained) {
                (false, false) => return,
                (false, true) => Effect::Looser,
                (true, false) => Effect::Tighter,
                (true, true) => Effect::Different,
            }
        }
        (None, Some(_)) => Effect::Tighter,
        (Some(_), None) => Effect::Looser,
        (None, None) if old.null && !new.null => {
            return spot.push(report, spot.rate(Effect::Tighter), "no longer accepts null");
        }
        (None, None) if new.null && !old.null => {
            return spot.push(report, spot.rate(Effect::Looser), "now accepts null");
        }
        (None, None) => return,
    };
    let verb = match effect {
        Effect::Tighter => "narrowed",
        Effect::Looser => "widened",
        Effect::Different => "changed",
    };
    // An output field of a type the caller never saw breaks the code that reads it.
    let severity = match (spot.side, effect) {
        (Side::Output, Effect::Looser | Effect::Different) => Severity::Breaking,
        _ => spot.rate(effect),
    };
    let (from, to) = (type_names(&old.types), type_names(&new.types));
    let message = format!("type {verb} from `{from}` to `{to}`");
    spot.push(report, severity, message);
}

/// Whether a set of JSON types accepts values of the type `name`.
fn accepts(types: &BTreeSet<String>, name: &str) -> bool {
    types.contains(name) || (name == "integer" && types.contains("number"))
}

/// A set of types as a message shows it: `string or null`, or `any`.
fn type_names(types: &Option<BTreeSet<String>>) -> String {
    let Some(types) = types else {
        return "any".to_owned();
    };
    let names: Vec<&str> = types.iter().map(String::as_str).collect();
    names.join(" or ")
}

/// A bound (`lower` says which kind): raising a lower one, or lowering an upper one,
/// tightens.
fn bound(
    report: &mut Report,
    spot: &Spot,
    (key, lower): (&str, bool),
    old: Option<&Value>,
    new: Option<&Value>,
) {
    let (Some(old), Some(new)) = (old, new) else {
        return spot.keyword(report, key, old, new);
    };
    let (Some(from), Some(to)) = (old.as_f64(), new.as_f64()) else {
        return spot.keyword(report, key, Some(old), Some(new));
    };
    // `5` and `5.0` are the same bound.
    if from == to {
        return;
    }
    let tighter = (to > from) == lower;
    let (effect, verb) = if tighter {
        (Effect::Tighter, "tightened")
    } else {
        (Effect::Looser, "loosened")
    };
    let message = format!("`{key}` {verb}{}", from_to(old, new));
    spot.push(report, spot.rate(effect), message);
}

/// The `enum` values: each one removed, and each one added, is a change of its own.
fn enumeration(report: &mut Report, spot: &Spot, old: Option<&Value>, new: Option<&Value>) {
    let Some((gone, came)) = arrays(old, new) else {
        return spot.keyword(report, "enum", old, new);
    };
    for value in gone {
        let message = format!("enum value {} removed", show(value).unwrap_or_default());
        spot.push(report, spot.rate(Effect::Tighter), message);
    }
    for value in came {
        let message = format!("enum value {} added", show(value).unwrap_or_default());
        spot.push(report, spot.rate(Effect::Looser), message);
    }
}

/// An object's properties, compared by name, and which of them are required.
fn object(report: &mut Report, spot: &Spot, old: &Node, new: &Node) {
    let (old_schemas, new_schemas) = (properties(old), properties(new));
    let (old_required, new_required) = (required(old), required(new));
    let names: BTreeSet<&str> = old_schemas
        .keys()
        .chain(new_schemas.keys())
        .copied()
        .collect();
    for name in names {
        let child = spot.child(name);
        let required = (old_required.contains(name), new_required.contains(name));
        match (old_schemas.get(name), new_schemas.get(name)) {
            (Some(old), Some(new)) => {
                schema(report, &child, old, new);
                requirement(report, &child, required);
            }
            (old, new) => presence(report, &child, (old.is_some(), new.is_some()), required.1),
        }
    }
}

/// An object's properties by name; a required name with no schema counts as one that
/// accepts anything.
fn properties(node: &Node) -> BTreeMap<&str, &Value> {
    static ANY: Value = Value::Bool(true);
    let schemas = node
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten();
    let mut properties: BTreeMap<&str, &Value> = schemas
        .map(|(name, schema)| (name.as_str(), schema))
        .collect();
    for name in required(node) {
        properties.entry(name).or_insert(&ANY);
    }
    properties
}

/// The names an object requires.
fn required(node: &Node) -> BTreeSet<&str> {
    let names = node
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    names.filter_map(Value::as_str).collect()
}

/// A property added or removed.
fn presence(report: &mut Report, child: &Spot, (was, is): (bool, bool), required: bool) {
    let label = child.label();
    let (severity, message) = match (was, is, child.side) {
        // Fusion refuses unknown arguments, so a caller still sending a removed parameter
        // fails; a caller reading a removed output field finds nothing.
        (true, false, _) => (Severity::Breaking, format!("{label} was removed")),
        // A caller that does not send a new required parameter is refused.
        (false, true, Side::Input) if required => {
            (Severity::Breaking, format!("{label} was added as required"))
        }
        (false, true, Side::Input) => (Severity::Safe, format!("optional {label} was added")),
        (false, true, Side::Output) => (Severity::Safe, format!("{label} was added")),
        _ => return,
    };
    report.push(severity, message);
}

/// A property kept that became required or optional.
fn requirement(report: &mut Report, child: &Spot, (was, is): (bool, bool)) {
    let label = child.label();
    let (severity, message) = match (was, is, child.side) {
        (false, true, Side::Input) => (Severity::Breaking, format!("{label} became required")),
        (true, false, Side::Input) => (Severity::Safe, format!("{label} became optional")),
        // A caller reading an output field that may now be missing fails when it is.
        (true, false, Side::Output) => (Severity::Breaking, format!("{label} may now be absent")),
        (false, true, Side::Output) => (Severity::Safe, format!("{label} is now always present")),
        _ => return,
    };
    report.push(severity, message);
}

/// `additionalProperties`: absent or `true` lets every other property through, a schema
/// some, `false` none (and fusion then refuses a call that sends one).
fn additional(report: &mut Report, spot: &Spot, old: Option<&Value>, new: Option<&Value>) {
    let openness = |value: Option<&Value>| match value {
        None | Some(Value::Bool(true)) => 2,
        Some(Value::Bool(false)) => 0,
        Some(_) => 1,
    };
    let (effect, message) = match (openness(old), openness(new)) {
        (_, 0) if old != new => (Effect::Tighter, "other properties are no longer allowed"),
        (2, 1) => (Effect::Tighter, "other properties are now constrained"),
        (_, 2) if openness(old) != 2 => (Effect::Looser, "other properties are now allowed"),
        (0, 1) => (
            Effect::Looser,
            "other properties are now allowed if they match a schema",
        ),
        _ => {
            if let (Some(old), Some(new)) = (old, new) {
                schema(report, &spot.child("*"), old, new);
            }
            return;
        }
    };
    spot.push(report, spot.rate(effect), message);
}

/// `anyOf` or `oneOf` (other than the nullable form [`Node::read`] takes apart), compared
/// as a set of branches. As many gone as came are edits: each is compared with its
/// counterpart, in order, so a variant whose description changed reads as that. Otherwise
/// a branch gone narrows (a value only it took is refused), erring towards Breaking
/// rather than missing a break; only branches added widen.
fn branches(report: &mut Report, spot: &Spot, key: &str, old: Option<&Value>, new: Option<&Value>) {
    let Some((gone, came)) = arrays(old, new) else {
        return spot.keyword(report, key, old, new);
    };
    let (removed, added) = (gone.len(), came.len());
    let message = format!("`{key}`: {removed} branch(es) removed, {added} added");
    if gone.len() == came.len() {
        for (old, new) in gone.into_iter().zip(came) {
            schema(report, spot, old, new);
        }
    } else if !gone.is_empty() {
        spot.push(report, spot.rate(Effect::Tighter), message);
    } else if key == "oneOf" {
        // `oneOf` refuses a value that matches two branches: a new one may overlap an old.
        spot.push(report, Severity::Risky, message);
    } else {
        spot.push(report, spot.rate(Effect::Looser), message);
    }
}

/// The items of two arrays: those only in the old one, and those only in the new one;
/// `None` unless both are arrays.
fn arrays<'v>(
    old: Option<&'v Value>,
    new: Option<&'v Value>,
) -> Option<(Vec<&'v Value>, Vec<&'v Value>)> {
    let (old, new) = (old?.as_array()?, new?.as_array()?);
    let only = |one: &'v [Value], other: &[Value]| -> Vec<&'v Value> {
        one.iter().filter(|item| !other.contains(item)).collect()
    };
    Some((only(old, new), only(new, old)))
}
