//! The number literals of a call's arguments, exactly as the client wrote them.
//!
//! A `serde_json::Value` holds an integer exactly only within `i64`/`u64`; any literal with
//! a `.`, `e` or `E`, or an integer beyond those, becomes an `f64`, and the digits that do
//! not fit are gone (`9007199254740993.0` reads as `9007199254740992`). The text is only
//! there where the JSON is parsed, so the transports keep it: when the parsed arguments
//! hold an `f64` (most calls hold none, and pay one walk of the `Value`), [`scan`] reads the
//! raw arguments text once and returns the literals a `Value` cannot hold, by JSON pointer.
//! They travel beside the request, as a [`NumberLiterals`] in its extensions (where no
//! client can write), and reach the validator through the [`Call`](crate::Call), which
//! judges an integer parameter by the literal's exact value.
//!
//! A literal is only believed when it parses to the same `f64` as the value at its path,
//! so a stale or forged entry can never change what a check sees: at most it tells the
//! validator which of the numbers that round to that `f64` the client wrote, which the
//! client could have said by writing it.

use std::collections::HashMap;

use serde_json::Value;

/// The literals of one call's arguments, by JSON pointer. Empty for most calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NumberLiterals {
    by_pointer: HashMap<String, String>,
}

impl NumberLiterals {
    pub(crate) fn is_empty(&self) -> bool {
        self.by_pointer.is_empty()
    }

    /// The literal sent at `pointer`, if one was recorded.
    pub(crate) fn get(&self, pointer: &str) -> Option<&str> {
        self.by_pointer.get(pointer).map(String::as_str)
    }

    /// The literals a transport recorded beside a request: in its extensions (a line the
    /// transport decoded), or in the extensions of its HTTP request's parts (a body rmcp's
    /// HTTP service decoded). A client has no way to put them there.
    pub(crate) fn of(extensions: &rmcp::model::Extensions) -> Self {
        let recorded = extensions.get::<Self>();
        #[cfg(feature = "http")]
        let recorded = recorded.or_else(|| {
            extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Self>())
        });
        recorded.cloned().unwrap_or_default()
    }
}

/// Whether `value` holds a number that serde_json read as an `f64` (a literal with `.`,
/// `e` or `E`, an integer beyond `i64`/`u64`, or `-0`): the only numbers whose text matters.
pub(crate) fn has_float(value: &Value) -> bool {
    match value {
        Value::Number(number) => number.is_f64(),
        Value::Array(items) => items.iter().any(has_float),
        Value::Object(object) => object.values().any(has_float),
        _ => false,
    }
}

/// The arguments of a call as a transport parsed them, with their literals when the text
/// holds any that the value cannot: what a transport records, and what
/// [`Tester::call_json`](crate::testing::Tester::call_json) uses.
pub(crate) fn literals_of(raw_arguments: &str, arguments: &Value) -> NumberLiterals {
    if has_float(arguments) {
        scan(raw_arguments)
    } else {
        NumberLiterals::default()
    }
}

/// One open container while scanning.
enum Frame {
    /// An object, with the pointer segment of the member being read (`None` between a `,`
    /// and the next key).
    Object(Option<String>),
    /// An array, with the index of the item being read.
    Array(usize),
}

/// The number literals in `json` (valid JSON text, as a transport parsed it) that a
/// `serde_json::Value` cannot hold exactly, by JSON pointer (RFC 6901): every literal but
/// the plain integers serde_json reads as an `i64` or a `u64`.
///
/// One pass over the bytes, without building values. Text that is not valid JSON gives a
/// best-effort answer, never a panic; the validator believes an entry only when it
/// parses to the value at its path.
pub(crate) fn scan(json: &str) -> NumberLiterals {
    let bytes = json.as_bytes();
    let mut literals = NumberLiterals::default();
    let mut frames: Vec<Frame> = Vec::new();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'{' => {
                frames.push(Frame::Object(None));
                at += 1;
            }
            b'[' => {
                frames.push(Frame::Array(0));
                at += 1;
            }
            b'}' | b']' => {
                frames.pop();
                at += 1;
            }
            b',' => {
                match frames.last_mut() {
                    Some(Frame::Array(index)) => *index += 1,
                    Some(Frame::Object(key)) => *key = None,
                    None => {}
                }
                at += 1;
            }
            b'"' => {
                let end = string_end(bytes, at);
                if let Some(Frame::Object(key @ None)) = frames.last_mut() {
                    let text = json.get(at..end).unwrap_or_default();
                    *key = Some(pointer_segment(&decode_key(text)));
                }
                at = end;
            }
            b'-' | b'0'..=b'9' => {
                let start = at;
                while bytes
                    .get(at)
                    .is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                {
                    at += 1;
                }
                let literal = json.get(start..at).unwrap_or_default();
                if !is_plain_integer(literal) {
                    literals
                        .by_pointer
                        .insert(pointer(&frames), literal.to_owned());
                }
            }
            _ => at += 1,
        }
    }
    literals
}

