//! A call's arguments as the log shows them, written once, straight into the log line.
//!
//! The rules: compact JSON with `secret` values replaced by `"[redacted]"`, long strings cut
//! to 200 characters, keys over [`MAX_KEY_BYTES`](crate::limits::MAX_KEY_BYTES) cut, arrays and
//! objects to their first 20 entries, and nesting to 8 levels, so a hostile argument can
//! neither flood the log nor exhaust the stack while rendering. They are applied while
//! serializing: no copy of the arguments, no intermediate `String`.

use std::{fmt, io};

use serde::{
    Serialize, Serializer,
    ser::{SerializeMap as _, SerializeSeq as _},
};
use serde_json::Value;

use super::redact::Redactor;
use crate::limits::REDACTED;

const MAX_CHARS: usize = 200;
const MAX_ENTRIES: usize = 20;
const MAX_DEPTH: usize = 8;
/// The key under which a cut object says how many entries it left out.
const MORE_KEY: &str = "…";

/// The logged form of a call's arguments; its `Display` is that JSON text (the
/// `arguments` field of the call event).
pub(crate) struct LoggedArgs<'a> {
    pub(crate) args: &'a Value,
    pub(crate) redactor: &'a Redactor,
}

impl fmt::Display for LoggedArgs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = Shown {
            value: self.args,
            depth: 0,
            redactor: self.redactor,
        };
        serde_json::to_writer(FmtWriter(f), &shown).map_err(|_| fmt::Error)
    }
}

impl LoggedArgs<'_> {
    /// Appends the same JSON text to `out`: serde_json straight into bytes, without the
    /// `fmt` machinery between them (the log's writer thread renders every call's this way).
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let shown = Shown {
            value: self.args,
            depth: 0,
            redactor: self.redactor,
        };
        serde_json::to_writer(out, &shown)
    }
}

/// One value of the arguments at a depth, serialized under the rules.
struct Shown<'a> {
    value: &'a Value,
    depth: usize,
    redactor: &'a Redactor,
}

impl Shown<'_> {
    fn child<'b>(&'b self, value: &'b Value) -> Shown<'b> {
        Shown {
            value,
            depth: self.depth + 1,
            redactor: self.redactor,
        }
    }
}

