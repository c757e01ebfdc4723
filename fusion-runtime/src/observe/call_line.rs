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

use serde::{Serializer as _, ser::SerializeMap as _};
use serde_json::Value;

use super::{args::LoggedArgs, clock::Clock, redact::Redactor};
use crate::failure::panic::CorrelationId;

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

impl CallLine {
    /// Appends the line and its newline to `out`, as `json::write_line` writes the event.
    pub(crate) fn write(&self, out: &mut Vec<u8>, clock: &mut Clock) {
        let start = out.len();
        if self.write_json(out, clock).is_ok() {
            out.push(b'\n');
        } else {
            // Cannot happen when writing to a `Vec`; never leave half a line.
            out.truncate(start);
        }
    }

    fn write_json(&self, out: &mut Vec<u8>, clock: &mut Clock) -> Result<(), serde_json::Error> {
        let mut serializer = serde_json::Serializer::new(&mut *out);
        let mut line = serializer.serialize_map(None)?;
        line.serialize_entry("timestamp", clock.now(self.at))?;
        line.serialize_entry("level", self.level.as_str())?;
        line.serialize_entry("fields", &Fields(self))?;
        line.serialize_entry("target", TARGET)?;
        line.end()
    }
}

/// The `fields` object, in the order the `tracing` event records them.
struct Fields<'a>(&'a CallLine);

impl serde::Serialize for Fields<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let line = self.0;
        let mut fields = serializer.serialize_map(None)?;
        fields.serialize_entry("message", SUCCEEDED)?;
        fields.serialize_entry("tool", &line.tool)?;
        fields.serialize_entry("action", &line.action)?;
        fields.serialize_entry("request_id", &line.request_id)?;
        fields.serialize_entry("caller", &line.caller)?;
        fields.serialize_entry(
            "correlation_id",
            CorrelationId::new(line.correlation).as_str(),
        )?;
        fields.serialize_entry("latency_us", &line.latency_us)?;
        fields.serialize_entry("outcome", line.outcome)?;
        fields.serialize_entry("attempts", &u64::from(line.attempts))?;
        // As tracing-serde records a `%value` field: its `Display`, as a string.
        fields.serialize_entry("arguments", &Rendered(&line.args, &line.redactor))?;
        fields.end()
    }
}

/// The arguments as the log shows them, as one JSON string.
struct Rendered<'a>(&'a Value, &'a Redactor);

impl serde::Serialize for Rendered<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&LoggedArgs {
            args: self.0,
            redactor: self.1,
        })
    }
}
