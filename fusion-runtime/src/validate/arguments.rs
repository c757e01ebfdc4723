//! Decoding a call's arguments: serde first (the fast path: a valid call costs one
//! `Deserialize`), the walker when serde refuses or when the schema declares constraints
//! serde does not check, and integers sent as floats (`5.0`, `9007199254740993.0`) handed
//! to serde as the exact integers they are.

use std::{collections::HashMap, fmt::Write as _};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::failure::{
    issue::{ArgIssue, IssueCode},
    wording::args::{self as words, Words},
};

use super::{
    compile::Validator,
    literal::{self, NumberLiterals},
    node::{Additional, NodeId},
    number::{IntegerView, integer_view},
};

impl Validator {
    /// Decodes `args` into `A`, or returns every problem found.
    ///
    /// Numbers are judged by their value: an integer parameter takes `5.0` as `5` when the
    /// float is an integer below 2^53 (so no rounding can have made it one), and refuses
    /// larger floats, which may have been rounded on the way. Served calls are judged by
    /// the literal the client sent instead, which the transports keep beside the request
    /// (see [`Tester::call_json`](crate::testing::Tester::call_json)).
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
        // Only serde's two calls depend on `A`; the rest is `decode_erased`, compiled once
        // in this crate rather than once per tool in the user's (issue 32, item 6).
        self.decode_by(args, literals, |input| match input {
            Input::Value(value) => A::deserialize(value),
            Input::Text(text) => serde_json::from_str::<A>(text),
        })
    }

    /// Runs [`decode_erased`](Self::decode_erased) with `decode`, and keeps its value: the
    /// checks and answers of [`decode_with`](Self::decode_with) around any way of decoding
    /// (serde's `Deserialize`, or the tools' field-by-field decoding,
    /// [`fields`](crate::tool::fields)).
    pub(crate) fn decode_by<A>(
        &self,
        args: &Value,
        literals: &NumberLiterals,
        mut decode: impl FnMut(Input<'_>) -> Result<A, serde_json::Error>,
    ) -> Result<A, Vec<ArgIssue>> {
        let mut decoded = None;
        self.decode_erased(args, literals, &mut |input| {
            decoded = Some(decode(input)?);
            Ok(())
        })?;
        decoded.ok_or_else(|| {
            // `decode_erased` returns `Ok` only after a call of `decode` that stored a value.
            unreachable!("decode_erased succeeded without a decoded value")
        })
    }

    /// [`decode_with`](Self::decode_with) with the type erased: `decode` runs serde on an
    /// input and keeps the value on success.
    fn decode_erased(
        &self,
        args: &Value,
        literals: &NumberLiterals,
        decode: &mut dyn FnMut(Input<'_>) -> Result<(), serde_json::Error>,
    ) -> Result<(), Vec<ArgIssue>> {
        if !args.is_object() {
            let Words { expected, hint } = words::not_an_object();
            return Err(vec![ArgIssue {
                path: String::new(),
                code: IssueCode::NotAnObject,
                expected,
                received: Some(words::received(args)),
                hint,
            }]);
        }
        match decode(Input::Value(args)) {
            Ok(()) => {
                if self.check_after_decode || (self.has_float32 && literal::has_float(args)) {
                    let issues = self.validate_with(args, Some(literals));
                    if !issues.is_empty() {
                        return Err(issues);
                    }
                }
                Ok(())
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
                            decode(Input::Value(&normalized))
                        } else {
                            // Integers beyond 64 bits: serde_json's text parser reads them
                            // exactly into `i128`/`u128`, a `Value` cannot hold them.
                            let mut text = String::new();
                            write_json(&normalized, &mut String::new(), &wide, literals, &mut text);
                            decode(Input::Text(&text))
                        };
                        if decoded.is_ok() {
                            return Ok(());
                        }
                    }
                    // The schema is looser than the Rust type (a custom `Deserialize`):
                    // serde's own words are the best we have.
                    let Words { expected, hint } = words::undecodable(error.to_string());
                    return Err(vec![ArgIssue {
                        path: String::new(),
                        code: IssueCode::Decode,
                        expected,
                        received: None,
                        hint,
                    }]);
                }
                Err(issues)
            }
        }
    }
}

/// What serde decodes the arguments from.
pub(crate) enum Input<'a> {
    /// The arguments as received, or with integers sent as floats rewritten.
    Value(&'a Value),
    /// JSON text, for integers beyond 64 bits.
    Text(&'a str),
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
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn unit_arguments_decode_from_an_empty_map() {
        assert!(decode_map::<()>(Map::new()).is_ok());
        let mut one = Map::new();
        one.insert("a".into(), Value::String("b".into()));
        assert!(decode_map::<HashMap<String, String>>(one).is_ok());
    }
}
