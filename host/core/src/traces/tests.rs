//! The spans a host makes of its calls (rule X2), collected by the
//! OpenTelemetry SDK.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::trace::{SpanId, Status, TraceId};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    Sampler, SdkTracerProvider, SimpleSpanProcessor, SpanData, SpanExporter,
};
use serde_json::json;

use crate::rules::{Rule, RuleDecision, RuleSet, ToolPattern};
use crate::{
    Approval, ApprovalRequest, Approver, Arguments, CallContext, Decision, FnAfterHook,
    FnBeforeHook, FnTool, HookScope, Secret, SecretSet, Stage, ToolError, ToolHost, ToolOutput,
    ToolSpec, TraceContext, Traces,
};

/// Every finished span, in the order they ended.
#[derive(Debug, Clone, Default)]
struct Collected(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collected {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

impl Collected {
    fn spans(&self) -> Vec<SpanData> {
        self.0.lock().unwrap().clone()
    }
}

fn provider(sampler: Sampler) -> (SdkTracerProvider, Collected) {
    let collected = Collected::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(SimpleSpanProcessor::new(collected.clone()))
        .with_sampler(sampler)
        .build();
    (provider, collected)
}

struct Approve;

#[async_trait::async_trait]
impl Approver for Approve {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Approved
    }
}

const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const PAYLOAD: &str = "payload-that-must-not-be-traced";
const SECRET: &str = "hunter2-very-secret";

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// A host with traces, validation, a before and an after hook, a rule
/// that asks and an approver, and a tool `work` that reports a guest
/// stage and records the trace context it was given.
fn traced_host(traces: Traces, seen: Arc<Mutex<Option<TraceContext>>>) -> ToolHost {
    let host = ToolHost::builder()
        .traces(traces)
        .validate_arguments(true)
        .secrets(SecretSet::new(vec![Secret::new("s", SECRET).unwrap()]))
        .approver(Arc::new(Approve))
        .rules(RuleSet::new(vec![Rule::new(
            ToolPattern::new("work").unwrap(),
            RuleDecision::Ask,
        )]))
        .before_hook(
            HookScope::Global,
            FnBeforeHook::deciding(format!("gate-{SECRET}"), |_| Decision::Allow),
        )
        .after_hook(HookScope::Global, FnAfterHook::new("audit", |_, _| {}))
        .build();
    host.register_tool(FnTool::arc(
        ToolSpec::new(
            "work",
            "",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        ),
        move |ctx: CallContext, _| {
            *seen.lock().unwrap() = ctx.trace_context().cloned();
            if let Some(observer) = ctx.observer() {
                observer.stage("p", Stage::Guest, Duration::from_millis(1));
            }
            async { Ok(ToolOutput::text(PAYLOAD)) }
        },
    ))
    .unwrap();
    host
}

/// Calls `work` on `host` in [`PARENT`]'s trace (tracestate `v=1`,
/// baggage `k=v`) with [`PAYLOAD`] in its arguments, and finishes the
/// spans: all of them, and the call's own, which is checked to be a child
/// of `PARENT`.
async fn work_in_parent_trace(
    host: &ToolHost,
    traces: &Traces,
    collected: &Collected,
) -> (Vec<SpanData>, SpanData) {
    let parent = TraceContext::from_w3c(PARENT, Some("v=1"), Some("k=v")).unwrap();
    let args = Arguments::parse(&json!({"text": PAYLOAD}).to_string()).unwrap();
    host.invoke_tool(CallContext::new().with_trace_context(parent), "work", args)
        .await
        .unwrap();
    traces.flush();
    let spans = collected.spans();
    let call = spans.iter().find(|s| s.name == "tools/call work").unwrap();
    let call = call.clone();
    assert_eq!(
        call.span_context.trace_id(),
        TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap()
    );
    assert_eq!(
        call.parent_span_id,
        SpanId::from_hex("b7ad6b7169203331").unwrap()
    );
    (spans, call)
}

#[tokio::test]
async fn x2_a_call_is_a_span_whose_stages_and_hooks_are_its_children() {
    let (provider, collected) = provider(Sampler::AlwaysOn);
    let seen = Arc::new(Mutex::new(None));
    let traces = Traces::from_provider(&provider);
    let host = traced_host(traces.clone(), seen.clone());
    let (spans, call) = work_in_parent_trace(&host, &traces, &collected).await;
    let call = &call;
    assert_eq!(attr(call, "gen_ai.tool.name").as_deref(), Some("work"));
    assert_eq!(attr(call, "toolhost.outcome").as_deref(), Some("ok"));
    assert_eq!(attr(call, "toolhost.tenant").as_deref(), Some("default"));
    // The tool was handed the call span's context, with the caller's
    // tracestate and baggage, to send on.
    let sent = seen.lock().unwrap().clone().unwrap();
    assert_eq!(sent.span_id(), call.span_context.span_id());
    assert_eq!(sent.tracestate(), Some("v=1"));
    assert_eq!(sent.baggage(), Some("k=v"));
    let mut children: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent_span_id == call.span_context.span_id())
        .map(|s| s.name.as_ref())
        .collect();
    children.sort_unstable();
    assert_eq!(
        children,
        [
            "toolhost.approval_wait",
            "toolhost.guest",
            "toolhost.hook",
            "toolhost.hook",
            "toolhost.rules",
            "toolhost.validate",
        ]
    );
    for child in spans.iter().filter(|s| s.name != "tools/call work") {
        assert_eq!(child.span_context.trace_id(), call.span_context.trace_id());
        assert!(child.start_time >= call.start_time && child.end_time <= call.end_time);
    }
    // No attribute holds the arguments, the result or the secret (here in
    // a hook's name).
    let all = format!("{spans:?}");
    assert!(!all.contains(PAYLOAD), "{all}");
    assert!(!all.contains(SECRET), "{all}");
    let hooks: Vec<_> = spans.iter().filter(|s| s.name == "toolhost.hook").collect();
    assert!(
        hooks
            .iter()
            .any(|h| attr(h, "toolhost.hook.phase").as_deref() == Some("before"))
    );
}

