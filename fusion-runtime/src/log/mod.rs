//! Structured logging: one event per tool call, through `tracing`, target `fusion::call`.
//!
//! [`init`] installs a JSON subscriber on stderr (stdout belongs to the protocol on stdio),
//! or compact text lines when stderr is a terminal (a person reads it) or
//! `FUSION_LOG_FORMAT=text`. A program that installs its own subscriber keeps it and still
//! receives these events.
//!
//! Behind [`init`]: the logged form of a call's arguments (`args.rs`), redaction
//! (`redact.rs`), the JSON layer that writes fusion's events (`json.rs`), the writer thread
//! that takes the lines in batches (`sink.rs`), the cut of other crates' long lines
//! (`line_cut.rs`), the lines of successful calls (`call_line.rs`), and the timestamps
//! (`clock.rs`).

pub(crate) mod args;
mod call_json;
mod call_line;
mod clock;
mod json;
mod line_cut;
#[cfg(feature = "otel")]
pub(crate) mod otel;
mod redact;
mod sink;

use std::time::Duration;

use serde_json::Value;

use crate::failure::{Failure, FailureKind};

pub(crate) use call_json::CallRecord;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub use otel::{OTEL_TARGET, otel_layer};
pub(crate) use redact::Redactor;

/// The `tracing` target of per-call events.
pub const CALL_TARGET: &str = call_line::TARGET;

/// The JSON log's sink, once [`init`] installed it: [`flush`] drains it.
static SINK: std::sync::OnceLock<std::sync::Arc<sink::Sink>> = std::sync::OnceLock::new();

/// How long [`flush`] waits for queued lines to be written: a stderr nobody reads must not
/// hold the process's exit forever.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Installs a JSON log subscriber writing to stderr, filtered by `RUST_LOG` (default
/// `info`). Does nothing when a global subscriber is already set.
///
/// When stderr is a terminal, the lines are compact text for a person instead (time,
/// level, target, message, and the event's fields: a call's tool, outcome and latency
/// among them); when it is a file or a pipe, as MCP clients capture it, JSON.
/// [`LOG_FORMAT_ENV`] (`FUSION_LOG_FORMAT=json` or `text`) overrides either.
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
    let sink = sink::Sink::start(Box::new(std::io::stderr()));
    let writer = sink::SinkWriter(std::sync::Arc::clone(&sink));
    // `try_init` fails only when a subscriber is already installed: the program's own
    // choice wins.
    let installed = if text_format() {
        // Not fusion's JSON layer: a call's event then goes through `tracing` as any other
        // (`defer_success` sees another subscriber), and the formatter writes its fields.
        let text = tracing_subscriber::fmt::layer()
            .compact()
            .with_ansi(colours())
            .with_writer(writer);
        let registry = tracing_subscriber::registry().with(filter);
        #[cfg(feature = "otel")]
        let registry = registry.with(otel::layer());
        registry.with(text).try_init()
    } else {
        let fmt = tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(false)
            .with_writer(writer);
        let registry = tracing_subscriber::registry().with(filter);
        #[cfg(feature = "otel")]
        let registry = registry.with(otel::layer());
        registry
            .with(json::JsonLog::new(fmt, std::sync::Arc::clone(&sink)))
            .try_init()
    };
    if installed.is_err() || SINK.set(std::sync::Arc::clone(&sink)).is_err() {
        // Not ours to write: stop the thread just started.
        sink.close(FLUSH_TIMEOUT);
    }
}

/// The environment variable that chooses [`init`]'s format: `json` or `text`. Unset (or
/// another value), text when stderr is a terminal and JSON otherwise.
pub const LOG_FORMAT_ENV: &str = "FUSION_LOG_FORMAT";

/// Whether the text lines are coloured: on a terminal, unless `NO_COLOR` is set to
/// anything but the empty string (<https://no-color.org>).
fn colours() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Whether [`init`] writes text lines rather than JSON.
fn text_format() -> bool {
    match std::env::var(LOG_FORMAT_ENV).ok().as_deref() {
        Some("json") => false,
        Some("text") => true,
        _ => std::io::IsTerminal::is_terminal(&std::io::stderr()),
    }
}

