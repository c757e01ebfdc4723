//! The JSON log's layer: fusion's own events (targets `fusion::*`: the call event, recovery,
//! fatal, ...) written by serde_json straight into a reused buffer; every other event (and
//! one of ours inside a span, whose `spans` list tracing-subscriber keeps) by
//! tracing-subscriber's JSON formatter. Both write the same line, field for field
//! (`tests/stdio/call_log_format.rs` compares them), to the same [`Sink`].
//!
//! Why: tracing-subscriber's formatter goes through `fmt::Write` adaptors (a UTF-8 check a
//! fragment), formats the timestamp's calendar on every event and copies each line into a
//! new `Vec` for its writer; on a call that does nothing else, that was half of the
//! server's CPU.

use std::{cell::RefCell, sync::Arc};

use serde::{Serializer as _, ser::SerializeMap as _};
use tracing::{Event, Subscriber, span};
use tracing_serde::fields::AsMap as _;
use tracing_subscriber::{
    fmt::FormattedFields,
    fmt::format::{Format, Json, JsonFields},
    layer::{Context, Layer},
    registry::LookupSpan,
};

use super::{
    clock::Clock,
    sink::{Sink, SinkWriter},
};

/// tracing-subscriber's JSON layer as `log::init` configures it, writing to the sink.
pub(crate) type FmtJson<S> =
    tracing_subscriber::fmt::Layer<S, JsonFields, Format<Json>, SinkWriter>;

/// The prefix of the targets this layer writes itself.
const OWN_TARGETS: &str = "fusion::";

/// The JSON log: fusion's events written here, the rest by `fmt`.
pub(crate) struct JsonLog<S> {
    fmt: FmtJson<S>,
    sink: Arc<Sink>,
}

impl<S> JsonLog<S> {
    pub(crate) fn new(fmt: FmtJson<S>, sink: Arc<Sink>) -> Self {
        Self { fmt, sink }
    }
}

/// What a thread reuses from one line to the next.
#[derive(Default)]
struct Scratch {
    line: Vec<u8>,
    clock: Clock,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

impl<S> Layer<S> for JsonLog<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, subscriber: &tracing::Dispatch) {
        self.fmt.on_register_dispatch(subscriber);
    }

    fn on_layer(&mut self, subscriber: &mut S) {
        self.fmt.on_layer(subscriber);
    }

    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        if is_otel_span(attrs.metadata()) {
            // A request's server span (feature `otel`): its fields are the trace's, and the
            // log has them on its lines (the call line carries the span's ids). Formatting
            // them for the log on every request was a tenth of the server's CPU; an event
            // inside the span lists it by name only.
            if let Some(span) = ctx.span(id) {
                let mut extensions = span.extensions_mut();
                if extensions
                    .get_mut::<FormattedFields<JsonFields>>()
                    .is_none()
                {
                    extensions.insert(FormattedFields::<JsonFields>::new("{}".to_owned()));
                }
            }
            return;
        }
        self.fmt.on_new_span(attrs, id, ctx);
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        if ctx
            .metadata(id)
            .is_some_and(|metadata| is_otel_span(metadata))
        {
            return;
        }
        self.fmt.on_record(id, values, ctx);
    }

    fn on_follows_from(&self, span: &span::Id, follows: &span::Id, ctx: Context<'_, S>) {
        self.fmt.on_follows_from(span, follows, ctx);
    }

    fn on_enter(&self, id: &span::Id, ctx: Context<'_, S>) {
        self.fmt.on_enter(id, ctx);
    }

    fn on_exit(&self, id: &span::Id, ctx: Context<'_, S>) {
        self.fmt.on_exit(id, ctx);
    }

    fn on_close(&self, id: span::Id, ctx: Context<'_, S>) {
        self.fmt.on_close(id, ctx);
    }

    fn on_id_change(&self, old: &span::Id, new: &span::Id, ctx: Context<'_, S>) {
        self.fmt.on_id_change(old, new, ctx);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let ours = event.metadata().target().starts_with(OWN_TARGETS)
            // Inside a span, the formatter adds the `spans` list: leave the event to it.
            && event.parent().is_none()
            && (!event.is_contextual() || ctx.lookup_current().is_none());
        if !ours {
            if is_disconnect_noise(event) {
                return;
            }
            return self.fmt.on_event(event, ctx);
        }
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => {
                let Scratch { line, clock } = &mut *scratch;
                self.write(event, line, clock);
            }
            // An event logged while this thread writes one (a field's `Display` that
            // logs): fresh buffers for it.
            Err(_) => self.write(event, &mut Vec::new(), &mut Clock::default()),
        });
    }
}

/// Whether a span is one of fusion's OpenTelemetry spans (a request's server span, an
/// attempt's; feature `otel`).
pub(crate) fn is_otel_span(metadata: &tracing::Metadata<'_>) -> bool {
    #[cfg(feature = "otel")]
    return metadata.target() == super::otel::OTEL_TARGET;
    #[cfg(not(feature = "otel"))]
    {
        let _ = metadata;
        false
    }
}

/// rmcp's ERROR events for an answer that could not be handed to its client, which had
/// left (its stream or connection closed): a disconnect is not an error to alert on, and
/// the call log already says, once and at INFO, that the call was cancelled. They are
/// kept at `RUST_LOG=rmcp=debug`, for whoever diagnoses rmcp itself.
fn is_disconnect_noise(event: &Event<'_>) -> bool {
    /// rmcp 3.11's messages for an answer it could not send (`service.rs`).
    const UNDELIVERED: [&str; 3] = [
        "fail to response message",
        "failed to send pending response during drain",
        "fail to send rejection error",
    ];
    /// Whether the event's message is one of [`UNDELIVERED`].
    struct Undelivered(bool);
    impl tracing::field::Visit for Undelivered {
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            if field.name() == "message" {
                self.0 = UNDELIVERED.contains(&value);
            }
        }
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "message" {
                let text = format!("{value:?}");
                self.0 = UNDELIVERED.contains(&text.as_str());
            }
        }
    }
    let metadata = event.metadata();
    if *metadata.level() != tracing::Level::ERROR
        || !metadata.target().starts_with("rmcp")
        || tracing::enabled!(target: "rmcp", tracing::Level::DEBUG)
    {
        return false;
    }
    let mut undelivered = Undelivered(false);
    event.record(&mut undelivered);
    undelivered.0
}

impl<S> JsonLog<S> {
    fn write(&self, event: &Event<'_>, line: &mut Vec<u8>, clock: &mut Clock) {
        line.clear();
        if write_line(event, line, clock).is_ok() {
            self.sink.push(line);
        }
        if line.capacity() > 64 << 10 {
            // One huge event grew the buffer: give the memory back.
            *line = Vec::new();
        }
    }
}

/// One event as tracing-subscriber's JSON formatter writes it (`timestamp`, `level`,
/// `fields`, `target`), and a newline.
fn write_line(
    event: &Event<'_>,
    line: &mut Vec<u8>,
    clock: &mut Clock,
) -> Result<(), serde_json::Error> {
    let metadata = event.metadata();
    let mut serializer = serde_json::Serializer::new(&mut *line);
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("timestamp", clock.now(std::time::SystemTime::now()))?;
    map.serialize_entry("level", metadata.level().as_str())?;
    // tracing-serde's field map: the same serializer tracing-subscriber uses.
    map.serialize_entry("fields", &event.field_map())?;
    map.serialize_entry("target", metadata.target())?;
    map.end()?;
    line.push(b'\n');
    Ok(())
}
