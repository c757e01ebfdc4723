//! A tool's output limit (`max_output`, issue 40): a text result over it is cut at a
//! character boundary, with a note giving its full size and how to ask for less; a
//! structured result over it is refused (`output_too_large`), because a cut JSON value
//! would break the tool's `outputSchema`.

use rmcp::model::{CallToolResult, ContentBlock};

use crate::failure::{Failure, FailureKind};

/// Holds a successful `result` to `limit` bytes: cuts a text result in place, or returns
/// the failure that replaces a structured one.
pub(super) fn hold(result: &mut CallToolResult, limit: usize) -> Result<(), Failure> {
    let content: usize = result.content.iter().map(block_bytes).sum();
    if let Some(structured) = &result.structured_content {
        let size = content.saturating_add(serialized_bytes(structured));
        if size > limit {
            return Err(Failure::new(FailureKind::OutputTooLarge { size, limit }));
        }
        return Ok(());
    }
    if content > limit {
        cut(result, content, limit);
    }
    Ok(())
}

/// Keeps the blocks that fit in `limit` with the note, the last text block cut at a
/// character boundary, and appends the note.
fn cut(result: &mut CallToolResult, size: usize, limit: usize) {
    let note = format!(
        "\n[cut: the full result is {size} bytes, over this tool's limit of {limit} bytes; ask for less, e.g. a narrower filter, fewer items or one page at a time]"
    );
    let mut budget = limit.saturating_sub(note.len());
    let blocks = std::mem::take(&mut result.content);
    let mut kept = Vec::new();
    for block in blocks {
        let bytes = block_bytes(&block);
        if bytes <= budget {
            budget -= bytes;
            kept.push(block);
            continue;
        }
        // The first block that does not fit: a text is cut to what is left, anything else
        // (an image, a resource) is left out whole. Nothing after it is kept.
        if let ContentBlock::Text(mut text) = block {
            let end = floor_char_boundary(&text.text, budget);
            text.text.truncate(end);
            // Give back what was cut off: the call holds the rest no longer.
            text.text.shrink_to_fit();
            kept.push(ContentBlock::Text(text));
        }
        break;
    }
    match kept.last_mut() {
        Some(ContentBlock::Text(last)) => last.text.push_str(&note),
        _ => kept.push(ContentBlock::text(note.trim_start().to_owned())),
    }
    result.content = kept;
}

/// The largest index at most `index` that starts a character of `text` (what
/// `str::floor_char_boundary` does, not stable at the MSRV).
fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    // A character is at most 4 bytes, so a boundary is at most 3 bytes back.
    (index.saturating_sub(3)..=index)
        .rev()
        .find(|at| text.is_char_boundary(*at))
        .unwrap_or(0)
}

/// What a block weighs in the result: a text's bytes, anything else as its JSON.
fn block_bytes(block: &ContentBlock) -> usize {
    match block.as_text() {
        Some(text) => text.text.len(),
        None => serialized_bytes(block),
    }
}

/// The exact length of `value` as compact JSON, counted without writing it anywhere.
fn serialized_bytes<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Counting cannot fail, and a value that cannot be written weighs what was counted.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = "a😀b";
        // The emoji is bytes 1..5: every index inside it falls back to its start.
        assert_eq!(
            (0..=6)
                .map(|at| floor_char_boundary(text, at))
                .collect::<Vec<_>>(),
            [0, 1, 1, 1, 1, 5, 6]
        );
        assert_eq!(floor_char_boundary(text, 100), 6);
    }

    #[test]
    fn serialized_bytes_is_the_compact_json_length() {
        let value = serde_json::json!({"a": [1, "é", null], "b": {"c": true}});
        assert_eq!(serialized_bytes(&value), value.to_string().len());
    }
}
