//! What a tool is (rule T1): a descriptor, raw JSON arguments, a call context,
//! and an async function from those to a typed result.
//!
//! Native Rust tools, wasm component tools and remote MCP tools all implement
//! the same [`Tool`] trait; nothing downstream can tell them apart.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::output::ToolOutput;
use crate::schema::CompiledSchema;

pub mod approval;
mod arguments;
pub mod elicitation;
mod unique_keys;

pub use arguments::{Arguments, MAX_ARGUMENT_BYTES, MAX_ARGUMENT_DEPTH};
pub use unique_keys::{RepeatedKey, check_unique_keys};

/// The longest tool name accepted by [`ToolSpec::validate_name`].
pub const MAX_TOOL_NAME_LEN: usize = 128;

/// Why a tool name is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name is empty.
    #[error("the name is empty")]
    Empty,
    /// The name is longer than [`MAX_TOOL_NAME_LEN`] bytes.
    #[error("`{start}…` is {len} bytes long; the limit is {MAX_TOOL_NAME_LEN}")]
    TooLong {
        /// Its first 32 bytes or so (cut at a character boundary).
        start: String,
        /// Its length in bytes.
        len: usize,
    },
    /// The name holds a character other than ASCII letters, digits, `_`,
    /// `-` and `.`.
    #[error("`{name}` contains {ch:?}; use ASCII letters, digits, `_`, `-` or `.`")]
    BadChar {
        /// The name.
        name: String,
        /// The first character refused.
        ch: char,
    },
}

/// A tool's descriptor: everything the host and the model know about it
/// without running it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Unique name in the registry: ASCII letters, digits, `_`, `-` and `.`,
    /// 1 to [`MAX_TOOL_NAME_LEN`] characters.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// Whether calls may run beside others (rule M2): `None` is undeclared,
    /// `Some(true)` safe, `Some(false)` unsafe (a barrier).
    pub concurrency_safe: Option<bool>,
    /// Whether running the tool twice with the same arguments has the same
    /// effect as running it once (rule P5). Only idempotent tools are retried
    /// without a deduplication key.
    pub idempotent: bool,
    /// JSON Schema of the structured content the tool returns (rule N2),
    /// if it declares one. A tool that declares it must return
    /// [`ToolOutput::Structured`] with a value that matches; the pipeline
    /// checks every result.
    pub output_schema: Option<Value>,
    /// What the tool says about its effects (MCP's tool annotations);
    /// none declared by default. Passed on to MCP clients, and read by
    /// declarative rules only where the configuration asks (rule O4).
    pub hints: ToolHints,
}

impl ToolSpec {
    /// A descriptor with undeclared concurrency safety and not idempotent.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
            concurrency_safe: None,
            idempotent: false,
            output_schema: None,
            hints: ToolHints::NONE,
        }
    }

    /// Declares what the tool says about its effects.
    pub fn hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// Declares the schema of the structured content the tool returns.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Declares whether calls may run concurrently with others.
    pub fn concurrency_safe(mut self, safe: bool) -> Self {
        self.concurrency_safe = Some(safe);
        self
    }

    /// Declares the tool idempotent (safe to retry).
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// Checks the name's syntax; the error says which character is wrong.
    pub fn validate_name(name: &str) -> Result<(), NameError> {
        if name.is_empty() {
            return Err(NameError::Empty);
        }
        if name.len() > MAX_TOOL_NAME_LEN {
            return Err(NameError::TooLong {
                start: name[..name.floor_char_boundary(32)].to_owned(),
                len: name.len(),
            });
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        {
            return Err(NameError::BadChar {
                name: name.to_owned(),
                ch: c,
            });
        }
        Ok(())
    }
}

/// What a tool says about its own effects, in the words of MCP's tool
/// annotations (`readOnlyHint`, `destructiveHint`, `openWorldHint`). Hints, not guarantees:
/// the host never trusts them to grant anything, and only declarative
/// rules that ask for them read them (rule O4, see
/// [`RuleSet::annotation_defaults`](crate::rules::RuleSet::annotation_defaults)).
/// `None` is undeclared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ToolHints {
    /// The tool changes nothing outside itself (`readOnlyHint`).
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite something (`destructiveHint`).
    pub destructive: Option<bool>,
    /// The tool reaches an open world of entities, such as the web
    /// (`openWorldHint`).
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// No hint declared.
    pub const NONE: Self = Self {
        read_only: None,
        destructive: None,
        open_world: None,
    };

    /// Declares whether the tool only reads.
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = Some(read_only);
        self
    }

    /// Declares whether the tool may destroy or overwrite something.
    pub fn destructive(mut self, destructive: bool) -> Self {
        self.destructive = Some(destructive);
        self
    }

    /// Declares whether the tool reaches an open world of entities.
    pub fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        *self == Self::NONE
    }
}

