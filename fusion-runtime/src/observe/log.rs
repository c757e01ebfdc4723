//! Structured logging: one event per tool call, through `tracing`, target `fusion::call`.
//!
//! [`init`] installs a JSON subscriber on stderr (stdout belongs to the protocol on stdio).
//! A program that installs its own subscriber keeps it and still receives these events.

use std::time::Duration;

use serde_json::Value;

use crate::{
    failure::Failure,
    validate::{ArgIssue, IssueCode},
};

/// The `tracing` target of per-call events.
pub const CALL_TARGET: &str = "fusion::call";

/// The JSON log's sink, once [`init`] installed it: [`flush`] drains it.
static SINK: std::sync::OnceLock<std::sync::Arc<super::sink::Sink>> = std::sync::OnceLock::new();

/// How long [`flush`] waits for queued lines to be written: a stderr nobody reads must not
/// hold the process's exit forever.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Installs a JSON log subscriber writing to stderr, filtered by `RUST_LOG` (default
/// `info`). Does nothing when a global subscriber is already set.
///
/// Lines are written by a background thread in batches, so a slow stderr (a full pipe, a
/// terminal) never holds up a call; [`flush`] writes out what is queued, and the `serve_*`
/// methods call it before they return. fusion's own events (targets `fusion::*`) are
/// written by fusion's writer, the others by tracing-subscriber's JSON formatter, in the
/// same format: `{"timestamp", "level", "fields": {"message", ...}, "target"}`.
///
/// ```
/// fusion_runtime::log::init();
/// fusion_runtime::log::init(); // a second call is harmless
/// ```
pub fn init() {
    use tracing_subscriber::{layer::SubscriberExt as _, util::SubscriberInitExt as _};
    if SINK.get().is_some() {
        return;
    }
    // rmcp's own per-request spans and events cost a third of a microsecond a call and
    // repeat what the call event says; they stay available with RUST_LOG=rmcp=info.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let sink = super::sink::Sink::start(Box::new(std::io::stderr()));
    let fmt = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(false)
        .with_writer(super::sink::SinkWriter(std::sync::Arc::clone(&sink)));
    // `try_init` fails only when a subscriber is already installed: the program's own
    // choice wins.
    let installed = tracing_subscriber::registry()
        .with(filter)
        .with(super::json::JsonLog::new(fmt, std::sync::Arc::clone(&sink)))
        .try_init();
    if installed.is_err() || SINK.set(std::sync::Arc::clone(&sink)).is_err() {
        // Not ours to write: stop the thread just started.
        sink.close(FLUSH_TIMEOUT);
    }
}

/// Writes out every queued log line and stops the background writer (waiting at most a few
/// seconds for a stderr that nobody reads). Lines logged afterwards are written at once, by
/// the thread that logs them.
pub fn flush() {
    if let Some(sink) = SINK.get() {
        sink.close(FLUSH_TIMEOUT);
    }
}

pub use crate::echo::REDACTED;

/// Hides the values of a call's `secret` arguments: in the logged arguments (by key, at
/// any depth) and in every text logged or sent about the call (by value: an error message
/// or a panic that quotes the secret).
#[derive(Debug, Default)]
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
    let kept = crate::echo::prefix(text, ISSUE_TEXT_CHARS);
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

/// What the log says of one finished call.
pub(crate) struct CallRecord<'a> {
    pub(crate) tool: &'a str,
    pub(crate) action: Option<&'a str>,
    pub(crate) request_id: Option<&'a str>,
    /// The verified token's subject, when the caller has one (never the token).
    pub(crate) caller: Option<&'a str>,
    pub(crate) args: &'a Value,
    pub(crate) correlation_id: &'a crate::failure::panic::CorrelationId,
    pub(crate) latency: Duration,
    pub(crate) outcome: &'static str,
    /// How many times the handler ran.
    pub(crate) attempts: u32,
    pub(crate) failure: Option<&'a Failure>,
    /// The text the model was sent.
    pub(crate) message: &'a str,
    pub(crate) redactor: &'a Redactor,
    /// The level of successful calls (info by default).
    pub(crate) ok_level: tracing::Level,
}

