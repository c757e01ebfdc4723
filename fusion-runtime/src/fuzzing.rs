//! Entry points of the fuzz targets (`fuzz/`), and of the test that replays their corpus on
//! stable (`tests/hostile/fuzz_corpus.rs`). Each takes arbitrary bytes, runs one piece of the
//! runtime that reads client input, and panics when that piece breaks its promise.
//! Behind the `fuzzing` feature and hidden from the docs: not part of the API.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::transport::{
    Decoded, decode_by_envelope, decode_line, decode_tool_call_in_one_pass, said,
};

/// The stdio line decoder: never a message from a line that is not JSON; the one-pass
/// `tools/call` reader says exactly what the general, serde_json-first read says.
pub fn stdio_line(data: &[u8]) {
    let decoded = decode_line(data);
    let line = data.strip_suffix(b"\r").unwrap_or(data);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    // JSON text is UTF-8 (RFC 8259 §8.1), and serde_json reads its syntax.
    let not_json = std::str::from_utf8(line).is_err()
        || serde_json::from_slice::<serde::de::IgnoredAny>(line).is_err();
    if not_json {
        assert!(
            !matches!(decoded, Decoded::Message(_)),
            "a line that is not JSON became a message: {}",
            String::from_utf8_lossy(line)
        );
    }
    if std::str::from_utf8(line).is_err() {
        // `decode_line` refuses it before either read.
        return;
    }
    if let Some(fast) = decode_tool_call_in_one_pass(line) {
        let general = decode_by_envelope(line);
        assert_eq!(
            said(&fast),
            said(&general),
            "the one-pass read differs from the general one on {}",
            String::from_utf8_lossy(line)
        );
    }
}

/// The HTTP request guard: `Host` and `Origin` let through only loopback authorities with
/// numeric ports, and recording number literals keeps the message as sent.
#[cfg(feature = "http")]
pub fn http_guard(data: &[u8]) {
    crate::transport::check_guard(data);
}

/// Request-state opening: bytes nobody sealed never open; a state sealed here opens for
/// its own binding only, and any change to it makes it fail.
pub fn request_state(data: &[u8]) {
    let sealer = crate::rounds::state::Sealer::with_key([7; 32]);
    let text = String::from_utf8_lossy(data);
    assert!(
        sealer.open(&text, b"binding").is_err(),
        "bytes nobody sealed opened: {text}"
    );
    let answers = BTreeMap::from([("answer".to_owned(), Value::String(text.clone().into()))]);
    let sealed = sealer.seal(&answers, b"binding");
    assert_eq!(sealer.open(&sealed, b"binding").ok(), Some(answers));
    assert!(
        sealer.open(&sealed, b"another").is_err(),
        "opened for another binding"
    );
    if !sealed.is_empty() {
        let at = data.len() % sealed.len();
        let mut altered = sealed.clone().into_bytes();
        altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8_lossy(&altered).into_owned();
        assert!(
            altered == sealed || sealer.open(&altered, b"binding").is_err(),
            "an altered state opened"
        );
    }
}

/// The number-literal reader: on valid JSON, it records every number serde_json reads as
/// an `f64`, at its pointer, with a literal that parses to that very value (the last one,
/// when a key repeats, as serde_json keeps the last).
pub fn number_literals(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let literals = crate::validate::literal::scan(text);
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let mut floats = Vec::new();
    collect_floats(&value, String::new(), &mut floats);
    for (pointer, number) in &floats {
        let literal = literals
            .get(pointer)
            .unwrap_or_else(|| panic!("no literal recorded at {pointer:?} in {text}"));
        let parsed: f64 = literal
            .parse()
            .unwrap_or_else(|_| panic!("the literal {literal:?} at {pointer:?} is no number"));
        assert!(
            parsed == *number || (parsed.is_nan() && number.is_nan()),
            "the literal {literal:?} at {pointer:?} is {parsed}, serde_json read {number}"
        );
    }
    // Entries at other pointers may stay from a member a duplicate key replaced; the
    // validator believes an entry only when it parses to the value at its pointer.
}

/// Every `f64` number in `value`, by JSON pointer.
fn collect_floats(value: &Value, pointer: String, out: &mut Vec<(String, f64)>) {
    match value {
        Value::Number(number) if number.is_f64() => {
            out.push((pointer, number.as_f64().unwrap_or(f64::NAN)));
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                collect_floats(item, format!("{pointer}/{index}"), out);
            }
        }
        Value::Object(entries) => {
            for (key, item) in entries {
                let segment = crate::validate::literal::pointer_segment(key);
                collect_floats(item, format!("{pointer}/{segment}"), out);
            }
        }
        _ => {}
    }
}
