//! The early sampling decision: a request that no span would record makes none.

use std::sync::OnceLock;

use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample};

/// The sampler the tracer provider was built with (the SDK's, from
/// `OTEL_TRACES_SAMPLER`), kept to decide early for a request that no span would record.
static SAMPLER: OnceLock<Box<dyn ShouldSample>> = OnceLock::new();

/// Whether a request without a client span (`parent` is `None`) may make no span at all:
/// the sampler drops a root server span named `name` whatever its trace id (the lowest and
/// the highest trace id both dropped, as `always_off` does; a ratio sampler still decides
/// per trace). A handler's own spans are then roots too, and dropped alike.
///
/// A request under a client span always keeps its span, sampled or not: the span carries
/// the client's decision to the handler's own spans, which would otherwise start traces of
/// their own.
pub(super) fn dropped(parent: Option<&opentelemetry::Context>, name: &str) -> bool {
    use opentelemetry::trace::{SpanKind, TraceId};
    let Some(sampler) = SAMPLER.get() else {
        return false;
    };
    if parent.is_some() {
        return false;
    }
    let drops = |trace_id: TraceId| {
        let result = sampler.should_sample(None, trace_id, name, &SpanKind::Server, &[], &[]);
        result.decision == SamplingDecision::Drop
    };
    drops(TraceId::from(1)) && drops(TraceId::from(u128::MAX))
}

/// Keeps the sampler the tracer provider was built with; the first one stays.
pub(super) fn remember(sampler: Box<dyn ShouldSample>) {
    let _ = SAMPLER.set(sampler);
}
