//! How much of a client's input the server repeats back: in the text the model reads, in
//! `_meta`, and in the log.
//!
//! Names and keys come from the client and may be as large as a message (16 MiB on stdio).
//! Whatever is repeated, or compared with the server's own names for a did-you-mean, is
//! first cut to a size the server chooses, so the cost of an answer is bounded by these
//! limits and not by the input (issue 15: a 15 MiB tool name was answered after 21 s and
//! echoed whole, and every other request waited behind it).

use std::borrow::Cow;

/// What stands for a secret value wherever it would have appeared.
pub const REDACTED: &str = "[redacted]";

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

#[cfg(test)]
mod tests {
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
}