/// Writes out every queued log line and stops the background writer (waiting at most a few
/// seconds for a stderr that nobody reads). Lines logged afterwards are written at once, by
/// the thread that logs them.
pub fn flush() {
    #[cfg(feature = "otel")]
    otel::flush();
    if let Some(sink) = SINK.get() {
        sink.close(FLUSH_TIMEOUT);
    }
}

/// Whether a call event at `level` is listened to (`RUST_LOG`, or the program's subscriber).
fn call_enabled(level: tracing::Level) -> bool {
    match level {
        tracing::Level::ERROR => tracing::enabled!(target: CALL_TARGET, tracing::Level::ERROR),
        tracing::Level::WARN => tracing::enabled!(target: CALL_TARGET, tracing::Level::WARN),
        tracing::Level::INFO => tracing::enabled!(target: CALL_TARGET, tracing::Level::INFO),
        tracing::Level::DEBUG => tracing::enabled!(target: CALL_TARGET, tracing::Level::DEBUG),
        tracing::Level::TRACE => tracing::enabled!(target: CALL_TARGET, tracing::Level::TRACE),
    }
}

/// What [`init`]'s JSON layer is laid over: the filter over the registry.
type Filtered =
    tracing_subscriber::layer::Layered<tracing_subscriber::EnvFilter, tracing_subscriber::Registry>;

/// The subscriber [`init`] installs: its JSON layer over the filter over the registry.
#[cfg(not(feature = "otel"))]
type OwnLayer = json::JsonLog<Filtered>;

/// The subscriber [`init`] installs: its JSON layer over the OpenTelemetry layer (`None`
/// when nothing is exported) over the filter over the registry.
#[cfg(feature = "otel")]
type OwnLayer =
    json::JsonLog<tracing_subscriber::layer::Layered<Option<otel::OtelLayer<Filtered>>, Filtered>>;

/// What the log says of a successful call, apart from its arguments.
pub(crate) struct Success<'a> {
    pub(crate) tool: &'a str,
    pub(crate) action: Option<&'a str>,
    pub(crate) request_id: Option<&'a str>,
    pub(crate) caller: Option<&'a str>,
    pub(crate) correlation: u64,
    pub(crate) latency: Duration,
    /// When the call ended: the event's time.
    pub(crate) ended: std::time::Instant,
    pub(crate) outcome: &'static str,
    pub(crate) attempts: u32,
    /// The level of successful calls.
    pub(crate) level: tracing::Level,
}

/// The event of a successful call, queued for the log's writer thread, which formats it
/// (`call_line.rs`). `false` when the event is not fusion's JSON layer's to write (a
/// program's own subscriber, a scoped one, an event inside a span): the caller then emits
/// it through `tracing` ([`call_event`]), as before. `true` also when nobody listens
/// (nothing to write).
pub(crate) fn defer_success(success: &Success<'_>, args: &Value, redactor: &Redactor) -> bool {
    let Some(sink) = SINK.get() else {
        return false;
    };
    // The global subscriber is `init`'s (SINK is set only then); a scoped one may be in
    // force on this thread, and inside a span the line would list the span.
    // With `otel`, the call's own server span may be current: the line is still ours to
    // write, with the span's ids in place of the span list.
    let own = tracing::dispatcher::get_default(|dispatch| {
        let current = dispatch.current_span();
        dispatch.is::<OwnLayer>()
            && (current.id().is_none()
                || current
                    .metadata()
                    .is_some_and(|metadata| json::is_otel_span(metadata)))
    });
    if !own {
        return false;
    }
    if !own_layer_enabled(success.level) {
        return true;
    }
    sink.push_call(&call_line::CallLine {
        level: success.level,
        at: success.ended,
        tool: success.tool,
        action: success.action.unwrap_or(""),
        request_id: success.request_id.unwrap_or(""),
        caller: success.caller.unwrap_or(""),
        correlation: success.correlation,
        latency_us: u64::try_from(success.latency.as_micros()).unwrap_or(u64::MAX),
        outcome: success.outcome,
        attempts: success.attempts,
        args,
        redactor,
        trace: trace_ids(),
    });
    true
}

