//! Ids a call's span was given on the call's thread, for the tracer to
//! take when the span is built later, on the finisher's thread.
//!
//! A span is built by the tracer, and OpenTelemetry's SDK draws its ids
//! from the provider's `IdGenerator`, not from the span's builder. A host
//! whose [`Traces`](super::Traces) were made with
//! [`ids_from_host`](super::Traces::ids_from_host) gives a sampled call's
//! span its ids at once (the call sends them on) and has its tracer build
//! the span afterwards, off the call's thread; just before, the finisher
//! presets the ids here, and a generator that asks [`preset_trace_id`] and
//! [`preset_span_id`] first hands them to the SDK. Every other span (the
//! children, anything else the tracer builds) finds nothing preset and
//! gets the generator's own.

use std::cell::Cell;

use opentelemetry::trace::{SpanId, TraceId};

thread_local! {
    static PRESET: Cell<(Option<TraceId>, Option<SpanId>)> = const { Cell::new((None, None)) };
}

/// The trace id preset for the span being built on this thread, taken
/// (`None` when there is none).
pub fn preset_trace_id() -> Option<TraceId> {
    PRESET.with(|p| {
        let (trace, span) = p.get();
        p.set((None, span));
        trace
    })
}

/// The span id preset for the span being built on this thread, taken
/// (`None` when there is none).
pub fn preset_span_id() -> Option<SpanId> {
    PRESET.with(|p| {
        let (trace, span) = p.get();
        p.set((trace, None));
        span
    })
}

/// Runs `build` with `trace` and `span` preset, and clears whatever it
/// did not take.
pub(crate) fn with_preset<R>(trace: TraceId, span: SpanId, build: impl FnOnce() -> R) -> R {
    PRESET.with(|p| p.set((Some(trace), Some(span))));
    let built = build();
    PRESET.with(|p| p.set((None, None)));
    built
}
