//! Redaction: a call's `secret` arguments hidden from the log (by key) and from every text
//! logged or sent about the call (by value), and problem reports made safe to show.

use serde_json::Value;

use crate::{
    limits::REDACTED,
    validate::{ArgIssue, IssueCode},
};

/// Hides the values of a call's `secret` arguments: in the logged arguments (by key, at
/// any depth) and in every text logged or sent about the call (by value: an error message
/// or a panic that quotes the secret).
#[derive(Clone, Debug, Default)]
pub(crate) struct Redactor {
    keys: Vec<String>,
    /// Secret values of at least 4 characters, and their escaped spellings (as JSON and
    /// Rust's `{:?}` write them), longest first: replaced wherever they appear.
    values: Vec<String>,
    /// Every secret value, short ones too: a problem report about a secret that quotes one
    /// of them, or 8 bytes of one, is withheld (see [`Redactor::issues`]).
    all: Vec<String>,
}

/// The shortest stretch of a secret that counts as quoting it: long enough that ordinary
/// words do not match by chance, short enough that a cut prefix is caught.
const QUOTE_WINDOW: usize = 8;

/// The most characters of a hint, or of a tool's own complaint, that a problem report
/// keeps: they may quote the input (serde's "invalid value: string ..."), which can be as
/// long as a string may be.
const ISSUE_TEXT_CHARS: usize = 300;

impl Redactor {
    /// Collects the secret values of `args` for the keys a tool marked `secret`.
    pub(crate) fn new(keys: &[String], args: &Value) -> Self {
        let mut all = Vec::new();
        if !keys.is_empty() {
            collect(args, keys, false, &mut all, 0);
        }
        all.sort();
        all.dedup();
        let mut values = Vec::new();
        for value in &all {
            // Short values (a PIN's digits) would redact unrelated text; they are still
            // hidden by key in the logged arguments, and withheld from problem reports.
            if value.chars().count() < 4 {
                continue;
            }
            values.push(value.clone());
            // A message that quotes the value escaped (a JSON preview, serde's `{:?}`)
            // does not contain it as sent.
            let json = Value::String(value.clone()).to_string();
            let debug = format!("{value:?}");
            for quoted in [json, debug] {
                let inner = &quoted[1..quoted.len() - 1];
                if inner != value.as_str() {
                    values.push(inner.to_owned());
                }
            }
        }
        // Longest first, so a secret that contains another is replaced whole.
        values.sort_by_key(|value| std::cmp::Reverse(value.len()));
        values.dedup();
        Self {
            keys: keys.to_vec(),
            values,
            all,
        }
    }

    /// `text` with every secret value replaced.
    pub(crate) fn text(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for value in &self.values {
            text = text.replace(value.as_str(), REDACTED);
        }
        text
    }