#[tokio::test]
async fn x2_an_unknown_tool_named_by_a_secret_is_traced_without_it() {
    let (provider, collected) = provider(Sampler::AlwaysOn);
    let traces = Traces::from_provider(&provider);
    let host = traced_host(traces.clone(), Arc::default());
    let long = format!("{SECRET}{}", "é".repeat(400));
    for name in [SECRET, long.as_str()] {
        let err = host
            .invoke_tool(CallContext::new(), name, Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::UnknownTool { .. }));
    }
    traces.flush();
    let spans = collected.spans();
    assert_eq!(spans.len(), 2);
    for span in &spans {
        assert_eq!(span.name, "tools/call");
        assert_eq!(attr(span, "error.type").as_deref(), Some("unknown_tool"));
        assert!(matches!(span.status, Status::Error { .. }));
        let tool = attr(span, "gen_ai.tool.name").unwrap();
        assert!(!tool.contains(SECRET), "{tool}");
        assert!(tool.len() <= super::MAX_ATTRIBUTE_BYTES, "{}", tool.len());
    }
}

#[tokio::test]
async fn x2_a_call_the_caller_did_not_sample_makes_no_span_but_passes_the_context_on() {
    let (provider, collected) = provider(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
    let seen = Arc::new(Mutex::new(None));
    let traces = Traces::from_provider(&provider);
    let host = traced_host(traces.clone(), seen.clone());
    let unsampled = PARENT.replace("-01", "-00");
    let parent = TraceContext::from_w3c(&unsampled, None, None).unwrap();
    host.invoke_tool(
        CallContext::new().with_trace_context(parent),
        "work",
        Arguments::parse("{}").unwrap(),
    )
    .await
    .unwrap();
    traces.flush();
    assert!(collected.spans().is_empty());
    let sent = seen.lock().unwrap().clone().unwrap();
    assert!(!sent.sampled());
    assert_eq!(
        sent.trace_id(),
        TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap()
    );
}

#[tokio::test]
async fn x2_a_host_without_traces_passes_the_callers_context_on_untouched() {
    let seen = Arc::new(Mutex::new(None));
    let host = ToolHost::new();
    let seen2 = seen.clone();
    host.register_tool(FnTool::arc(
        ToolSpec::new("work", "", json!({"type": "object"})),
        move |ctx: CallContext, _| {
            *seen2.lock().unwrap() = Some((ctx.trace_context().cloned(), ctx.observer().is_some()));
            async { Ok(ToolOutput::text("ok")) }
        },
    ))
    .unwrap();
    let parent = TraceContext::from_w3c(PARENT, None, None).unwrap();
    host.invoke_tool(
        CallContext::new().with_trace_context(parent.clone()),
        "work",
        Arguments::parse("{}").unwrap(),
    )
    .await
    .unwrap();
    let (sent, observed) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(sent, Some(parent));
    assert!(!observed, "no observer without metrics or traces");
}

/// Calls `work` on `host`, in `parent`'s trace if any, and finishes the
/// spans `traces` made of it.
async fn call_work(host: &ToolHost, traces: &Traces, parent: Option<&str>, state: Option<&str>) {
    let mut ctx = CallContext::new();
    if let Some(p) = parent {
        ctx = ctx.with_trace_context(TraceContext::from_w3c(p, state, None).unwrap());
    }
    host.invoke_tool(ctx, "work", Arguments::parse("{}").unwrap())
        .await
        .unwrap();
    traces.flush();
}

#[tokio::test]
async fn x2_the_host_samples_by_ratio_and_follows_the_callers_decision() {
    let (provider, collected) = provider(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)));
    let seen = Arc::new(Mutex::new(None));
    let none = Traces::from_provider(&provider).sampling_ratio(0.0);
    let host = traced_host(none.clone(), seen.clone());
    // A root call at ratio 0: no span, but a context to send on, unsampled,
    // with a span id of its own.
    call_work(&host, &none, None, None).await;
    assert!(collected.spans().is_empty());
    let sent = seen.lock().unwrap().take().unwrap();
    assert!(!sent.sampled());
    assert_ne!(sent.span_id(), SpanId::INVALID);
    assert_ne!(sent.trace_id(), TraceId::INVALID);
    // A caller that sampled its trace is followed, whatever the ratio.
    call_work(&host, &none, Some(PARENT), Some("v=1")).await;
    let spans = collected.spans();
    let call = spans.iter().find(|s| s.name == "tools/call work").unwrap();
    assert_eq!(
        call.parent_span_id,
        SpanId::from_hex("b7ad6b7169203331").unwrap()
    );
    // An unsampled caller is followed too, and its tracestate kept.
    let before = collected.spans().len();
    let all = Traces::from_provider(&provider).sampling_ratio(1.0);
    let host = traced_host(all.clone(), seen.clone());
    let unsampled = PARENT.replace("-01", "-00");
    call_work(&host, &all, Some(&unsampled), Some("v=2")).await;
    assert_eq!(collected.spans().len(), before);
    let sent = seen.lock().unwrap().take().unwrap();
    assert!(!sent.sampled());
    assert_eq!(sent.tracestate(), Some("v=2"));
    assert_ne!(
        sent.span_id(),
        SpanId::from_hex("b7ad6b7169203331").unwrap()
    );
    // At ratio 1 a root call is sampled.
    call_work(&host, &all, None, None).await;
    assert!(collected.spans().len() > before);
}

