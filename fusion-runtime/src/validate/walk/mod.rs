//! The walker: a value checked against a compiled schema, every problem collected with its
//! path. This file holds the walk itself (paths, what came, references, types, `enum`,
//! `allOf`/`anyOf`/`oneOf`); the keywords of each kind of value are in `object.rs`,
//! `array.rs` and `scalar.rs` (strings and numbers), the server's limits in `../limits.rs`.
//! The words of each problem come from `failure/wording/args.rs`.

mod array;
mod object;
mod scalar;

use std::fmt::Write as _;

use serde_json::Value;

use crate::failure::{
    issue::{ArgIssue, IssueCode},
    wording::args::{self as words, Words},
};

use super::{
    literal::{self, NumberLiterals},
    node::{Node, NodeId},
    number::{IntegerView, integer_view},
};

/// One step of a path: an object's key or an array's index.
#[derive(Clone, Debug)]
pub(super) enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// One walk over a value: where it is, and the problems found so far.
pub(super) struct Walk<'a> {
    pub(super) nodes: &'a [Node],
    pub(super) path: Vec<Segment<'a>>,
    pub(super) issues: Vec<ArgIssue>,
    /// The number literals the transport recorded, to judge integers sent as floats.
    literals: Option<&'a NumberLiterals>,
    /// Inside a secret value: problems name its type, never its content.
    secret: bool,
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
    /// A walk at the root, over `nodes` (none for the limits, which need no schema).
    pub(super) fn new(nodes: &'a [Node], literals: Option<&'a NumberLiterals>) -> Self {
        Self {
            nodes,
            path: Vec::new(),
            issues: Vec::new(),
            literals,
            secret: false,
        }
    }

    pub(super) fn path(&self) -> String {
        let mut text = String::new();
        for segment in &self.path {
            match segment {
                // A key over the limit is quoted cut (`is_plain_key` would read it whole).
                Segment::Key(key) if key.len() > crate::limits::MAX_KEY_BYTES => {
                    let _ = write!(text, "[{}]", Value::String(crate::limits::key(key).into()));
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

    pub(super) fn report(&mut self, code: IssueCode, words: Words, received: Option<&Value>) {
        let received = received.map(|value| self.received(value));
        self.report_as(code, words, received);
    }

    /// What came, for a message: a number as the client wrote it when the transport kept
    /// its literal, otherwise the value's compact JSON.
    fn received(&self, value: &Value) -> String {
        if self.secret {
            // Not even a prefix: a secret that fails a check is still a secret.
            return words::received_secret(value);
        }
        match self.literal_of(value) {
            Some(literal) => words::received_literal(literal),
            None => words::received(value),
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

    pub(super) fn report_as(&mut self, code: IssueCode, words: Words, received: Option<String>) {
        self.issues.push(ArgIssue {
            path: self.path(),
            code,
            expected: words.expected,
            received,
            hint: words.hint,
        });
    }

    pub(super) fn check(&mut self, id: NodeId, value: &'a Value) {
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
            self.report(IssueCode::NoMatch, words::nothing_allowed(), Some(value));
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
                    words::or_null(&int_type.describe())
                }
                (Some(int_type), _) => int_type.describe(),
                (None, Some(types)) => types.describe(),
                (None, None) => words::types(["integer"]),
            };
            let received = self.received(value);
            self.report_as(IssueCode::Type, words::not_whole(expected), Some(received));
            return;
        }
        if let Some(types) = node.types
            && !types.allows(value)
        {
            // The type hints quote the value ("send 1234 without quotes").
            let hint = if self.secret {
                None
            } else {
                words::type_hint(|name| types.has(name), value)
            };
            let code = if value.is_null() {
                IssueCode::Null
            } else {
                IssueCode::Type
            };
            self.report(code, Words::with_hint(types.describe(), hint), Some(value));
            // The other keywords speak of a value of the right type: stop here.
            return;
        }
        if let Some(allowed) = &node.enum_values
            && !allowed.contains(value)
        {
            let expected = Words::expected(words::one_of(allowed));
            self.report(IssueCode::Enum, expected, Some(value));
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

    /// `anyOf` / `oneOf`: when no branch fits, report the problems of the branch that came
    /// closest, so that `Option<Filter>` given a bad filter names the filter's bad field.
    fn check_branches(&mut self, branches: &[NodeId], value: &'a Value, exactly_one: bool) {
        let mut best: Option<Vec<ArgIssue>> = None;
        let mut matches = 0;
        for &branch in branches {
            let mut trial = Walk {
                path: self.path.clone(),
                secret: self.secret,
                ..Walk::new(self.nodes, self.literals)
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
                (Some(literals), _) => self.report(
                    IssueCode::Enum,
                    Words::expected(words::one_of(&literals)),
                    Some(value),
                ),
                (None, Some(issues)) => self.issues.extend(issues),
                (None, None) => {}
            }
        } else if exactly_one && matches > 1 {
            self.report(IssueCode::NoMatch, words::several_shapes(), Some(value));
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

    fn allows_null(&self, id: NodeId) -> bool {
        let mut trial = Walk::new(self.nodes, None);
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
            return words::one_of(values);
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
            let mut expected: Vec<String> = branches
                .iter()
                .map(|&branch| self.expectation(branch))
                .collect();
            expected.dedup();
            return words::either(&expected);
        }
        words::any_value()
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::compile::validator;
    use crate::failure::issue::IssueCode;

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
}
