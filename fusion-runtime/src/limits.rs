//! How much of a client's input the server repeats back: in the text the model reads, in
//! `_meta`, and in the log.
//!
//! Names and keys come from the client and may be as large as a message (16 MiB on stdio).
//! Whatever is repeated, or compared with the server's own names for a did-you-mean, is
//! first cut to a size the server chooses, so the cost of an answer is bounded by these
//! limits and not by the input (issue 15: a 15 MiB tool name was answered after 21 s and
//! echoed whole, and every other request waited behind it). A value is repeated as a
//! preview: its compact JSON, cut.
//!
//! Public here: the sizes a name and an idempotency key may have, how long a multi-round
//! call's state lives ([`STATE_TTL`]) and what stands for a secret ([`REDACTED`]).

use std::borrow::Cow;

use serde_json::Value;

pub use crate::rounds::state::STATE_TTL;

/// What stands for a secret value wherever it would have appeared.
pub const REDACTED: &str = "[redacted]";

/// The most bytes a tool's result may carry, when neither the tool
/// (`#[mcp_tool(max_output = "64KiB")]`) nor the server
/// ([`ServerBuilder::max_output`](crate::ServerBuilder::max_output)) says: 1 MiB.
///
/// A result is read by a model whose context holds a few hundred kilobytes of text at
/// most, and over stdio it is queued whole: 1 MiB is well within stdio's backpressure
/// bound ([`StdioOptions::max_unwritten_bytes`](crate::StdioOptions::max_unwritten_bytes),
/// 8 MiB), so one large answer cannot take all of it. A text result over the limit is cut
/// with a note giving its full size; a structured one is refused (`output_too_large`),
/// never cut into something its `outputSchema` would refuse.
pub const DEFAULT_MAX_OUTPUT: usize = 1 << 20;

/// The longest tool or action name the server looks up, in bytes. MCP (2025-11-25, "Tool
/// names") says tool names SHOULD be 1 to 128 characters of `A-Z a-z 0-9 _ - .`, all ASCII,
/// so 128 bytes. A server whose own names are longer looks up names as long as its longest.
/// A longer name is answered as an unknown tool (or action) at once, quoting a cut prefix.
pub const MAX_NAME_BYTES: usize = 128;

/// The longest argument key, at any depth, in bytes. Neither MCP nor JSON Schema sets a
/// limit. 256 bytes is twice the tool-name limit: room for any parameter name people write
/// (a Rust identifier, a `serde(rename)`, a map key such as a short path or header name),
/// and small enough that a did-you-mean over it costs microseconds. A longer key is an
/// argument problem (`too_large`) found before decoding, quoted cut.
pub const MAX_KEY_BYTES: usize = 256;

/// How many characters of an over-long name or key a message quotes.
pub(crate) const ECHO_CHARS: usize = 60;

/// `text` as messages and logs quote it: whole when it has at most `max_bytes` bytes, else
/// its first [`ECHO_CHARS`] characters, an ellipsis and its size in bytes. The work is
/// bounded by `max_bytes` and [`ECHO_CHARS`], whatever the size of `text`.
///
/// A name within its limit is repeated exactly, so the model sees what it sent.
pub(crate) fn cut(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!(
        "{}… ({} bytes in all)",
        prefix(text, ECHO_CHARS),
        text.len()
    ))
}

/// The first `chars` characters of `text` (all of it when shorter), found without reading
/// past them.
pub(crate) fn prefix(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A tool or action name as messages and logs quote it.
pub(crate) fn name(text: &str) -> Cow<'_, str> {
    cut(text, MAX_NAME_BYTES)
}

/// An argument key as messages and logs quote it.
pub(crate) fn key(text: &str) -> Cow<'_, str> {
    cut(text, MAX_KEY_BYTES)
}

/// A `std::fmt::Write` / `std::io::Write` sink that keeps the first `limit` bytes and then
/// refuses more, so that serializing a huge value to show its start stops early.
pub(crate) struct Bounded {
    pub(crate) bytes: Vec<u8>,
    limit: usize,
}

