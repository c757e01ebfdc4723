//! What the server tells the people who run it: the call log and redaction (`log.rs`),
//! and the metrics per tool (`metrics.rs`). Both are public as `fusion_runtime::log` and
//! `fusion_runtime::metrics`. Behind `log::init`: the logged form of a call's arguments
//! (`args.rs`), redaction (`redact.rs`), the JSON layer that writes fusion's events (`json.rs`), the writer
//! thread that takes the lines in batches (`sink.rs`), the cut of other crates' long lines
//! (`line_cut.rs`) and formats successful calls' lines
//! there (`call_line.rs`), and the timestamps (`clock.rs`).

mod args;
mod call_line;
mod clock;
mod json;
mod line_cut;
pub mod log;
pub mod metrics;
mod redact;
mod sink;