#[tokio::test]
async fn x2_spans_are_finished_without_a_flush_and_when_the_traces_go() {
    let (provider, collected) = provider(Sampler::AlwaysOn);
    let traces = Traces::from_provider(&provider);
    let host = traced_host(traces.clone(), Arc::default());
    host.invoke_tool(CallContext::new(), "work", Arguments::parse("{}").unwrap())
        .await
        .unwrap();
    // The finisher's own thread gets to it (it looks every 100 ms; the
    // bound only catches a finisher that never does).
    let waited = std::time::Instant::now();
    while !collected
        .spans()
        .iter()
        .any(|s| s.name == "tools/call work")
    {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the span was never finished"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(traces.dropped(), 0);
    // What is queued when the last handle goes is finished, not lost.
    let before = collected.spans().len();
    host.invoke_tool(CallContext::new(), "work", Arguments::parse("{}").unwrap())
        .await
        .unwrap();
    drop(host);
    drop(traces);
    let waited = std::time::Instant::now();
    while collected.spans().len() <= before {
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "the span was lost"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Finished, not merely ended as its data was dropped: named after the
    // tool, with its outcome.
    let spans = collected.spans();
    let last = spans
        .iter()
        .skip(before)
        .find(|s| s.parent_span_id == SpanId::INVALID)
        .unwrap();
    assert_eq!(last.name, "tools/call work");
    assert_eq!(attr(last, "toolhost.outcome").as_deref(), Some("ok"));
}

/// The id generator a provider needs for [`Traces::ids_from_host`]: the
/// ids preset for the span being built, else random ones (as toolhost's
/// OTLP export has).
#[derive(Debug, Default)]
struct PresetFirst(opentelemetry_sdk::trace::RandomIdGenerator);

impl opentelemetry_sdk::trace::IdGenerator for PresetFirst {
    fn new_trace_id(&self) -> TraceId {
        super::ids::preset_trace_id().unwrap_or_else(|| self.0.new_trace_id())
    }

    fn new_span_id(&self) -> SpanId {
        super::ids::preset_span_id().unwrap_or_else(|| self.0.new_span_id())
    }
}

/// A provider as `[tracing]` makes one: it keeps what the host sampled and
/// takes the ids the host preset.
fn host_ids_provider() -> (SdkTracerProvider, Collected) {
    let collected = Collected::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(SimpleSpanProcessor::new(collected.clone()))
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
        .with_id_generator(PresetFirst::default())
        .build();
    (provider, collected)
}

#[tokio::test]
async fn x2_a_span_built_off_the_calls_thread_has_the_ids_the_call_sent_on() {
    let (provider, collected) = host_ids_provider();
    let seen = Arc::new(Mutex::new(None));
    let traces = Traces::from_provider(&provider)
        .sampling_ratio(1.0)
        .ids_from_host();
    let host = traced_host(traces.clone(), seen.clone());

    // In the caller's trace: its parent, tracestate and baggage.
    let (spans, call) = work_in_parent_trace(&host, &traces, &collected).await;
    let call = &call;
    let sent = seen.lock().unwrap().take().unwrap();
    assert_eq!(call.span_context.span_id(), sent.span_id());
    assert_eq!(call.span_context.trace_id(), sent.trace_id());
    assert!(sent.sampled());
    assert_eq!(sent.tracestate(), Some("v=1"));
    assert_eq!(sent.baggage(), Some("k=v"));
    assert_eq!(attr(call, "toolhost.outcome").as_deref(), Some("ok"));
    let children = spans
        .iter()
        .filter(|s| s.parent_span_id == call.span_context.span_id())
        .count();
    assert_eq!(children, 6, "{spans:?}");
    for child in spans.iter().filter(|s| s.name != "tools/call work") {
        assert_ne!(child.span_context.span_id(), call.span_context.span_id());
        assert!(child.start_time >= call.start_time && child.end_time <= call.end_time);
    }

    // A root call: the trace the call started is the span's.
    let before = collected.spans().len();
    host.invoke_tool(CallContext::new(), "work", Arguments::parse("{}").unwrap())
        .await
        .unwrap();
    traces.flush();
    let spans = collected.spans();
    let call = spans[before..]
        .iter()
        .find(|s| s.name == "tools/call work")
        .unwrap();
    let sent = seen.lock().unwrap().take().unwrap();
    assert_eq!(call.span_context.span_id(), sent.span_id());
    assert_eq!(call.span_context.trace_id(), sent.trace_id());
    assert_eq!(call.parent_span_id, SpanId::INVALID);
}

/// A call dropped before it ends (its caller went away) still has a span,
/// ended as it stands, when the span was to be built off its thread.
#[tokio::test]
async fn x2_a_call_dropped_midway_still_ends_its_span() {
    let (provider, collected) = host_ids_provider();
    let traces = Traces::from_provider(&provider)
        .sampling_ratio(1.0)
        .ids_from_host();
    let host = ToolHost::builder().traces(traces.clone()).build();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = Mutex::new(Some(tx));
    host.register_tool(FnTool::arc(
        ToolSpec::new("hang", "", json!({"type": "object"})),
        move |ctx: CallContext, _| {
            let sent = ctx.trace_context().cloned();
            if let Some(tx) = tx.lock().unwrap().take() {
                let _ = tx.send(sent);
            }
            std::future::pending::<Result<ToolOutput, ToolError>>()
        },
    ))
    .unwrap();
    let call = tokio::spawn(async move {
        host.invoke_tool(CallContext::new(), "hang", Arguments::parse("{}").unwrap())
            .await
    });
    let sent = rx.await.unwrap().unwrap();
    call.abort();
    let _ = call.await;
    traces.flush();
    let spans = collected.spans();
    let span = spans
        .iter()
        .find(|s| s.span_context.span_id() == sent.span_id())
        .unwrap_or_else(|| panic!("no span for the dropped call: {spans:?}"));
    assert_eq!(span.name, "tools/call");
    assert_eq!(attr(span, "toolhost.outcome"), None);
}

/// What a traced call hands the finisher's thread crosses between the
/// two cores' caches, one cache line at a time, on every call: the
/// record stays within four and a half lines (the tool's registry entry
/// stands for its name, plugin and series), a child span within half a
/// line.
#[test]
fn x2_a_calls_record_for_the_finisher_stays_within_four_and_a_half_cache_lines() {
    let record = std::mem::size_of::<super::finish::Finished>();
    assert!(record <= 4 * 64 + 32, "a call's record is {record} bytes");
    let child = std::mem::size_of::<super::finish::Child>();
    assert!(child <= 32, "a child span's record is {child} bytes");
}

/// A tool `staged` of the plugin `p` that reports its stages as the
/// sandbox does: a wait for a slot (of `wait`, none by default), its
/// instantiation (3 µs) and its guest (5 µs), in one report as its guest
/// returns (`one_report`), or part by part, as another tool may (then
/// with no wait).
struct Staged {
    spec: ToolSpec,
    one_report: bool,
    wait: Duration,
}

impl Staged {
    fn new(one_report: bool, wait: Duration) -> Arc<Self> {
        Arc::new(Self {
            spec: ToolSpec::new("staged", "", json!({"type": "object"})),
            one_report,
            wait,
        })
    }
}

#[async_trait::async_trait]
impl crate::Tool for Staged {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn plugin(&self) -> Option<&str> {
        Some("p")
    }

    async fn call(&self, ctx: CallContext, _args: Arguments) -> Result<ToolOutput, ToolError> {
        // Long enough for the stages reported to fit in the call.
        tokio::time::sleep(Duration::from_millis(2)).await;
        if let Some(observer) = ctx.observer() {
            let now = std::time::Instant::now();
            if self.one_report {
                let instantiated = now - Duration::from_micros(5);
                let slot_at = instantiated - Duration::from_micros(3);
                let entered = slot_at - self.wait;
                observer.guest_call(
                    "p",
                    &crate::GuestCall::new(entered, slot_at, instantiated, now, 1 << 16),
                );
            } else {
                observer.stage_ended("p", Stage::QueueWait, Duration::ZERO, now);
                observer.stage_ended("p", Stage::Instantiate, Duration::from_micros(3), now);
                observer.stage_ended("p", Stage::Guest, Duration::from_micros(5), now);
            }
        }
        Ok(ToolOutput::text("ok"))
    }
}

/// A traced call's counts are made by the finisher from its span's
/// record: read as soon as the calls return (the finisher's thread looks
/// at its queue every 100 ms), they are all there, and finishing the
/// spans afterwards counts nothing twice. Both ways a span is made: by
/// the tracer as the call starts, and by the finisher with the host's ids.
#[tokio::test]
async fn x1_a_traced_calls_counts_are_read_once_each_as_soon_as_it_returns() {
    for (host_ids, one_report) in [(false, true), (true, true), (true, false)] {
        let (host, traces, metrics, collected) =
            counted_host(Staged::new(one_report, Duration::ZERO), host_ids);
        for _ in 0..3 {
            host.invoke_tool(
                CallContext::new(),
                "staged",
                Arguments::parse("{}").unwrap(),
            )
            .await
            .unwrap();
        }
        let expected = [
            r#"toolhost_calls_total{tool="staged",plugin="p",outcome="ok",tenant="default"} 3"#,
            r#"toolhost_call_duration_seconds_count{tool="staged",plugin="p",tenant="default"} 3"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="queue_wait",plugin="p"} 3"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="instantiate",plugin="p"} 3"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="guest",plugin="p"} 3"#,
        ];
        // Left to the finisher, which has not run: the call counts, the
        // instantiations and the guests wait; the wait for a slot, under
        // a microsecond, is no span and was counted by the call.
        let owed = metrics.encode_without_owed();
        assert!(
            !owed.contains(r#"toolhost_calls_total{tool="staged""#),
            "{owed}"
        );
        for waiting in [
            r#"toolhost_call_duration_seconds_count{tool="staged",plugin="p",tenant="default"} 0"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="instantiate",plugin="p"} 0"#,
            r#"toolhost_call_stage_duration_seconds_count{stage="guest",plugin="p"} 0"#,
        ] {
            assert!(owed.contains(waiting), "{waiting} in\n{owed}");
        }
        assert!(
            owed.contains(
                r#"toolhost_call_stage_duration_seconds_count{stage="queue_wait",plugin="p"} 3"#
            ),
            "{owed}"
        );
        let at_once = metrics.encode_text();
        traces.flush();
        let after = metrics.encode_text();
        for text in [&at_once, &after] {
            for line in expected {
                assert!(
                    text.contains(line),
                    "host ids {host_ids}: {line} in\n{text}"
                );
            }
        }
        // The instantiations' sum is 3 x 3 µs: each counted once.
        let sum = after
            .lines()
            .find(|l| {
                l.starts_with(
                    r#"toolhost_call_stage_duration_seconds_sum{stage="instantiate",plugin="p"}"#,
                )
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap();
        assert!((sum - 9e-6).abs() < 1e-9, "host ids {host_ids}: {sum}");
        if one_report {
            let memory = r#"toolhost_plugin_memory_high_water_bytes{plugin="p"} 65536"#;
            assert!(after.contains(memory), "{memory} in\n{after}");
        }
        let spans = collected.spans();
        assert_eq!(
            spans.iter().filter(|s| s.name == "toolhost.guest").count(),
            3,
            "host ids {host_ids}: {spans:?}"
        );
    }
}

/// A host with metrics and traces that sample every call, with the
/// host's ids (`host_ids`) or the tracer's, and no thread of their own
/// (a test decides when spans are finished), with `tool` registered: the
/// host, its traces and metrics, and where the spans go.
fn counted_host(
    tool: Arc<dyn crate::Tool>,
    host_ids: bool,
) -> (ToolHost, Traces, crate::Metrics, Collected) {
    let (provider, collected) = provider(Sampler::AlwaysOn);
    let scope = opentelemetry::InstrumentationScope::builder(super::SCOPE).build();
    let traces = Traces::unthreaded(opentelemetry::trace::TracerProvider::tracer_with_scope(
        &provider, scope,
    ))
    .sampling_ratio(1.0);
    let traces = if host_ids {
        traces.ids_from_host()
    } else {
        traces
    };
    let metrics = crate::Metrics::new();
    let host = ToolHost::builder()
        .metrics(metrics.clone())
        .traces(traces.clone())
        .build();
    host.register_tool(tool).unwrap();
    (host, traces, metrics, collected)
}

/// A guest's one report of its stages (as the sandbox makes it) becomes
/// a child span of each stage the call met, a wait for a slot among them
/// when it waited; the metrics count each stage once, the wait at once,
/// the others from the span's record.
#[tokio::test]
async fn x2_a_guests_one_report_makes_a_child_span_of_each_stage_it_met() {
    let (host, traces, metrics, collected) =
        counted_host(Staged::new(true, Duration::from_micros(2)), true);
    host.invoke_tool(
        CallContext::new(),
        "staged",
        Arguments::parse("{}").unwrap(),
    )
    .await
    .unwrap();
    let owed = metrics.encode_without_owed();
    for line in [
        r#"toolhost_call_stage_duration_seconds_count{stage="queue_wait",plugin="p"} 1"#,
        r#"toolhost_call_stage_duration_seconds_count{stage="guest",plugin="p"} 0"#,
    ] {
        assert!(owed.contains(line), "{line} in\n{owed}");
    }
    traces.flush();
    let spans = collected.spans();
    let took = |name: &str| {
        let span = spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} in {spans:?}"));
        span.end_time.duration_since(span.start_time).unwrap()
    };
    assert_eq!(took("toolhost.queue_wait"), Duration::from_micros(2));
    assert_eq!(took("toolhost.instantiate"), Duration::from_micros(3));
    assert_eq!(took("toolhost.guest"), Duration::from_micros(5));
    let text = metrics.encode_text();
    for stage in ["queue_wait", "instantiate", "guest"] {
        let line = format!(
            r#"toolhost_call_stage_duration_seconds_count{{stage="{stage}",plugin="p"}} 1"#
        );
        assert!(text.contains(&line), "{line} in\n{text}");
    }
}

/// A flood of traced calls past the finisher's queue: the calls whose
/// spans are dropped for want of room are still counted, at once, and a
/// read then has every call.
#[tokio::test]
async fn x1_a_call_whose_span_is_dropped_for_a_full_queue_is_still_counted() {
    let (host, traces, metrics, _collected) = counted_host(
        FnTool::arc(
            ToolSpec::new("quick", "", json!({"type": "object"})),
            |_, _| async { Ok(ToolOutput::text("ok")) },
        ),
        true,
    );
    let over = 5;
    let calls = super::finish::CAPACITY + over;
    for _ in 0..calls {
        host.invoke_tool(CallContext::new(), "quick", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
    }
    assert_eq!(traces.dropped(), over as u64);
    // The queue holds CAPACITY calls' counts; the dropped ones were made.
    let owed = metrics.encode_without_owed();
    let line = |n: usize| {
        format!(
            r#"toolhost_calls_total{{tool="quick",plugin="",outcome="ok",tenant="default"}} {n}"#
        )
    };
    assert!(owed.contains(&line(over)), "{} in\n{owed}", line(over));
    let read = metrics.encode_text();
    assert!(read.contains(&line(calls)), "{} in\n{read}", line(calls));
}

#[test]
fn x2_ids_drawn_on_different_threads_never_repeat_nor_are_zero() {
    // Each thread's generator is seeded apart: two threads drawing as
    // many ids must not draw the same ones.
    let draw = || (0..10_000).map(|_| super::random_ids()).collect::<Vec<_>>();
    let other = std::thread::spawn(draw).join().expect("the thread draws");
    let mine = draw();
    let mut traces = std::collections::HashSet::new();
    let mut spans = std::collections::HashSet::new();
    for (trace, span) in mine.into_iter().chain(other) {
        assert_ne!(trace, TraceId::INVALID);
        assert_ne!(span, SpanId::INVALID);
        assert!(traces.insert(trace), "trace id {trace} drawn twice");
        assert!(spans.insert(span), "span id {span} drawn twice");
    }
}
