//! The server's limits on arguments (depth, string size, items, key size): checked before
//! decoding, whatever the schema says, so that arguments built to exhaust the server are
//! refused before anything else reads them.

use serde_json::Value;

use crate::failure::{
    issue::{ArgIssue, IssueCode},
    wording::args as words,
};

use super::walk::{Segment, Walk};

/// Limits that protect the server from arguments built to exhaust it. Checked before
/// decoding; a breach is an argument problem like any other, with the path of the value.
///
/// Keys longer than [`MAX_KEY_BYTES`](crate::limits::MAX_KEY_BYTES), at any depth, are breaches
/// too (`too_large`), whatever these limits say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How deep objects and arrays may nest (the arguments object is depth 1).
    pub max_depth: usize,
    /// The longest string, in bytes.
    pub max_string_bytes: usize,
    /// The most items in one array (or entries in one object).
    pub max_items: usize,
}

impl Default for Limits {
    /// 32 levels, 1 MiB strings, 10,000 items.
    fn default() -> Self {
        Self {
            max_depth: 32,
            max_string_bytes: 1 << 20,
            max_items: 10_000,
        }
    }
}

impl Limits {
    /// Every breach of the limits in `args`, each with its path.
    pub fn check(&self, args: &Value) -> Vec<ArgIssue> {
        // Nearly every call is within the limits: a first look that keeps no path (and
        // allocates nothing) says so; only a breach is walked again for its paths.
        if self.within(args, 1) {
            return Vec::new();
        }
        let mut walk = Walk::new(&[], None);
        walk.limits(self, args, 1);
        walk.issues
    }

    /// Whether `value`, at `depth`, breaches nothing (the same rules as [`Walk::limits`]).
    fn within(&self, value: &Value, depth: usize) -> bool {
        match value {
            Value::String(text) => text.len() <= self.max_string_bytes,
            Value::Array(_) | Value::Object(_) if depth > self.max_depth => false,
            Value::Array(items) => {
                items.len() <= self.max_items
                    && items.iter().all(|item| self.within(item, depth + 1))
            }
            Value::Object(object) => {
                object.len() <= self.max_items
                    && object.iter().all(|(key, item)| {
                        key.len() <= crate::limits::MAX_KEY_BYTES && self.within(item, depth + 1)
                    })
            }
            _ => true,
        }
    }
}

impl<'a> Walk<'a> {
    fn limits(&mut self, limits: &Limits, value: &'a Value, depth: usize) {
        match value {
            Value::String(text) if text.len() > limits.max_string_bytes => self.report(
                IssueCode::TooLarge,
                words::string_over_limit(limits.max_string_bytes, text.len()),
                Some(value),
            ),
            Value::Array(_) | Value::Object(_) if depth > limits.max_depth => {
                self.report(IssueCode::TooDeep, words::too_deep(limits.max_depth), None);
            }
            Value::Array(items) if items.len() > limits.max_items => self.report(
                IssueCode::TooLarge,
                words::items_over_limit(limits.max_items, items.len()),
                None,
            ),
            Value::Object(object) if object.len() > limits.max_items => self.report(
                IssueCode::TooLarge,
                words::entries_over_limit(limits.max_items, object.len()),
                None,
            ),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.path.push(Segment::Index(index));
                    self.limits(limits, item, depth + 1);
                    self.path.pop();
                }
            }
            Value::Object(object) => {
                for (key, item) in object {
                    self.path.push(Segment::Key(key));
                    if key.len() > crate::limits::MAX_KEY_BYTES {
                        // Refused before any decode, did-you-mean or schema walk reads it;
                        // the path quotes it cut. Its value is not looked at.
                        let (said, received) =
                            words::key_over_limit(crate::limits::MAX_KEY_BYTES, key.len());
                        self.report_as(IssueCode::TooLarge, said, Some(received));
                    } else {
                        self.limits(limits, item, depth + 1);
                    }
                    self.path.pop();
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn giant_keys_are_refused_before_decoding_and_quoted_cut() {
        let key = "k".repeat(crate::limits::MAX_KEY_BYTES + 1);
        let args = json!({"ok": 1, "nested": {key.clone(): 2}});
        let issues = Limits::default().check(&args);
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0].code, IssueCode::TooLarge);
        assert_eq!(
            issues[0].path,
            format!("nested[\"{}… (257 bytes in all)\"]", "k".repeat(60))
        );
        // At the limit: accepted.
        let fits = json!({"k".repeat(crate::limits::MAX_KEY_BYTES): 1});
        assert!(Limits::default().check(&fits).is_empty());
    }
}