impl Serialize for Shown<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            // Found without counting every character of a long string.
            Value::String(text)
                if text.len() > MAX_CHARS
                    && crate::limits::prefix(text, MAX_CHARS).len() < text.len() =>
            {
                let cut = crate::limits::prefix(text, MAX_CHARS);
                serializer.collect_str(&format_args!("{cut}… ({} bytes in all)", text.len()))
            }
            Value::Array(_) | Value::Object(_) if self.depth >= MAX_DEPTH => {
                serializer.serialize_str("… (nested deeper)")
            }
            Value::Array(items) => {
                let more = items.len().saturating_sub(MAX_ENTRIES);
                let mut seq = serializer.serialize_seq(None)?;
                for item in items.iter().take(MAX_ENTRIES) {
                    seq.serialize_element(&self.child(item))?;
                }
                if more > 0 {
                    seq.serialize_element(&format_args!("… ({more} more items)"))?;
                }
                seq.end()
            }
            Value::Object(entries) => {
                let more = entries.len().saturating_sub(MAX_ENTRIES);
                let kept = || entries.iter().take(MAX_ENTRIES);
                // Cut keys may come out equal, and a key may be the "…" of the count: an
                // object keeps one entry a key, so such an object is built as one, the
                // slow way (rare: keys over 256 bytes).
                if kept().any(|(key, _)| {
                    key.len() > crate::limits::MAX_KEY_BYTES || (more > 0 && key == MORE_KEY)
                }) {
                    return shrink(self.value, self.depth, self.redactor).serialize(serializer);
                }
                let mut map = serializer.serialize_map(None)?;
                for (key, item) in kept() {
                    if self.redactor.is_secret_key(key) {
                        map.serialize_entry(key, REDACTED)?;
                    } else {
                        map.serialize_entry(key, &self.child(item))?;
                    }
                }
                if more > 0 {
                    map.serialize_entry(MORE_KEY, &format_args!("{more} more entries"))?;
                }
                map.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// The rules as a new value: for the objects whose cut keys may collide (see above).
fn shrink(value: &Value, depth: usize, redactor: &Redactor) -> Value {
    match value {
        Value::String(text)
            if text.len() > MAX_CHARS
                && crate::limits::prefix(text, MAX_CHARS).len() < text.len() =>
        {
            let cut = crate::limits::prefix(text, MAX_CHARS);
            Value::String(format!("{cut}… ({} bytes in all)", text.len()))
        }
        Value::Array(_) | Value::Object(_) if depth >= MAX_DEPTH => {
            Value::String("… (nested deeper)".into())
        }
        Value::Array(items) => {
            let mut kept: Vec<Value> = items
                .iter()
                .take(MAX_ENTRIES)
                .map(|item| shrink(item, depth + 1, redactor))
                .collect();
            if items.len() > MAX_ENTRIES {
                kept.push(Value::String(format!(
                    "… ({} more items)",
                    items.len() - MAX_ENTRIES
                )));
            }
            Value::Array(kept)
        }
        Value::Object(entries) => {
            let mut kept: serde_json::Map<String, Value> = entries
                .iter()
                .take(MAX_ENTRIES)
                .map(|(key, item)| {
                    let shown = if redactor.is_secret_key(key) {
                        Value::String(REDACTED.into())
                    } else {
                        shrink(item, depth + 1, redactor)
                    };
                    // Keys are the client's too, and cut like values.
                    (crate::limits::key(key).into_owned(), shown)
                })
                .collect();
            if entries.len() > MAX_ENTRIES {
                kept.insert(
                    MORE_KEY.into(),
                    Value::String(format!("{} more entries", entries.len() - MAX_ENTRIES)),
                );
            }
            Value::Object(kept)
        }
        other => other.clone(),
    }
}

/// serde_json's output into a `fmt::Formatter`: serde_json writes whole UTF-8 sequences
/// (it splits text only at the ASCII characters it escapes).
struct FmtWriter<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl io::Write for FmtWriter<'_, '_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let text = std::str::from_utf8(bytes).map_err(io::Error::other)?;
        self.0.write_str(text).map_err(io::Error::other)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn logged(args: &Value, redactor: &Redactor) -> String {
        LoggedArgs { args, redactor }.to_string()
    }

    #[test]
    fn written_as_the_rules_build_it() {
        let long = "é".repeat(300);
        let deep = json!({"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}});
        let many: serde_json::Map<String, Value> =
            (0..25).map(|i| (format!("k{i}"), json!(i))).collect();
        let redactor = Redactor::new(&["token".into()], &json!({"token": "abcdef"}));
        for args in [
            json!({"text": "hi \"q\" \\ \n \u{1}", "n": 1.5e300, "neg": -3, "nil": null, "t": true}),
            json!({"long": long, "list": (0..30).collect::<Vec<_>>(), "deep": deep}),
            json!({"token": "abcdef", "inner": [{"token": 1}], "many": many}),
            json!({"k".repeat(300): 1, "k".repeat(301): 2}),
            json!({"x".repeat(300): 1, "x".repeat(300) + "y": 2}),
        ] {
            let mut bytes = Vec::new();
            LoggedArgs {
                args: &args,
                redactor: &redactor,
            }
            .write_json(&mut bytes)
            .expect("written to a Vec");
            assert_eq!(
                logged(&args, &redactor),
                shrink(&args, 0, &redactor).to_string(),
                "{args}"
            );
            assert_eq!(bytes, logged(&args, &redactor).as_bytes(), "{args}");
        }
    }

    #[test]
    fn logged_keys_are_cut() {
        let key = "k".repeat(1 << 20);
        let shown = logged(&json!({ key: 1 }), &Redactor::default());
        assert!(shown.len() < 200, "{}", shown.len());
        assert!(shown.contains("(1048576 bytes in all)"), "{shown}");
    }
}