/// A tool: a descriptor and an async function of (call context, raw JSON
/// arguments).
///
/// Implementations must be cheap to share (`Send + Sync`) and should watch
/// [`CallContext::cancelled`] in long operations; the pipeline drops a call's
/// future at its deadline whether or not the tool cooperates.
///
/// Calling [`Tool::call`] directly bypasses hooks, middleware and validation:
/// that is not a call in toolhost's sense (rule P1). Use
/// [`ToolHost::invoke_tool`](crate::ToolHost::invoke_tool).
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's descriptor. Must not change while the tool is registered.
    fn spec(&self) -> &ToolSpec;

    /// The descriptor's parameters schema, already compiled, for a tool
    /// that had to compile it anyway (a plugin's tools, checked while
    /// loading). The registry compiles [`spec`](Self::spec)'s schema itself
    /// when this is `None`, the default. When `Some`, it must be the
    /// compiled form of exactly that schema.
    fn compiled_schema(&self) -> Option<CompiledSchema> {
        None
    }

    /// The descriptor's output schema, already compiled, as
    /// [`compiled_schema`](Self::compiled_schema) is the parameters'. The
    /// registry compiles [`spec`](Self::spec)'s `output_schema` itself
    /// when this is `None`, the default. When `Some`, it must be the
    /// compiled form of exactly that schema.
    fn compiled_output_schema(&self) -> Option<CompiledSchema> {
        None
    }

    /// The sandboxed plugin this tool runs in, if it runs in one: a call
    /// that outlives its deadline fails naming it, whichever of the
    /// pipeline's timer and the sandbox's interrupt noticed first (rule R2).
    /// `None`, the default, for every other tool.
    fn plugin(&self) -> Option<&str> {
        None
    }

    /// Whether every call of this tool ends by its context's
    /// [deadline](CallContext::deadline) on its own, wherever it stands
    /// (with [`ToolError::Timeout`] naming its [`plugin`](Self::plugin)),
    /// and nothing it starts outlives its future. The executor then runs
    /// no timer of its own for the call, nor a child cancellation token to
    /// cancel at the deadline: a plugin's tools, which the sandbox stops at
    /// the deadline (rule C1), spare a timer's setting and clearing, and
    /// the token's, on every call. Cancellation by the caller still drops
    /// the call's future. `false`, the default: the executor drops the
    /// tool's future at the deadline, whether or not the tool watches it
    /// (rule P4). A tool that says `true` and overruns its deadline
    /// overruns it.
    fn ends_by_deadline(&self) -> bool {
        false
    }

    /// What the tool says about its effects (MCP's `readOnlyHint`,
    /// `destructiveHint` and `openWorldHint`): its spec's
    /// [`hints`](ToolSpec::hints).
    fn hints(&self) -> ToolHints {
        self.spec().hints
    }

    /// Runs the tool once.
    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError>;
}

/// A tool made from a descriptor and an async closure.
pub struct FnTool<F> {
    spec: ToolSpec,
    func: F,
    /// Its parameters schema, deferred: [`FnTool::with_schema_built_on_first_use`].
    schema: Option<CompiledSchema>,
}

impl<F, Fut> FnTool<F>
where
    F: Fn(CallContext, Arguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    /// Wraps `func` as a tool described by `spec`.
    pub fn new(spec: ToolSpec, func: F) -> Self {
        Self {
            spec,
            func,
            schema: None,
        }
    }

    /// Hands the registry the parameters schema as one the program vouches
    /// for: its cost is bounded now (rule C9), and its validator is built
    /// by the first call that is validated rather than at registration
    /// ([`CompiledSchema::deferred`]), so that a server registering its own
    /// tools builds no validator before its first answer. For schemas the
    /// program itself derives and tests: one that does not compile is not
    /// refused at registration, and refuses every call's arguments with the
    /// reason instead. One whose cost cannot be bounded is left to the
    /// registry, which refuses it.
    pub fn with_schema_built_on_first_use(mut self) -> Self {
        self.schema = CompiledSchema::deferred(self.spec.parameters.clone()).ok();
        self
    }

    /// Declares what the tool says about its effects ([`Tool::hints`]).
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.spec.hints = hints;
        self
    }

    /// Wraps `func` as a tool and puts it behind an `Arc`, ready to register.
    pub fn arc(spec: ToolSpec, func: F) -> Arc<dyn Tool> {
        Arc::new(Self::new(spec, func))
    }
}

