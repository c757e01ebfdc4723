//! Lines of other crates' events, cut to a bounded size before they are queued: rmcp logs
//! what a client sent (a notification's `Debug`, a cancel's reason, the client's info) at
//! full length, so one 1 MiB notification would write 1 MB to stderr. fusion's own events
//! quote client input already cut (`limits.rs`); this holds every other line to the same rule.

use std::borrow::Cow;

use serde_json::Value;

/// The longest line written whole, in bytes.
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024;

/// What a cut string keeps of itself, in bytes.
const KEPT_BYTES: usize = 1024;

/// `line` as the log writes it: whole when it has at most [`MAX_LINE_BYTES`]; else, for a
/// JSON line, with each long string cut to its first KiB and its size; else (text, or
/// JSON still too long) its first [`MAX_LINE_BYTES`] and its size. Lines end in `\n`.
pub(crate) fn bounded(line: &[u8]) -> Cow<'_, [u8]> {
    if line.len() <= MAX_LINE_BYTES {
        return Cow::Borrowed(line);
    }
    if let Ok(mut value) = serde_json::from_slice::<Value>(line) {
        cut_strings(&mut value);
        if let Ok(mut cut) = serde_json::to_vec(&value)
            && cut.len() < MAX_LINE_BYTES
        {
            cut.push(b'\n');
            return Cow::Owned(cut);
        }
    }
    let text = String::from_utf8_lossy(line);
    let mut cut = cut_text(&text, MAX_LINE_BYTES).into_owned();
    cut.push('\n');
    Cow::Owned(cut.into_bytes())
}

/// Cuts every string in `value` longer than [`KEPT_BYTES`]. Walks with its own stack.
fn cut_strings(value: &mut Value) {
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) if text.len() > KEPT_BYTES => {
                *text = cut_text(text, KEPT_BYTES).into_owned();
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(entries) => pending.extend(entries.values_mut()),
            _ => {}
        }
    }
}

/// The first `max_bytes` of `text` (on a character boundary), an ellipsis and its size.
fn cut_text(text: &str, max_bytes: usize) -> Cow<'_, str> {
    if text.len() <= max_bytes {
        return Cow::Borrowed(text);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let kept = text[..end].trim_end_matches(['\r', '\n']);
    Cow::Owned(format!("{kept}… ({} bytes in all)", text.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_pass_whole() {
        let line = b"{\"a\":1}\n";
        assert!(matches!(bounded(line), Cow::Borrowed(_)));
    }

    #[test]
    fn a_json_line_keeps_its_shape_with_long_strings_cut() {
        let line = serde_json::json!({
            "level": "INFO",
            "fields": {"message": "received notification", "notification": "é".repeat(600_000)},
        });
        let mut bytes = serde_json::to_vec(&line).expect("json");
        bytes.push(b'\n');
        let cut = bounded(&bytes);
        assert!(cut.len() < 2 * KEPT_BYTES, "{} bytes", cut.len());
        assert!(cut.ends_with(b"\n"));
        let parsed: Value = serde_json::from_slice(&cut).expect("still JSON");
        assert_eq!(parsed["fields"]["message"], "received notification");
        let notification = parsed["fields"]["notification"].as_str().expect("text");
        assert!(
            notification.ends_with("… (1200000 bytes in all)"),
            "{notification}"
        );
    }

    #[test]
    fn a_text_line_is_cut_on_a_character_boundary() {
        let line = format!("INFO rmcp: received {}\n", "ü".repeat(20_000));
        let cut = bounded(line.as_bytes());
        let text = std::str::from_utf8(&cut).expect("UTF-8");
        assert!(text.len() < MAX_LINE_BYTES + 64);
        assert!(text.ends_with(&format!("… ({} bytes in all)\n", line.len())));
    }
}