/// The ids of the current span's trace, when spans are exported (feature `otel`).
fn trace_ids() -> Option<call_line::TraceIds> {
    #[cfg(feature = "otel")]
    return otel::active().then(otel::current_ids).flatten();
    #[cfg(not(feature = "otel"))]
    None
}

/// [`call_enabled`] for `init`'s subscriber, outside any span, asked once per level.
///
/// Why: `tracing::enabled!` asks the subscriber on every use (it does not stop at a
/// callsite's cached interest, as an event does), which took a third of what queueing a
/// successful call's line cost. The answer cannot change: that subscriber's filter is
/// built once from `RUST_LOG` and never replaced, and outside a span only its static
/// directives apply. Called only where [`defer_success`] checked both.
fn own_layer_enabled(level: tracing::Level) -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    const UNKNOWN: u8 = 0;
    const ENABLED: u8 = 1;
    const DISABLED: u8 = 2;
    static ANSWERS: [AtomicU8; 5] = [const { AtomicU8::new(UNKNOWN) }; 5];
    let slot = match level {
        tracing::Level::ERROR => 0,
        tracing::Level::WARN => 1,
        tracing::Level::INFO => 2,
        tracing::Level::DEBUG => 3,
        tracing::Level::TRACE => 4,
    };
    match ANSWERS[slot].load(Ordering::Relaxed) {
        ENABLED => true,
        DISABLED => false,
        _ => {
            let enabled = call_enabled(level);
            let answer = if enabled { ENABLED } else { DISABLED };
            ANSWERS[slot].store(answer, Ordering::Relaxed);
            enabled
        }
    }
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
        cache,
        ..
    } = *record;
    let level = call_json::level(record);
    // Rendering the arguments is most of an event's cost: skip it when nobody listens.
    if !call_enabled(level) {
        return;
    }
    let correlation_id = correlation_id.as_str();
    let latency_us = u64::try_from(record.latency.as_micros()).unwrap_or(u64::MAX);
    // The client's names, cut: an unknown tool's name may be megabytes.
    let tool = crate::limits::name(tool);
    let tool = tool.as_ref();
    let action = crate::limits::name(record.action.unwrap_or(""));
    let action = action.as_ref();
    let request_id = record.request_id.unwrap_or("");
    let caller = crate::limits::name(record.caller.unwrap_or(""));
    let caller = caller.as_ref();
    // Written once, by whoever formats the event: straight into fusion's log line.
    let arguments = args::LoggedArgs { args, redactor };
    // With `otel`, inside the call's span: the ids of its trace, so that the line and the
    // trace meet. Absent otherwise (the fields are left out of the line).
    let trace = trace_ids().map(call_line::TraceIds::to_hex);
    let trace_id = trace.as_ref().map(|(trace_id, _)| trace_id.as_str());
    let span_id = trace.as_ref().map(|(_, span_id)| span_id.as_str());
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
                trace_id,
                span_id,
                cache,
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
            let (error, source_chain) = call_json::masked_details(failure, redactor);
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
        // The client's own choice (a cancel, a hang-up), not a fault: operators alert on
        // WARN and above.
        Some(failure) if matches!(failure.kind(), FailureKind::Cancelled) => {
            event!(tracing::Level::INFO, "tool call cancelled", error = message)
        }
        Some(_) => event!(tracing::Level::WARN, "tool call rejected", error = message),
    }
}

/// The call's event as JSON, as the JSON log writes it (the tester's `log_events()`).
pub(crate) fn call_event_json(record: &CallRecord<'_>, at: std::time::SystemTime) -> Value {
    call_json::event_json(record, at, trace_ids())
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
