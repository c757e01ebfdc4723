//! The event of a successful call, queued as its text and numbers and written as a JSON
//! line by the log's writer thread.
//!
//! Why: formatting the line (the escaping, the timestamp, every field) was most of what
//! the call log cost the runtime's thread, and a success is nearly every call. The caller
//! copies the line's text (the names, and the arguments rendered under the log's rules)
//! into the sink's text buffer, next to the lines queued before it: no allocation a call,
//! nothing of the call's own memory kept past it (so nothing for another thread to free).
//! The writer escapes and frames it. The line is byte for byte what the `tracing` path
//! writes (`tests/stdio/call_log_format.rs` compares both with lines captured before), and it is
//! used only where that path would have gone to fusion's own JSON layer
//! (`log::defer_success` says when).

use std::{ops::Range, time::Instant};

use serde_json::Value;

use super::{
    args::LoggedArgs,
    clock::{Anchor, Clock},
    redact::Redactor,
};
use crate::failure::panic::CorrelationText;

/// The `tracing` target of per-call events (public as `log::CALL_TARGET`).
pub(crate) const TARGET: &str = "fusion::call";

/// What a successful call's line says, as the call has it.
pub(crate) struct CallLine<'a> {
    pub(crate) level: tracing::Level,
    /// When the call ended (the monotonic reading its latency came from).
    pub(crate) at: Instant,
    pub(crate) tool: &'a str,
    pub(crate) action: &'a str,
    pub(crate) request_id: &'a str,
    pub(crate) caller: &'a str,
    pub(crate) correlation: u64,
    pub(crate) latency_us: u64,
    pub(crate) outcome: &'static str,
    pub(crate) attempts: u32,
    pub(crate) args: &'a Value,
    pub(crate) redactor: &'a Redactor,
    /// The ids of the call's span, when it is in a trace (feature `otel`).
    pub(crate) trace: Option<TraceIds>,
}

/// The W3C ids of a span in a trace, written on a call's line as lowercase hex
/// (`trace_id`, `span_id`), as OpenTelemetry writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TraceIds {
    pub(crate) trace_id: [u8; 16],
    pub(crate) span_id: [u8; 8],
}

impl TraceIds {
    /// The two ids in hex.
    pub(crate) fn to_hex(self) -> (String, String) {
        let mut trace_id = Vec::with_capacity(32);
        let mut span_id = Vec::with_capacity(16);
        push_hex(&mut trace_id, &self.trace_id);
        push_hex(&mut span_id, &self.span_id);
        // Hex digits are ASCII.
        (
            String::from_utf8(trace_id).unwrap_or_default(),
            String::from_utf8(span_id).unwrap_or_default(),
        )
    }
}

fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 0xf)]);
    }
}

/// A call line in the queue: its numbers, and where its texts are in the queue's text
/// buffer (raw: escaped when written).
pub(crate) struct Queued {
    level: tracing::Level,
    at: Instant,
    correlation: u64,
    latency_us: u64,
    outcome: &'static str,
    attempts: u32,
    tool: Range<usize>,
    action: Range<usize>,
    request_id: Range<usize>,
    caller: Range<usize>,
    /// The arguments' JSON, cut and redacted, to be written as one string.
    args: Range<usize>,
    trace: Option<TraceIds>,
}

/// About what a queued line adds to its texts once written (its keys, numbers and
/// timestamp): what it counts for against the sink's limit.
pub(crate) const FRAME_BYTES: usize = 256;

impl Queued {
    /// Copies `line`'s texts to the end of `text` (the names cut as the log cuts them).
    pub(crate) fn store(line: &CallLine<'_>, text: &mut Vec<u8>) -> Self {
        let tool = push(text, &crate::limits::name(line.tool));
        let action = push(text, &crate::limits::name(line.action));
        // An id is the client's and shown whole, as the `tracing` path shows it.
        let request_id = push(text, line.request_id);
        let caller = push(text, &crate::limits::name(line.caller));
        let start = text.len();
        let rendered = LoggedArgs {
            args: line.args,
            redactor: line.redactor,
        }
        .write_json(text);
        if rendered.is_err() {
            // Cannot happen when writing to a `Vec`; never keep half a rendering.
            text.truncate(start);
        }
        Self {
            level: line.level,
            at: line.at,
            correlation: line.correlation,
            latency_us: line.latency_us,
            outcome: line.outcome,
            attempts: line.attempts,
            tool,
            action,
            request_id,
            caller,
            args: start..text.len(),
            trace: line.trace,
        }
    }

    /// Appends the line and its newline to `out`, as `json::write_line` writes the event;
    /// `text` is the buffer [`Queued::store`] wrote to, `anchor` the clocks read after the
    /// call ended.
    pub(crate) fn write(&self, text: &str, out: &mut Vec<u8>, clock: &mut Clock, anchor: &Anchor) {
        let start = out.len();
        if self.write_json(text, out, clock, anchor).is_ok() {
            out.push(b'\n');
        } else {
            // Only if `text` is not the buffer the line was stored in; never half a line.
            out.truncate(start);
        }
    }