impl Bounded {
    /// A sink that keeps at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(limit.min(1024)),
            limit,
        }
    }

    /// Whether the sink refused some bytes.
    pub(crate) fn is_full(&self) -> bool {
        self.bytes.len() >= self.limit
    }
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.limit - self.bytes.len();
        if room == 0 {
            // An error (not `Ok(0)`) so the serializer stops instead of retrying.
            return Err(std::io::Error::other("preview full"));
        }
        let taken = buf.len().min(room);
        self.bytes.extend_from_slice(&buf[..taken]);
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The longest preview of a received value, in characters.
pub(crate) const PREVIEW_CHARS: usize = 60;

/// Compact JSON of a value, cut to [`PREVIEW_CHARS`] characters with an ellipsis.
///
/// Serialization stops once enough is written, so a preview of a 15 MiB value costs what a
/// preview of a short one does.
pub(crate) fn preview(value: &Value) -> String {
    // A character is at most 4 bytes, and an escape (`\u001f`) at most 6: room for
    // `PREVIEW_CHARS` characters of any kind, and one more to know whether there is more.
    let mut sink = Bounded::new((PREVIEW_CHARS + 1) * 6);
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
    let shown = prefix(&text, PREVIEW_CHARS);
    if full && shown.len() == text.len() {
        return text;
    }
    let mut cut = shown.to_owned();
    cut.push('…');
    cut
}

/// `text` (a number's literal) cut to [`PREVIEW_CHARS`] characters with an ellipsis.
pub(crate) fn preview_text(text: String) -> String {
    let shown = prefix(&text, PREVIEW_CHARS);
    if shown.len() == text.len() {
        return text;
    }
    format!("{shown}…")
}

/// Writes the compact JSON of `value` into `sink` until it is full. Strings and keys are
/// cut to one character more than a preview shows before they are serialized: serde_json
/// scans a whole string for escapes before writing any of it, so a 15 MiB string would
/// cost a full scan (a second of an unoptimized build) for 60 characters.
fn write_preview(value: &Value, sink: &mut Bounded) -> std::io::Result<()> {
    use std::io::Write as _;
    let text = |text: &str, sink: &mut Bounded| {
        serde_json::to_writer(sink, prefix(text, PREVIEW_CHARS + 1)).map_err(std::io::Error::other)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn short_text_is_repeated_whole() {
        assert_eq!(cut("get_weather", MAX_NAME_BYTES), "get_weather");
        let exact = "n".repeat(MAX_NAME_BYTES);
        assert_eq!(cut(&exact, MAX_NAME_BYTES), exact.as_str());
    }

    #[test]
    fn long_text_is_cut_to_a_prefix_with_its_size() {
        let long = "x".repeat(15 << 20);
        let shown = cut(&long, MAX_NAME_BYTES);
        assert_eq!(
            shown,
            format!("{}… ({} bytes in all)", "x".repeat(ECHO_CHARS), 15 << 20)
        );
        assert!(shown.len() < 100);
        let just_over = "k".repeat(MAX_KEY_BYTES + 1);
        assert!(key(&just_over).starts_with(&"k".repeat(ECHO_CHARS)));
        assert!(key(&just_over).ends_with("(257 bytes in all)"));
    }

    #[test]
    fn cuts_fall_on_character_boundaries() {
        // 4-byte and 2-byte characters: a byte cut would split them and panic.
        let emoji = "😀".repeat(100);
        assert_eq!(prefix(&emoji, 3), "😀😀😀");
        let shown = name(&emoji);
        assert!(shown.starts_with(&"😀".repeat(ECHO_CHARS)), "{shown}");
        assert_eq!(prefix("é", 5), "é");
        assert_eq!(prefix("", 5), "");
    }

    #[test]
    fn the_bounded_sink_stops_the_serializer() {
        let huge = serde_json::Value::String("y".repeat(1 << 20));
        let mut sink = Bounded::new(64);
        assert!(serde_json::to_writer(&mut sink, &huge).is_err());
        assert!(sink.is_full());
        assert_eq!(sink.bytes.len(), 64);
        let mut roomy = Bounded::new(64);
        assert!(serde_json::to_writer(&mut roomy, &serde_json::json!([1, 2])).is_ok());
        assert!(!roomy.is_full());
        assert_eq!(roomy.bytes, b"[1,2]");
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
}