/// The index just past the string that starts with the quote at `start`.
fn string_end(bytes: &[u8], start: usize) -> usize {
    let mut at = start + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// A member name from its quoted JSON text, escapes decoded.
fn decode_key(quoted: &str) -> String {
    let inner = quoted
        .strip_prefix('"')
        .and_then(|text| text.strip_suffix('"'))
        .unwrap_or(quoted);
    if inner.contains('\\') {
        serde_json::from_str::<String>(quoted).unwrap_or_else(|_| inner.to_owned())
    } else {
        inner.to_owned()
    }
}

/// A member name as a JSON pointer segment (RFC 6901 §3: `~` as `~0`, `/` as `~1`).
pub(crate) fn pointer_segment(key: &str) -> String {
    if key.contains(['~', '/']) {
        key.replace('~', "~0").replace('/', "~1")
    } else {
        key.to_owned()
    }
}

fn pointer(frames: &[Frame]) -> String {
    let mut pointer = String::new();
    for frame in frames {
        pointer.push('/');
        match frame {
            Frame::Object(Some(key)) => pointer.push_str(key),
            Frame::Object(None) => {}
            Frame::Array(index) => pointer.push_str(&index.to_string()),
        }
    }
    pointer
}

/// Whether serde_json reads `literal` as an `i64` or a `u64` (exactly). `-0` is not one:
/// serde_json reads it as the float `-0.0`.
fn is_plain_integer(literal: &str) -> bool {
    if literal.contains(['.', 'e', 'E', '+']) {
        return false;
    }
    literal.parse::<u64>().is_ok() || literal.parse::<i64>().is_ok_and(|value| value < 0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pairs(json: &str) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = scan(json).by_pointer.into_iter().collect();
        pairs.sort();
        pairs
    }

    fn pair(pointer: &str, literal: &str) -> (String, String) {
        (pointer.to_owned(), literal.to_owned())
    }

    #[test]
    fn only_literals_a_value_cannot_hold_are_recorded() {
        let text = r#"{"a": 1, "b": -2, "c": 2.5, "d": 18446744073709551615,
            "e": 18446744073709551616, "f": -9223372036854775808, "g": -9223372036854775809,
            "h": 1e2, "i": 5E-1, "j": -0, "k": 0, "l": -0.0}"#;
        assert_eq!(
            pairs(text),
            vec![
                pair("/c", "2.5"),
                pair("/e", "18446744073709551616"),
                pair("/g", "-9223372036854775809"),
                pair("/h", "1e2"),
                pair("/i", "5E-1"),
                pair("/j", "-0"),
                pair("/l", "-0.0"),
            ]
        );
    }

    #[test]
    fn pointers_follow_nesting_arrays_and_escaped_keys() {
        let text = r#"{"list": [1, 2.0, {"x": [3.5]}], "a/b": 1.5, "t~": 2.5,
            "q\"uote": 4.5, "esc\u0041": 5.5, "s": "not 1.5, a string", "after": {"k": 6.5}}"#;
        assert_eq!(
            pairs(text),
            vec![
                pair("/after/k", "6.5"),
                pair("/a~1b", "1.5"),
                pair("/escA", "5.5"),
                pair("/list/1", "2.0"),
                pair("/list/2/x/0", "3.5"),
                pair("/q\"uote", "4.5"),
                pair("/t~0", "2.5"),
            ]
        );
    }

    #[test]
    fn every_recorded_pointer_finds_the_value_it_names() {
        let text = r#"{"a": [[1.25, {"b/c": 3e3}], 7.0], "x~y": {"": 2.5}, "s": "]}\"[{"}"#;
        let value: Value = serde_json::from_str(text).expect("valid JSON");
        let literals = scan(text);
        assert_eq!(literals.by_pointer.len(), 4);
        for (pointer, literal) in &literals.by_pointer {
            let found = value.pointer(pointer).and_then(Value::as_f64);
            let parsed = serde_json::from_str::<f64>(literal).ok();
            assert_eq!(found, parsed, "{pointer} → {literal}");
        }
    }

    #[test]
    fn literals_are_kept_exactly_as_written() {
        let text = r#"{"a": 4611686018427387903.5, "b": 123456789012345678.9e1, "c": 1E+400}"#;
        assert_eq!(
            pairs(text),
            vec![
                pair("/a", "4611686018427387903.5"),
                pair("/b", "123456789012345678.9e1"),
                pair("/c", "1E+400"),
            ]
        );
        // A top-level number has the empty pointer.
        assert_eq!(pairs("2.5"), vec![pair("", "2.5")]);
    }

    #[test]
    fn text_that_is_not_json_does_not_panic() {
        for text in [
            "{",
            "\"",
            "{\"a\":",
            "]]]",
            "{\"a\\",
            "-",
            "{1.5:2.5}",
            "\u{7f}é1.5",
        ] {
            let _ = scan(text);
        }
    }

    #[test]
    fn the_literals_are_read_beside_the_request_never_from_its_meta() {
        let literals = scan(r#"{"a": 1.0}"#);
        let mut extensions = rmcp::model::Extensions::new();
        assert!(NumberLiterals::of(&extensions).is_empty());
        extensions.insert(literals.clone());
        assert_eq!(NumberLiterals::of(&extensions), literals);
        // A body rmcp's HTTP service decoded: in its HTTP request's parts.
        #[cfg(feature = "http")]
        {
            let (mut parts, ()) = http::Request::new(()).into_parts();
            parts.extensions.insert(literals.clone());
            let mut extensions = rmcp::model::Extensions::new();
            extensions.insert(parts);
            assert_eq!(NumberLiterals::of(&extensions), literals);
        }
        // What a client writes in `_meta` is the client's, and is never read as literals.
        let mut extensions = rmcp::model::Extensions::new();
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.insert("fusion/number_literals".to_owned(), json!({"/a": "1"}));
        extensions.insert(meta);
        assert!(NumberLiterals::of(&extensions).is_empty());
    }

    #[test]
    fn only_arguments_with_a_float_are_scanned() {
        let plain = json!({"a": 1, "b": [2, {"c": -3}]});
        assert!(!has_float(&plain));
        assert!(literals_of(r#"{"a": 1, "b": [2, {"c": -3}]}"#, &plain).is_empty());
        let float = json!({"b": [2, {"c": -3.5}]});
        assert!(has_float(&float));
    }
}