    /// A JSON value with every secret value replaced (for `_meta` details).
    pub(crate) fn json(&self, value: Value) -> Value {
        if self.values.is_empty() {
            return value;
        }
        match value {
            Value::String(text) => Value::String(self.text(&text)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|item| self.json(item)).collect())
            }
            Value::Object(entries) => Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, self.json(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// Makes argument problems safe to show, before they are rendered into the message,
    /// `_meta` and the log. Whole secret values are replaced first, then text that may
    /// quote input is cut (in this order: a cut first would leave a prefix that no longer
    /// matches the whole value). A problem at a secret's path never shows what was received,
    /// and a hint or a tool's own complaint there that quotes the secret (whole, or any 8
    /// bytes of it) is withheld: the validator already reports secrets without their
    /// content, and this also covers the limit checks and `validate = ..` functions.
    pub(crate) fn issues(&self, issues: &mut [ArgIssue]) {
        for issue in issues {
            let at_secret = self.touches_secret(&issue.path);
            if !self.values.is_empty() {
                issue.expected = self.text(&issue.expected);
                issue.received = issue.received.as_deref().map(|text| self.text(text));
                issue.hint = issue.hint.as_deref().map(|text| self.text(text));
            }
            issue.hint = issue.hint.as_deref().map(cut_text);
            if matches!(issue.code, IssueCode::Custom | IssueCode::Decode) {
                issue.expected = cut_text(&issue.expected);
            }
            if !at_secret {
                continue;
            }
            if let Some(received) = &mut issue.received
                && !received.starts_with(REDACTED)
            {
                // "<preview> (a string)": keep the type, which says what to fix.
                *received = match received.rsplit_once(" (") {
                    Some((_, kind)) => format!("{REDACTED} ({kind}"),
                    None => REDACTED.to_owned(),
                };
            }
            if issue.hint.as_deref().is_some_and(|hint| self.quotes(hint)) {
                issue.hint = None;
            }
            if issue.code == IssueCode::Custom && self.quotes(&issue.expected) {
                issue.expected =
                    "a value the tool's own check accepts (its reason quoted the secret value, so it is not shown)"
                        .to_owned();
            }
        }
    }

    /// Whether a problem's path (`creds.token`, `items[2].pin`) goes through a secret key.
    fn touches_secret(&self, path: &str) -> bool {
        !self.keys.is_empty()
            && path
                .split(['.', '[', ']'])
                .any(|segment| self.is_secret_key(segment))
    }

    /// Whether `text` quotes a secret: one of fewer than 8 bytes whole, or any 8-byte
    /// stretch of a longer one. One pass over each secret, whatever its length.
    fn quotes(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let windows: std::collections::HashSet<&[u8]> = bytes.windows(QUOTE_WINDOW).collect();
        self.all.iter().any(|secret| {
            if secret.len() < QUOTE_WINDOW {
                text.contains(secret.as_str())
            } else {
                secret
                    .as_bytes()
                    .windows(QUOTE_WINDOW)
                    .any(|window| windows.contains(window))
            }
        })
    }

    pub(super) fn is_secret_key(&self, key: &str) -> bool {
        self.keys.iter().any(|secret| secret == key)
    }
}

/// Text of a problem report cut to [`ISSUE_TEXT_CHARS`] characters.
fn cut_text(text: &str) -> String {
    let kept = crate::limits::prefix(text, ISSUE_TEXT_CHARS);
    if kept.len() == text.len() {
        text.to_owned()
    } else {
        format!("{kept}…")
    }
}

fn collect(value: &Value, keys: &[String], secret: bool, out: &mut Vec<String>, depth: usize) {
    if depth > 64 {
        return;
    }
    match value {
        Value::String(text) if secret && !text.is_empty() => out.push(text.clone()),
        Value::Number(number) if secret => out.push(number.to_string()),
        Value::Array(items) => items
            .iter()
            .for_each(|item| collect(item, keys, secret, out, depth + 1)),
        Value::Object(entries) => {
            for (key, item) in entries {
                collect(
                    item,
                    keys,
                    secret || keys.iter().any(|k| k == key),
                    out,
                    depth + 1,
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn issue(path: &str, code: IssueCode, expected: &str, received: &str, hint: &str) -> ArgIssue {
        ArgIssue {
            path: path.into(),
            code,
            expected: expected.into(),
            received: Some(received.into()),
            hint: Some(hint.into()),
        }
    }

    #[test]
    fn escaped_spellings_of_a_secret_are_redacted_too() {
        let secret = "pa\"ss\\word";
        let redactor = Redactor::new(&["password".into()], &json!({"password": secret}));
        // As sent, as JSON writes it, as `{:?}` writes it.
        for text in [
            format!("got {secret}"),
            format!("got {}", Value::String(secret.into())),
            format!("got {secret:?}"),
        ] {
            let shown = redactor.text(&text);
            assert!(!shown.contains("ss"), "{shown}");
            assert!(shown.contains(REDACTED), "{shown}");
        }
    }

    #[test]
    fn problems_at_a_secret_never_quote_it() {
        let secret = "Zq7-very-secret-token-value";
        let args = json!({"creds": [{"token": secret}], "other": "x"});
        let redactor = Redactor::new(&["token".into()], &args);
        let prefix = &secret[..12];
        let mut issues = vec![
            // A limit check, which knows no schema, quoted a prefix.
            issue(
                "creds[0].token",
                IssueCode::TooLarge,
                "a string of at most 16 bytes",
                &format!("\"{prefix}… (a string)"),
                "send less",
            ),
            // A tool's own check quoted a prefix in its complaint.
            issue(
                "creds[0].token",
                IssueCode::Custom,
                &format!("token {prefix}… was revoked"),
                "",
                &format!("use another than {prefix}"),
            ),
            // Elsewhere, nothing changes.
            issue(
                "other",
                IssueCode::Type,
                "an integer",
                "\"x\" (a string)",
                "send 1",
            ),
        ];
        redactor.issues(&mut issues);
        assert_eq!(issues[0].received.as_deref(), Some("[redacted] (a string)"));
        assert_eq!(issues[0].hint.as_deref(), Some("send less"));
        assert!(
            issues[1]
                .expected
                .starts_with("a value the tool's own check accepts")
        );
        assert_eq!(issues[1].hint, None);
        assert_eq!(issues[2].received.as_deref(), Some("\"x\" (a string)"));
        assert_eq!(issues[2].hint.as_deref(), Some("send 1"));
        let shown = format!("{issues:?}");
        assert!(!shown.contains(&secret[..8]), "{shown}");
    }

    #[test]
    fn short_secrets_are_withheld_from_problems_but_not_replaced_in_text() {
        let redactor = Redactor::new(&["pin".into()], &json!({"pin": "42"}));
        // Replacing "42" everywhere would garble unrelated text...
        assert_eq!(redactor.text("at most 42 items"), "at most 42 items");
        // ...but a complaint about the PIN that quotes it is withheld.
        let mut issues = vec![issue("pin", IssueCode::Custom, "PIN 42 is locked", "", "")];
        redactor.issues(&mut issues);
        assert!(!issues[0].expected.contains("42"), "{:?}", issues[0]);
    }

    #[test]
    fn text_that_quotes_input_is_cut_after_redaction() {
        let secret = "s".repeat(500);
        let redactor = Redactor::new(&["key".into()], &json!({"key": secret}));
        let mut issues = vec![issue(
            "",
            IssueCode::Decode,
            "arguments the tool's types accept",
            "",
            &format!("invalid value: {secret} and {}", "y".repeat(5000)),
        )];
        redactor.issues(&mut issues);
        let hint = issues[0].hint.as_deref().unwrap_or("");
        assert!(
            hint.starts_with("invalid value: [redacted] and yyy"),
            "{hint}"
        );
        assert!(
            hint.chars().count() <= ISSUE_TEXT_CHARS + 1,
            "{}",
            hint.len()
        );
    }
}
