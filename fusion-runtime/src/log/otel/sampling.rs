//! The early sampling decision: a request that no span would record makes none.

use std::sync::OnceLock;

use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample};

/// Whether the tracer provider's sampler (the SDK's, from `OTEL_TRACES_SAMPLER`) drops a
/// root server span whatever its trace id, as `always_off` does; a ratio sampler still
/// decides per trace. Decided once, when the provider is built: the samplers that
/// `OTEL_TRACES_SAMPLER` names decide by trace id and parent only, never by a span's name,
/// so a request need not ask again.
static DROPS_ROOTS: OnceLock<bool> = OnceLock::new();

/// Whether a request without a client span (`parent` is `None`) may make no span at all.
/// A handler's own spans are then roots too, and dropped alike.
///
/// A request under a client span always keeps its span, sampled or not: the span carries
/// the client's decision to the handler's own spans, which would otherwise start traces of
/// their own.
pub(super) fn dropped(parent: Option<&opentelemetry::Context>) -> bool {
    parent.is_none() && DROPS_ROOTS.get().copied().unwrap_or(false)
}

/// Asks the sampler the tracer provider was built with about root server spans, once; the
/// first provider's answer stays.
pub(super) fn remember(sampler: Box<dyn ShouldSample>) {
    use opentelemetry::trace::{SpanKind, TraceId};
    let drops = |trace_id: TraceId| {
        let result =
            sampler.should_sample(None, trace_id, "tools/call", &SpanKind::Server, &[], &[]);
        result.decision == SamplingDecision::Drop
    };
    let _ = DROPS_ROOTS.set(drops(TraceId::from(1)) && drops(TraceId::from(u128::MAX)));
}
