//! The schema compiler: a tool's input schema, once, at registration, into a [`Validator`]
//! (one [`Node`] per schema object, `$ref`s resolved, recursive types included), and the
//! validator's checks of a whole value. Decoding is in `arguments.rs`.

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

use crate::failure::issue::ArgIssue;

use super::{
    format,
    literal::NumberLiterals,
    node::{Additional, Bound, Node, NodeId, Types},
    number::IntType,
    walk::{Segment, Walk},
};

/// A tool's input schema compiled for checking arguments.
#[derive(Debug)]
pub struct Validator {
    pub(super) nodes: Vec<Node>,
    pub(super) root: NodeId,
    /// The schema declares constraints (ranges, lengths, patterns) that a successful serde
    /// decode does not prove, so valid-looking arguments are walked as well.
    pub(super) check_after_decode: bool,
    /// The schema has an `f32`: serde turns a finite float beyond its range into infinity,
    /// so arguments holding a float are walked after a successful decode as well.
    pub(super) has_float32: bool,
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

    /// Problems with the `default` values the schema publishes for its top-level
    /// properties: a default written as an expression is only known at run time.
    pub(crate) fn check_defaults(&self, schema: &Map<String, Value>) -> Vec<ArgIssue> {
        let Some(Value::Object(properties)) = schema.get("properties") else {
            return Vec::new();
        };
        let mut walk = Walk::new(&self.nodes, None);
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

    pub(super) fn validate_with(
        &self,
        value: &Value,
        literals: Option<&NumberLiterals>,
    ) -> Vec<ArgIssue> {
        let mut walk = Walk::new(&self.nodes, literals);
        walk.check(self.root, value);
        walk.issues
    }
}

/// Builds the nodes of one schema, resolving `$ref`s into `$defs` as it meets them.
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

/// A validator of a schema written with `json!` in a unit test (an object).
#[cfg(test)]
pub(super) fn validator(schema: Value) -> Validator {
    match schema {
        Value::Object(object) => Validator::compile(&object),
        _ => unreachable!("test schemas are objects"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