#[async_trait]
impl<F, Fut> Tool for FnTool<F>
where
    F: Fn(CallContext, Arguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn compiled_schema(&self) -> Option<CompiledSchema> {
        self.schema.clone()
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        (self.func)(ctx, args).await
    }
}

/// The tenant of a call that names none.
pub const DEFAULT_TENANT: &str = "default";

/// Identifies one call; the model's tool-call id where there is one.
/// Cheap to clone: an id of up to 23 bytes is held in place, a longer one
/// is shared.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallId(smol_str::SmolStr);

impl CallId {
    /// A fresh id, unique within this process.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        // Written with `itoa` rather than through `format!`: every call
        // that names no id makes one, and the formatter cost more than the
        // rest of the id.
        let mut digits = itoa::Buffer::new();
        let mut id = smol_str::SmolStrBuilder::new();
        id.push_str("call-");
        id.push_str(digits.format(NEXT.fetch_add(1, Ordering::Relaxed)));
        Self(id.finish())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for CallId {
    fn from(s: &str) -> Self {
        Self(s.into())
    }
}

impl From<String> for CallId {
    fn from(s: String) -> Self {
        Self(s.into())
    }
}

impl fmt::Display for CallId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How far a call has come (rule N3): `progress` out of `total` when the
/// total is known, with an optional message for people.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Work done so far; it only grows within a call.
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// What is happening, in words.
    pub message: Option<String>,
}

/// Where a call's progress goes: set by the caller (an MCP client's
/// progress token, a user interface), called by the tool through
/// [`CallContext::report_progress`]. It must return quickly and must not
/// block: it is called on the tool's task.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(Progress) + Send + Sync>);

impl ProgressSink {
    /// A sink that hands each report to `f`.
    pub fn new(f: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Hands `progress` to the sink.
    pub fn report(&self, progress: Progress) {
        (self.0)(progress)
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Everything a call carries besides its arguments: its id, its deadline,
/// its cancellation token, where its progress goes, an optional
/// deduplication key and the attempt number. Cloning is cheap.
#[derive(Debug, Clone)]
pub struct CallContext {
    call_id: CallId,
    deadline: Option<Instant>,
    cancel: CancellationToken,
    progress: Option<ProgressSink>,
    approver: Option<ContextApprover>,
    elicitor: Option<ContextElicitor>,
    dedup_key: Option<Arc<str>>,
    attempt: u32,
    observer: Option<ContextObserver>,
    tenant: Option<Arc<str>>,
    cpu: Option<CpuMeter>,
    trace: Option<crate::traces::TraceContext>,
}

/// The guest CPU time a call has used so far (rule A3), added to by the
/// sandbox as the call's guest code runs and read by the pipeline when the
/// call ends; shared by every clone of the call's context.
#[derive(Debug, Clone, Default)]
pub struct CpuMeter(Arc<AtomicU64>);

impl CpuMeter {
    /// A meter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `cpu` to the call's total.
    pub fn add(&self, cpu: Duration) {
        let nanos = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The total so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

/// The observer a call carries, shown by `Debug` as its presence only.
#[derive(Clone)]
struct ContextObserver(Arc<dyn crate::observe::Observer>);

impl fmt::Debug for ContextObserver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Observer")
    }
}

/// The approver a call carries, shown by `Debug` as its presence only.
#[derive(Clone)]
struct ContextApprover(Arc<dyn approval::Approver>);

impl fmt::Debug for ContextApprover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Approver")
    }
}

/// The elicitor a call carries, shown by `Debug` as its presence only.
#[derive(Clone)]
struct ContextElicitor(Arc<dyn elicitation::Elicitor>);

impl fmt::Debug for ContextElicitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Elicitor")
    }
}

impl Default for CallContext {
    fn default() -> Self {
        Self::new()
    }
}

impl CallContext {
    /// A context with a fresh call id, no deadline and its own cancellation
    /// token.
    pub fn new() -> Self {
        Self {
            call_id: CallId::fresh(),
            deadline: None,
            cancel: CancellationToken::new(),
            progress: None,
            approver: None,
            elicitor: None,
            dedup_key: None,
            attempt: 1,
            observer: None,
            tenant: None,
            cpu: None,
            trace: None,
        }
    }

    /// The call continues the distributed trace `trace` (rule X2): read
    /// from an MCP request's `_meta` or HTTP headers by whoever made the
    /// context. The pipeline of a host with
    /// [traces](crate::traces::Traces) makes the call's span its child and
    /// replaces this with the span's own context; a host without passes it
    /// on as it came.
    pub fn with_trace_context(mut self, trace: crate::traces::TraceContext) -> Self {
        self.trace = Some(trace);
        self
    }

