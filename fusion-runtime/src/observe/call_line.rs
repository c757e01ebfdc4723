//! The event of a successful call, handed to the log's writer thread whole and written
//! there: the caller only moves the call's values into it.
//!
//! Why: formatting the line (the arguments rendered, redacted and escaped; the timestamp;
//! every field) was most of what the call log cost the runtime's thread. A success is
//! nearly every call, and its line needs nothing that lives only on that thread. The
//! line is byte for byte what the `tracing` path writes (`tests/call_log_format.rs`
//! compares both with lines captured before), and it is used only where that path would
//! have gone to fusion's own JSON layer (`log::defer_success` says when).

use std::time::SystemTime;

use serde_json::Value;

use super::{args::LoggedArgs, clock::Clock, redact::Redactor};
use crate::failure::panic::CorrelationText;

/// The `tracing` target of per-call events (public as `log::CALL_TARGET`).
pub(crate) const TARGET: &str = "fusion::call";

/// The message of a successful call's event.
pub(crate) const SUCCEEDED: &str = "tool call succeeded";

/// Everything a successful call's line says, owned.
pub(crate) struct CallLine {
    pub(crate) level: tracing::Level,
    pub(crate) at: SystemTime,
    /// The tool's, action's and caller's names, already cut (`echo::name`).
    pub(crate) tool: String,
    pub(crate) action: String,
    pub(crate) request_id: String,
    pub(crate) caller: String,
    pub(crate) correlation: u64,
    pub(crate) latency_us: u64,
    pub(crate) outcome: &'static str,
    pub(crate) attempts: u32,
    /// The call's arguments, rendered (cut and redacted) while the line is written.
    pub(crate) args: Value,
    pub(crate) redactor: Redactor,
}

/// What the writer keeps between lines: the timestamp cache and the buffer the arguments
/// are rendered into before they are escaped as one string.
#[derive(Default)]
pub(crate) struct Scratch {
    pub(crate) clock: Clock,
    args: Vec<u8>,
}

impl CallLine {
    /// Appends the line and its newline to `out`, as `json::write_line` writes the event.
    pub(crate) fn write(&self, out: &mut Vec<u8>, scratch: &mut Scratch) {
        let start = out.len();
        if self.write_json(out, scratch).is_ok() {
            out.push(b'\n');
        } else {
            // Cannot happen when writing to a `Vec`; never leave half a line.
            out.truncate(start);
        }
        if scratch.args.capacity() > MAX_KEPT_ARGS {
            scratch.args = Vec::new();
        }
    }

    /// The members in the order the `tracing` event has them. The keys are fixed ASCII
    /// and written as they are; every value goes through serde_json, which escapes it.
    fn write_json(&self, out: &mut Vec<u8>, scratch: &mut Scratch) -> serde_json::Result<()> {
        out.extend_from_slice(br#"{"timestamp":"#);
        string(out, scratch.clock.now(self.at))?;
        out.extend_from_slice(br#","level":"#);
        string(out, self.level.as_str())?;
        out.extend_from_slice(br#","fields":{"message":"#);
        string(out, SUCCEEDED)?;
        out.extend_from_slice(br#","tool":"#);
        string(out, &self.tool)?;
        out.extend_from_slice(br#","action":"#);
        string(out, &self.action)?;
        out.extend_from_slice(br#","request_id":"#);
        string(out, &self.request_id)?;
        out.extend_from_slice(br#","caller":"#);
        string(out, &self.caller)?;
        out.extend_from_slice(br#","correlation_id":"#);
        string(out, CorrelationText::new(self.correlation).as_str())?;
        out.extend_from_slice(br#","latency_us":"#);
        number(out, self.latency_us);
        out.extend_from_slice(br#","outcome":"#);
        string(out, self.outcome)?;
        out.extend_from_slice(br#","attempts":"#);
        number(out, u64::from(self.attempts));
        // As tracing-serde records a `%value` field: its `Display`, as a string. Rendered
        // whole first, then escaped in one pass.
        out.extend_from_slice(br#","arguments":"#);
        scratch.args.clear();
        LoggedArgs {
            args: &self.args,
            redactor: &self.redactor,
        }
        .write_json(&mut scratch.args)?;
        let rendered = std::str::from_utf8(&scratch.args).map_err(serde::ser::Error::custom)?;
        string(out, rendered)?;
        out.extend_from_slice(br#"},"target":"#);
        string(out, TARGET)?;
        out.push(b'}');
        Ok(())
    }
}

/// The most the arguments' buffer keeps between lines (a huge call's rendering is not
/// held for the life of the process).
const MAX_KEPT_ARGS: usize = 64 << 10;

/// `text` as a JSON string, escaped by serde_json.
fn string(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    serde_json::to_writer(out, text)
}

fn number(out: &mut Vec<u8>, number: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(number).as_bytes());
}