/// Emits the event of one finished call. Successes at the configured level (info by
/// default), the client's mistakes at warn, server faults at error.
pub(crate) fn call_event(record: &CallRecord<'_>) {
    let CallRecord {
        tool,
        args,
        correlation_id,
        outcome,
        attempts,
        failure,
        message,
        redactor,
        ..
    } = *record;
    let level = match (failure, record.ok_level) {
        (None, level) => level,
        (Some(failure), _) if failure.is_masked() => tracing::Level::ERROR,
        (Some(failure), _) if failure.is_warning() => tracing::Level::INFO,
        (Some(_), _) => tracing::Level::WARN,
    };
    // Rendering the arguments is most of an event's cost: skip it when nobody listens.
    let enabled = match level {
        tracing::Level::ERROR => tracing::enabled!(target: CALL_TARGET, tracing::Level::ERROR),
        tracing::Level::WARN => tracing::enabled!(target: CALL_TARGET, tracing::Level::WARN),
        tracing::Level::INFO => tracing::enabled!(target: CALL_TARGET, tracing::Level::INFO),
        tracing::Level::DEBUG => tracing::enabled!(target: CALL_TARGET, tracing::Level::DEBUG),
        tracing::Level::TRACE => tracing::enabled!(target: CALL_TARGET, tracing::Level::TRACE),
    };
    if !enabled {
        return;
    }
    let correlation_id = correlation_id.as_str();
    let latency_us = u64::try_from(record.latency.as_micros()).unwrap_or(u64::MAX);
    // The client's names, cut: an unknown tool's name may be megabytes.
    let tool = crate::echo::name(tool);
    let tool = tool.as_ref();
    let action = crate::echo::name(record.action.unwrap_or(""));
    let action = action.as_ref();
    let request_id = record.request_id.unwrap_or("");
    let caller = crate::echo::name(record.caller.unwrap_or(""));
    let caller = caller.as_ref();
    // Written once, by whoever formats the event: straight into fusion's log line.
    let arguments = super::args::LoggedArgs { args, redactor };
    macro_rules! event {
        ($level:expr, $message:literal $(, $key:ident = $value:expr)*) => {
            tracing::event!(
                target: CALL_TARGET,
                $level,
                tool,
                action,
                request_id,
                caller,
                correlation_id,
                latency_us,
                outcome,
                attempts,
                arguments = %arguments,
                $($key = $value,)*
                $message
            )
        };
    }
    match failure {
        None if record.ok_level == tracing::Level::DEBUG => {
            event!(tracing::Level::DEBUG, "tool call succeeded")
        }
        None if record.ok_level == tracing::Level::TRACE => {
            event!(tracing::Level::TRACE, "tool call succeeded")
        }
        None => event!(tracing::Level::INFO, "tool call succeeded"),
        Some(failure) if failure.is_masked() => {
            let error = redactor.text(&failure.details());
            let chain: Vec<String> = failure
                .chain
                .iter()
                .map(|link| redactor.text(link))
                .collect();
            let source_chain = serde_json::to_string(&chain).unwrap_or_default();
            event!(
                tracing::Level::ERROR,
                "tool call failed",
                error = tracing::field::display(&error),
                source_chain = tracing::field::display(&source_chain)
            )
        }
        Some(failure) if failure.is_warning() => event!(
            tracing::Level::INFO,
            "tool call returned a warning",
            error = message
        ),
        Some(_) => event!(tracing::Level::WARN, "tool call rejected", error = message),
    }
}

/// The target of recovery events: retries, reconnects, circuit changes.
pub const RECOVERY_TARGET: &str = "fusion::recovery";

/// One retry about to happen.
pub(crate) fn retry_event(
    tool: &str,
    attempt: u32,
    of: u32,
    delay: Duration,
    failure: &Failure,
    redactor: &Redactor,
) {
    let delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    tracing::warn!(
        target: RECOVERY_TARGET,
        tool,
        attempt,
        attempts = of,
        delay_ms,
        outcome = failure.outcome_name(),
        error = %redactor.text(&failure.details()),
        "transient failure, retrying"
    );
}

/// A reconnect of a tool's resource, and how it went.
pub(crate) fn reconnect_event(tool: &str, took: Duration, error: Option<&String>) {
    let duration_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    match error {
        None => {
            tracing::info!(target: RECOVERY_TARGET, tool, duration_us, result = "ok", "resource reconnected")
        }
        Some(error) => tracing::warn!(
            target: RECOVERY_TARGET,
            tool,
            duration_us,
            result = "failed",
            error = error.as_str(),
            "resource reconnect failed"
        ),
    }
}

/// A circuit breaker opened or closed.
pub(crate) fn circuit_event(tool: &str, transition: crate::policy::Transition) {
    match transition {
        crate::policy::Transition::Opened => {
            tracing::warn!(target: RECOVERY_TARGET, tool, circuit = "open", "circuit opened: calls fail fast")
        }
        crate::policy::Transition::Closed => {
            tracing::info!(target: RECOVERY_TARGET, tool, circuit = "closed", "circuit closed: calls flow again")
        }
    }
}

/// The target of the fatal event.
pub const FATAL_TARGET: &str = "fusion::fatal";

/// A handler's fatal error: one event with the whole source chain.
pub(crate) fn fatal_event(
    tool: &str,
    correlation_id: &str,
    failure: &Failure,
    redactor: &Redactor,
) {
    let error = redactor.text(failure.chain.first().map_or("", String::as_str));
    // The process is about to end: if no subscriber takes this event (none installed, or
    // `RUST_LOG` filters it out), it goes to stderr as one line, so the reason is never lost.
    if !tracing::enabled!(target: FATAL_TARGET, tracing::Level::ERROR) {
        use std::io::Write as _;
        // Nothing to do if stderr itself is gone.
        let _ = writeln!(
            std::io::stderr().lock(),
            "fusion: fatal error in tool `{tool}`: {error} (correlation id {correlation_id}); exiting with code {}",
            crate::exit::EXIT_FATAL
        );
    }
    tracing::error!(
        target: FATAL_TARGET,
        tool,
        correlation_id,
        error = %error,
        source_chain = %redactor.text(&failure.details()),
        exit_code = crate::exit::EXIT_FATAL,
        "fatal error: the server is shutting down"
    );
}

/// The server refused to start.
pub(crate) fn startup_failed(error: &dyn std::fmt::Display) {
    tracing::error!(
        target: FATAL_TARGET,
        error = %error,
        exit_code = crate::exit::EXIT_CONFIG,
        "start-up failed: not serving"
    );
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