    /// The trace context a request sent on from inside this call carries
    /// (rule X2): the call's span's, or the caller's when nothing traces
    /// the call; `None` when the call is in no trace.
    pub fn trace_context(&self) -> Option<&crate::traces::TraceContext> {
        self.trace.as_ref()
    }

    /// The tenant the call is made for (rule A2): it selects the quotas
    /// that apply and labels the call's metrics. `default` when not set.
    pub fn with_tenant(mut self, tenant: impl Into<Arc<str>>) -> Self {
        self.tenant = Some(tenant.into());
        self
    }

    /// The tenant the call is made for; `default` when none was set.
    pub fn tenant(&self) -> &str {
        self.tenant.as_deref().unwrap_or(DEFAULT_TENANT)
    }

    /// The tenant, shared; `None` for the default tenant.
    pub(crate) fn tenant_shared(&self) -> Option<Arc<str>> {
        self.tenant.clone()
    }

    /// Measures the guest CPU time of the call into `meter` (rule A3); the
    /// pipeline sets one when the host has CPU quotas.
    pub fn with_cpu_meter(mut self, meter: CpuMeter) -> Self {
        self.cpu = Some(meter);
        self
    }

    /// Where code running the call's guest adds the CPU time it used;
    /// `None` when nothing is measured.
    pub fn cpu_meter(&self) -> Option<&CpuMeter> {
        self.cpu.as_ref()
    }

    /// Reports the call's stages to `observer` (rule X1); the pipeline
    /// sets it when the host has [metrics](crate::metrics::Metrics).
    pub fn with_observer(mut self, observer: Arc<dyn crate::observe::Observer>) -> Self {
        self.observer = Some(ContextObserver(observer));
        self
    }

    /// Where a stage of this call that runs outside the pipeline (the
    /// sandbox, a remote MCP server) reports how long it took; `None` when
    /// nothing is measured, and then nothing should be.
    pub fn observer(&self) -> Option<&Arc<dyn crate::observe::Observer>> {
        self.observer.as_ref().map(|o| &o.0)
    }

    /// Sends the call's progress to `sink` (rule N3).
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Where the call's progress goes, if its caller wants it: a tool that
    /// forwards the call elsewhere (a remote MCP server) passes it on.
    pub fn progress_sink(&self) -> Option<&ProgressSink> {
        self.progress.as_ref()
    }

    /// Asks `approver` when a hook wants a person to approve this call,
    /// instead of the host's approver (for example the MCP client that made
    /// the call, through elicitation).
    pub fn with_approver(mut self, approver: Arc<dyn approval::Approver>) -> Self {
        self.approver = Some(ContextApprover(approver));
        self
    }

    /// The approver this call carries, if its caller set one.
    pub fn approver(&self) -> Option<&Arc<dyn approval::Approver>> {
        self.approver.as_ref().map(|a| &a.0)
    }

    /// Puts the questions the tool asks in the middle of the call (a remote
    /// MCP server's elicitation) to `elicitor`: the person behind the caller.
    pub fn with_elicitor(mut self, elicitor: Arc<dyn elicitation::Elicitor>) -> Self {
        self.elicitor = Some(ContextElicitor(elicitor));
        self
    }

    /// The elicitor this call carries, if its caller can be asked.
    pub fn elicitor(&self) -> Option<&Arc<dyn elicitation::Elicitor>> {
        self.elicitor.as_ref().map(|e| &e.0)
    }