    /// The members in the order the `tracing` event has them. The keys and fusion's own
    /// constant texts are written as they are (their JSON is themselves: [`level_to_tool`]'s
    /// test checks it); every other value goes through serde_json, which escapes it.
    fn write_json(
        &self,
        text: &str,
        out: &mut Vec<u8>,
        clock: &mut Clock,
        anchor: &Anchor,
    ) -> serde_json::Result<()> {
        let part = |range: &Range<usize>| {
            text.get(range.clone())
                .ok_or_else(|| serde::ser::Error::custom("a call line's text is missing"))
        };
        out.extend_from_slice(br#"{"timestamp":"#);
        ascii_string(out, clock.now(anchor.wall_time(self.at)).as_bytes());
        out.extend_from_slice(level_to_tool(self.level));
        string(out, part(&self.tool)?)?;
        out.extend_from_slice(br#","action":"#);
        string(out, part(&self.action)?)?;
        out.extend_from_slice(br#","request_id":"#);
        string(out, part(&self.request_id)?)?;
        out.extend_from_slice(br#","caller":"#);
        string(out, part(&self.caller)?)?;
        out.extend_from_slice(br#","correlation_id":"#);
        ascii_string(out, CorrelationText::new(self.correlation).as_bytes());
        out.extend_from_slice(br#","latency_us":"#);
        number(out, self.latency_us);
        out.extend_from_slice(br#","outcome":"#);
        ascii_string(out, self.outcome.as_bytes());
        out.extend_from_slice(br#","attempts":"#);
        number(out, u64::from(self.attempts));
        // As tracing-serde records a `%value` field: its `Display`, as a string.
        out.extend_from_slice(br#","arguments":"#);
        string(out, part(&self.args)?)?;
        if let Some(ids) = &self.trace {
            out.extend_from_slice(br#","trace_id":""#);
            push_hex(out, &ids.trace_id);
            out.extend_from_slice(br#"","span_id":""#);
            push_hex(out, &ids.span_id);
            out.push(b'"');
        }
        out.extend_from_slice(FIELDS_END_AND_TARGET);
        Ok(())
    }
}

/// The line's end: the fields' object closed, then the target.
const FIELDS_END_AND_TARGET: &[u8] = br#"},"target":"fusion::call"}"#;

/// The line from its level to the tool's key: the level, the message, in one piece.
fn level_to_tool(level: tracing::Level) -> &'static [u8] {
    macro_rules! piece {
        ($level:literal) => {
            concat!(
                r#","level":""#,
                $level,
                r#"","fields":{"message":"tool call succeeded","tool":"#
            )
            .as_bytes()
        };
    }
    match level {
        tracing::Level::ERROR => piece!("ERROR"),
        tracing::Level::WARN => piece!("WARN"),
        tracing::Level::INFO => piece!("INFO"),
        tracing::Level::DEBUG => piece!("DEBUG"),
        tracing::Level::TRACE => piece!("TRACE"),
    }
}

/// Appends `value` to `text`; where it went.
fn push(text: &mut Vec<u8>, value: &str) -> Range<usize> {
    let start = text.len();
    text.extend_from_slice(value.as_bytes());
    start..text.len()
}

/// `text` as a JSON string, escaped by serde_json. An empty text (no action, no caller:
/// most calls) is written as it is.
fn string(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    if text.is_empty() {
        out.extend_from_slice(b"\"\"");
        return Ok(());
    }
    serde_json::to_writer(out, text)
}

/// A text made of digits, letters and punctuation other than `"` and `\\` (a timestamp, a
/// correlation id, an outcome's name) as a JSON string: quoted as it is, which is what
/// serde_json writes for it, without looking at every byte (the tests below hold each
/// kind of text to that).
fn ascii_string(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(text);
    out.push(b'"');
}

fn number(out: &mut Vec<u8>, number: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of a successful call's event, as `log::call_event` writes it.
    const SUCCEEDED: &str = "tool call succeeded";

    #[test]
    fn the_constant_pieces_are_what_serde_json_writes() {
        for level in [
            tracing::Level::ERROR,
            tracing::Level::WARN,
            tracing::Level::INFO,
            tracing::Level::DEBUG,
            tracing::Level::TRACE,
        ] {
            let expected = format!(
                r#","level":{},"fields":{{"message":{},"tool":"#,
                serde_json::json!(level.as_str()),
                serde_json::json!(SUCCEEDED)
            );
            assert_eq!(level_to_tool(level), expected.as_bytes());
        }
        let end = format!(r#"}},"target":{}}}"#, serde_json::json!(TARGET));
        assert_eq!(FIELDS_END_AND_TARGET, end.as_bytes());
    }

    #[test]
    fn timestamps_correlation_ids_and_outcomes_need_no_escaping() {
        let mut clock = Clock::default();
        let anchor = Anchor::now();
        let texts = [
            clock.now(anchor.wall_time(Instant::now())).to_owned(),
            clock.now(std::time::SystemTime::UNIX_EPOCH).to_owned(),
            CorrelationText::new(0).as_str().to_owned(),
            CorrelationText::new(u64::MAX).as_str().to_owned(),
        ];
        let outcomes = [
            crate::failure::outcome::OK,
            crate::failure::outcome::RETRIED_OK,
            crate::failure::outcome::REPLAYED,
            crate::failure::outcome::CANCELLED,
        ];
        for text in texts.into_iter().chain(outcomes.map(str::to_owned)) {
            let mut ours = Vec::new();
            ascii_string(&mut ours, text.as_bytes());
            assert_eq!(
                ours,
                serde_json::to_vec(&text).expect("written"),
                "{text:?}"
            );
            assert!(text.bytes().all(|byte| byte.is_ascii_graphic()), "{text:?}");
        }
        let mut empty = Vec::new();
        string(&mut empty, "").expect("written");
        assert_eq!(empty, serde_json::to_vec("").expect("written"));
    }
}