    /// Reports progress to the caller, if it asked for it; otherwise does
    /// nothing. `progress` should grow from one report to the next.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.progress {
            sink.report(Progress {
                progress,
                total,
                message: message.map(str::to_owned),
            });
        }
    }

    /// Uses `id` as the call id (for example the model's tool-call id).
    pub fn with_call_id(mut self, id: impl Into<CallId>) -> Self {
        self.call_id = id.into();
        self
    }

    /// Sets the deadline; an earlier existing deadline is kept.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(self.deadline.map_or(deadline, |d| d.min(deadline)));
        self
    }

    /// Sets the deadline `timeout` from now; an earlier one is kept. A
    /// timeout too long for the clock to represent sets no deadline.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => self.with_deadline(deadline),
            None => self,
        }
    }

    /// Uses `token` to cancel the call; cancelling it cancels the call.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Attaches a caller-chosen deduplication key. With one, retry
    /// middleware may repeat a call to a tool that is not idempotent: the
    /// tool is expected to apply a side effect at most once per key (P5).
    pub fn with_dedup_key(mut self, key: impl Into<Arc<str>>) -> Self {
        self.dedup_key = Some(key.into());
        self
    }

    /// The call id.
    pub fn call_id(&self) -> &CallId {
        &self.call_id
    }

    /// The deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// Time left until the deadline (zero once it has passed).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The call's cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled (including by its deadline).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the call is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// The deduplication key, if the caller supplied one.
    pub fn dedup_key(&self) -> Option<&str> {
        self.dedup_key.as_deref()
    }

    /// Which attempt this is, starting at 1 (retries count up).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The same call, with a child cancellation token: cancelling the child
    /// (at a timeout) leaves the parent untouched, cancelling the parent
    /// cancels the child. The parent's token is handed back. Made from the
    /// context itself, not a clone of it: a clone takes a reference to
    /// each of its shared parts (the token's tree among them, under its
    /// lock), on every call.
    pub(crate) fn into_child(mut self) -> (Self, CancellationToken) {
        let child = self.cancel.child_token();
        let parent = std::mem::replace(&mut self.cancel, child);
        (self, parent)
    }

    pub(crate) fn next_attempt(&self) -> Self {
        Self {
            attempt: self.attempt + 1,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t1_tool_names_are_checked() {
        assert!(ToolSpec::validate_name("read_file").is_ok());
        assert!(ToolSpec::validate_name("mcp.fs-read_2").is_ok());
        let err = ToolSpec::validate_name("bad name").unwrap_err();
        assert_eq!(
            err,
            NameError::BadChar {
                name: "bad name".into(),
                ch: ' '
            }
        );
        assert!(err.to_string().contains("' '"), "{err}");
        assert_eq!(ToolSpec::validate_name(""), Err(NameError::Empty));
        let long = ToolSpec::validate_name(&"x".repeat(200)).unwrap_err();
        assert!(
            matches!(long, NameError::TooLong { len: 200, .. }),
            "{long}"
        );
    }

    #[test]
    fn p4_deadline_only_moves_earlier() {
        let now = Instant::now();
        let ctx = CallContext::new()
            .with_deadline(now + Duration::from_secs(5))
            .with_deadline(now + Duration::from_secs(10));
        assert_eq!(ctx.deadline(), Some(now + Duration::from_secs(5)));
    }

    #[test]
    fn c6_a_timeout_past_the_clocks_range_sets_no_deadline() {
        assert_eq!(
            CallContext::new().with_timeout(Duration::MAX).deadline(),
            None
        );
        let ctx = CallContext::new()
            .with_timeout(Duration::from_secs(5))
            .with_timeout(Duration::MAX);
        assert!(ctx.deadline().is_some());
    }

    #[test]
    fn x2_a_fresh_call_id_is_held_in_place() {
        // Made on every call, and its last copy may be dropped by the
        // traces' finisher: nothing of it is on the heap.
        let id = CallId::fresh();
        assert!(id.as_str().starts_with("call-"), "{id}");
        assert!(!id.0.is_heap_allocated(), "{id}");
        // Its number is written in decimal, and the next id's is greater.
        let number = |id: &CallId| -> u64 { id.as_str()["call-".len()..].parse().unwrap() };
        let next = CallId::fresh();
        assert!(number(&next) > number(&id), "{id} then {next}");
        assert_eq!(next.as_str(), format!("call-{}", number(&next)));
    }

    #[test]
    fn t1_a_long_call_id_is_kept_whole_and_equals_its_text() {
        use std::collections::HashSet;
        // A model's tool-call id is longer than what is held in place.
        let text = "toolu_01A09q90qw90lq917835lq9zzzzzzzz";
        let id = CallId::from(text);
        assert_eq!(id.as_str(), text);
        assert_eq!(id.clone(), CallId::from(text.to_owned()));
        let short = CallId::from("call-7");
        let seen: HashSet<CallId> = [id.clone(), short.clone()].into_iter().collect();
        assert!(seen.contains(&CallId::from(text)) && seen.contains(&CallId::from("call-7")));
        assert_eq!(format!("{id} {short}"), format!("{text} call-7"));
    }

    #[test]
    fn p4_child_cancellation_does_not_cancel_parent() {
        let (child, parent) = CallContext::new().into_child();
        child.cancellation().cancel();
        assert!(child.is_cancelled());
        assert!(!parent.is_cancelled());
        let (child2, parent) = CallContext::new().with_cancellation(parent).into_child();
        parent.cancel();
        assert!(child2.is_cancelled());
    }
}
