//! The one call pipeline (rules P1–P3): hooks, middleware and the executor.
//!
//! [`run_call`] is the only place where a tool runs. Its order is fixed:
//!
//! 1. look the tool up (unknown → [`ToolError::UnknownTool`], no hooks run),
//!    and start the call's deadline if the host sets one
//!    ([`HostBuilder::call_timeout`](crate::HostBuilder::call_timeout)): from
//!    here on every step, validation, hooks, the approval wait and the tool,
//!    ends at that deadline (rule C1);
//! 2. validate the arguments against the compiled schema, if switched on;
//!    validation that may take more than microseconds runs on a blocking
//!    thread, never on an async worker, and ends at the deadline (rule C9);
//! 3. tool-specific before hooks, then global before hooks, each seeing the
//!    arguments as the previous one left them (rule P7). The first
//!    [`Decision::Reject`] stops the call ([`ToolError::Rejected`]); a
//!    [`Decision::Rewrite`] replaces the arguments, which are validated
//!    against the tool's schema at once (validation switched on or not); a
//!    [`Decision::Ask`] is remembered;
//! 4. the declarative rules judge the call on its final arguments (rule
//!    O4, [`crate::rules`]): a denial refuses it ([`ToolError::Denied`]),
//!    an ask joins the hooks' asks;
//! 5. if any hook or rule asked, the approver is asked once, with the final
//!    arguments; a denial, no answer within the approval timeout or before
//!    the call's deadline, whichever comes first, or a cancelled call
//!    refuses it, and the refusal says which;
//! 6. the middleware chain, outermost first, around the tool's execution;
//! 7. global after hooks, then tool-specific after hooks — they see every
//!    outcome of steps 2 to 6, success or error, and each may replace it
//!    ([`AfterDecision::Replace`], rule P8) for the ones after it;
//! 8. the call's [`Journal`] callbacks (the audit record), with the final
//!    outcome and every change hooks made;
//! 9. artifact offload of a large result (rule T5).
//!
//! Hooks and middleware are traits, so a wasm component or a remote MCP server
//! can implement them as well as Rust code can; nothing here assumes a tool is
//! native.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant as StdInstant};

use async_trait::async_trait;
use futures::FutureExt as _;
use opentelemetry::KeyValue;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::artifact::Offloader;
use crate::error::ToolError;
use crate::hook::{
    AfterDecision, AfterHook, BeforeHook, CallInfo, ChangeKind, Decision, HookChange, HookScope,
    outcome_bytes,
};
use crate::metrics::{self, Metrics};
use crate::observe::Stage;
use crate::output::ToolOutput;
use crate::quota::Quotas;
use crate::registry::{Registry, ToolEntry};
use crate::rules::{RuleDecision, RuleSet};
use crate::secret::SecretSet;

use crate::tool::approval::{Approval, ApprovalRequest, Approvals, AskedBy};
use crate::tool::{Arguments, CallContext, CpuMeter, Progress, ProgressSink, Tool};
use crate::traces::{CallSpan, ChildName, Traces, keys};

/// Wraps a tool's execution (rule P4–P6). A middleware may change the
/// context (a deadline), run `next` zero or more times (retry), and observe or
/// replace the outcome.
#[async_trait]
pub trait Middleware: Send + Sync {
    /// The middleware's name.
    fn name(&self) -> &str;

    /// Handles one call; run the rest of the chain with [`Next::run`].
    async fn handle(
        &self,
        call: &CallInfo,
        ctx: CallContext,
        next: Next<'_>,
    ) -> Result<ToolOutput, ToolError>;
}

/// The rest of the middleware chain, ending in the tool. `Copy`, so retry
/// middleware can run it again.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    chain: &'a [Owned<dyn Middleware>],
    call: &'a CallInfo,
    tool: &'a dyn Tool,
    secrets: &'a SecretSet,
}

impl Next<'_> {
    /// Runs the remaining middleware and then the tool.
    pub async fn run(self, ctx: CallContext) -> Result<ToolOutput, ToolError> {
        match self.chain.split_first() {
            Some((first, rest)) => {
                first
                    .item
                    .handle(
                        self.call,
                        ctx,
                        Next {
                            chain: rest,
                            ..self
                        },
                    )
                    .await
            }
            None => {
                // Secrets are redacted as the result leaves the tool, so
                // nothing after it sees them in the clear (rule O2).
                let outcome = execute(self.tool, ctx, self.call.arguments.clone()).await;
                match outcome {
                    Ok(output) => self.secrets.redact_output(output),
                    Err(e) => Err(self.secrets.redact_error(e)),
                }
            }
        }
    }
}

/// Runs the tool itself: the deadline is enforced here, whether or not the
/// tool watches its cancellation token; a panic fails this call only.
///
/// This executor owns the call's deadline. The `Timeout` middleware and
/// `HostBuilder::call_timeout` only set it. A plugin's tool is stopped at
/// it by the sandbox, which interrupts the guest wherever it stands (so
/// that its CPU stops too), gives up a wait for an instance or for the
/// plugin's load, and so says it ends by its deadline
/// ([`Tool::ends_by_deadline`]): its call is not timed again here. Every
/// other tool's future is dropped here at the deadline. Whoever noticed
/// the deadline, [`settle`] alone decides what the caller gets (rule R2).
fn execute(
    tool: &dyn Tool,
    ctx: CallContext,
    args: Arguments,
) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + '_ {
    // A tool that ends by its deadline on its own (a plugin's) is not timed
    // here: no timer to set and clear, and no child token to cancel at the
    // deadline (`Tool::ends_by_deadline`).
    let timed = !tool.ends_by_deadline();
    // Each timed execution gets its own child token, so cancelling it at
    // the deadline leaves the caller's token, and later retries, untouched.
    let (ctx, caller) = if timed {
        ctx.into_child()
    } else {
        let caller = ctx.cancellation().clone();
        (ctx, caller)
    };
    let own = timed.then(|| ctx.cancellation().clone());
    let deadline = ctx.deadline();
    // The preparation above is done here and the future below holds only
    // what it made: an `async fn` would keep its arguments beside what it
    // made of them, and this future is moved, whole, into every boxed
    // future of the call's middleware. Likewise the tool's guarded call is
    // made where it is awaited, not kept in a variable beside the timer
    // that holds it.
    async move {
        let started = Instant::now();
        let cancel = own.as_ref().unwrap_or(&caller);
        let result = match deadline.filter(|_| timed) {
            None => guarded(cancel, tool, ctx, args).await,
            Some(deadline) => {
                match tokio::time::timeout_at(deadline, guarded(cancel, tool, ctx, args)).await {
                    Ok(result) => result,
                    Err(_elapsed) => {
                        // The tool's future has been dropped; tell anything
                        // it spawned.
                        if let Some(own) = &own {
                            own.cancel();
                        }
                        Err(ToolError::timeout(started.elapsed()))
                    }
                }
            }
        };
        // A finished result stands (settle's first case): only a failure
        // pays for reading the token and the clock.
        if result.is_ok() {
            return result;
        }
        let ended = Ends {
            caller_cancelled: caller.is_cancelled(),
            deadline_passed: deadline.is_some_and(|d| Instant::now() >= d),
        };
        settle(result, ended, tool.plugin(), started.elapsed())
    }
}

/// The tool's call, dropped as soon as `cancel` is cancelled (checked
/// first on every poll: [`ToolError::Cancelled`]), and a panic in it made
/// this call's failure.
async fn guarded(
    cancel: &CancellationToken,
    tool: &dyn Tool,
    ctx: CallContext,
    args: Arguments,
) -> Result<ToolOutput, ToolError> {
    let run = AssertUnwindSafe(tool.call(ctx, args)).catch_unwind();
    match crate::cancel::until_cancelled(cancel, run).await {
        None => Err(ToolError::Cancelled),
        Some(result) => result.unwrap_or_else(|panic| {
            Err(ToolError::failed(format!(
                "tool panicked: {}",
                panic_message(&*panic)
            )))
        }),
    }
}

/// What had happened to a call by the time its execution ended.
#[derive(Debug, Clone, Copy)]
struct Ends {
    /// The caller cancelled the call.
    caller_cancelled: bool,
    /// The call's deadline had passed.
    deadline_passed: bool,
}

/// The one place that decides what a call's caller gets when the call's
/// ends race (rule R2), in this order:
/// 1. a result the tool finished: it stands, even if the deadline passed
///    while it was being handed back;
/// 2. the caller's cancellation: [`ToolError::Cancelled`];
/// 3. a passed deadline: [`ToolError::Timeout`], naming the tool's plugin,
///    whichever of this executor's timer, the sandbox's interrupt or the
///    wait for an instance noticed it first (any other failure the deadline
///    caused, such as a guest trapping as it is stopped, is this timeout);
/// 4. otherwise the tool's own error.
fn settle(
    result: Result<ToolOutput, ToolError>,
    ended: Ends,
    plugin: Option<&str>,
    ran: Duration,
) -> Result<ToolOutput, ToolError> {
    match result {
        Ok(output) => Ok(output),
        Err(_) if ended.caller_cancelled => Err(ToolError::Cancelled),
        Err(ToolError::Timeout {
            after,
            plugin: named,
        }) => Err(ToolError::Timeout {
            after,
            plugin: named.or_else(|| plugin.map(str::to_owned)),
        }),
        Err(_) if ended.deadline_passed => Err(ToolError::Timeout {
            after: ran,
            plugin: plugin.map(str::to_owned),
        }),
        Err(err) => Err(err),
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// A contribution and the extension it came from (`None`: the host's own).
pub(crate) struct Owned<T: ?Sized> {
    pub(crate) item: Arc<T>,
    pub(crate) owner: Option<Arc<str>>,
}

impl<T: ?Sized> Clone for Owned<T> {
    fn clone(&self) -> Self {
        Self {
            item: self.item.clone(),
            owner: self.owner.clone(),
        }
    }
}

/// Removes from `v` every item `owner` contributed.
pub(crate) fn drop_owned<T: ?Sized>(v: &mut Vec<Owned<T>>, owner: &str) {
    v.retain(|o| o.owner.as_deref() != Some(owner));
}

/// Hooks and middleware in registration order. Replaced as a
/// whole on change (copy on write), so a call in flight keeps the snapshot it
/// started with.
#[derive(Default, Clone)]
pub(crate) struct Stack {
    pub(crate) before_global: Vec<Owned<dyn BeforeHook>>,
    pub(crate) after_global: Vec<Owned<dyn AfterHook>>,
    pub(crate) before_tool: HashMap<String, Vec<Owned<dyn BeforeHook>>>,
    pub(crate) after_tool: HashMap<String, Vec<Owned<dyn AfterHook>>>,
    pub(crate) middleware: Vec<Owned<dyn Middleware>>,
}

impl Stack {
    pub(crate) fn add_before(&mut self, scope: HookScope, item: Owned<dyn BeforeHook>) {
        match scope {
            HookScope::Global => self.before_global.push(item),
            HookScope::Tool(t) => self.before_tool.entry(t).or_default().push(item),
        }
    }

    pub(crate) fn add_after(&mut self, scope: HookScope, item: Owned<dyn AfterHook>) {
        match scope {
            HookScope::Global => self.after_global.push(item),
            HookScope::Tool(t) => self.after_tool.entry(t).or_default().push(item),
        }
    }

    /// Removes everything `owner` contributed.
    pub(crate) fn remove_owner(&mut self, owner: &str) {
        drop_owned(&mut self.before_global, owner);
        drop_owned(&mut self.after_global, owner);
        drop_owned(&mut self.middleware, owner);
        for v in self.before_tool.values_mut() {
            drop_owned(v, owner);
        }
        for v in self.after_tool.values_mut() {
            drop_owned(v, owner);
        }
        self.before_tool.retain(|_, v| !v.is_empty());
        self.after_tool.retain(|_, v| !v.is_empty());
    }
}

/// What [`run_call`] needs from the host.
pub(crate) struct Pipeline<'a> {
    pub(crate) registry: &'a Registry,
    pub(crate) stack: &'a Stack,
    pub(crate) validate: bool,
    pub(crate) offloader: Option<&'a Offloader>,
    pub(crate) approvals: &'a Approvals,
    pub(crate) call_timeout: Option<std::time::Duration>,
    pub(crate) rules: &'a RuleSet,
    pub(crate) secrets: &'a SecretSet,
    /// Where every call is counted and timed (rule X1); `None`: nowhere,
    /// and no clock is read for it.
    pub(crate) metrics: Option<&'a Metrics>,
    /// What every call is admitted through (rule A3); `None`: no quota.
    pub(crate) quotas: Option<&'a Arc<Quotas>>,
    /// Where every call's span goes (rule X2); `None`: nowhere, and
    /// nothing is made for it.
    pub(crate) traces: Option<&'a Traces>,
}

/// `arguments` with every secret in them redacted (rule O2): the same
/// arguments when none is there.
fn redacted_arguments(secrets: &SecretSet, arguments: Arguments) -> Result<Arguments, ToolError> {
    if secrets.is_empty() || secrets.find(arguments.as_str().as_bytes()).is_none() {
        return Ok(arguments);
    }
    let mut value = arguments.to_value();
    secrets.redact_json(&mut value);
    Arguments::from_json(value)
}

/// `ctx` with its progress messages redacted of `secrets` (rule O2).
fn redacting_progress(ctx: CallContext, secrets: &SecretSet) -> CallContext {
    match ctx.progress_sink() {
        Some(sink) if !secrets.is_empty() => {
            let (sink, secrets) = (sink.clone(), secrets.clone());
            ctx.with_progress(ProgressSink::new(move |mut progress: Progress| {
                if let Some(message) = &mut progress.message {
                    secrets.redact_string(message);
                }
                sink.report(progress);
            }))
        }
        _ => ctx,
    }
}

/// Validation whose estimated work ([`CompiledSchema::work`](crate::CompiledSchema::work)) is at most
/// this runs on the async worker: it takes microseconds. Anything larger runs
/// on a blocking thread and ends at the call's deadline (rule C9).
const INLINE_VALIDATION_WORK: usize = 1 << 18;

/// The most work a check against a schema may take ([`CompiledSchema::work`]:
/// subschemas once expanded, times the value's bytes): about a second of
/// a core (403 subschemas against 1.1 MB of items, 4.4e8, take 0.36 s). A check that would take more is refused, naming both
/// sizes, rather than run on a thread that the call's deadline cannot stop
/// (rule C9): a plugin's output of 16 MiB against its own schema of 20,000
/// subschemas would be minutes of CPU, run after the call had ended.
///
/// [`CompiledSchema::work`]: crate::schema::CompiledSchema::work
pub const MAX_VALIDATION_WORK: usize = 1 << 30;

/// Why a value is not checked: its check would exceed
/// [`MAX_VALIDATION_WORK`].
fn too_much_work(what: &str, bytes: usize, schema: &crate::schema::CompiledSchema) -> String {
    format!(
        "{what} of {bytes} bytes is too large to check against this tool's schema of {} subschemas (at most {MAX_VALIDATION_WORK} bytes × subschemas)",
        schema.work(1)
    )
}

/// Runs one call through the whole pipeline, in the order given in the module
/// documentation. This is the only function that runs a tool.
pub(crate) async fn run_call(
    p: Pipeline<'_>,
    ctx: CallContext,
    name: &str,
    args: Arguments,
) -> Result<ToolOutput, ToolError> {
    // With metrics, the clock is read as the call enters (rule X1).
    let entered = p.metrics.map(|m| (m, Instant::now()));
    let Some(entry) = p.registry.entry(name) else {
        tracing::warn!(target: "toolhost::call", tool = name, call_id = %ctx.call_id(), outcome = "unknown_tool");
        if let Some((m, at)) = entered {
            // The name asked for is not a label: any caller could make up
            // any number of them.
            m.call(None, "", ctx.tenant(), "unknown_tool", at.elapsed());
        }
        if let Some(traces) = p.traces {
            traces
                .start_call(&ctx, Err(name), p.secrets, None, (None, false))
                .end("unknown_tool");
        }
        return Err(ToolError::UnknownTool { name: name.into() });
    };
    let ctx = match p.call_timeout {
        Some(timeout) => ctx.with_timeout(timeout),
        None => ctx,
    };
    let ctx = redacting_progress(ctx, p.secrets);
    // The plugin, extension or server the tool belongs to; "" for the
    // host's own.
    let plugin: &str = &entry.plugin;
    // The tool's metric series and its plugin's observer, kept by its
    // registry entry.
    let metered = p
        .metrics
        .map(|m| m.of_tool(&entry.metrics, name, &entry.plugin));
    let observer = metered.as_ref().map(|t| t.observer().clone());
    // With traces, the call's span, whose trace context the call sends on;
    // when it is sampled, the stages report to it, and through it to the
    // metrics (rule X2).
    // A sampled call's counts are made by the traces' finisher from its
    // span's record, off the call's thread, when the series the entry
    // keeps are this host's.
    let counted_later = matches!(&metered, Some(std::borrow::Cow::Borrowed(_)));
    let traced = p.traces.map(|traces| {
        traces.start_call(
            &ctx,
            Ok(&entry),
            p.secrets,
            entered.map(|(_, at)| at.into_std()),
            (observer.clone(), counted_later),
        )
    });
    // Whether this call counts itself, or its span's finisher does.
    let counts_itself = !traced.as_ref().is_some_and(|s| s.counts_call());
    let ctx = match &traced {
        Some(span) => ctx.with_trace_context(span.outgoing().clone()),
        None => ctx,
    };
    let ctx = match (&traced, observer) {
        (Some(span), _) if span.recording() => ctx.with_observer(span.clone()),
        (_, Some(metrics)) => ctx.with_observer(metrics),
        (_, None) => ctx,
    };
    // The span child spans hang on: only a sampled call's.
    let spans = traced.as_deref().filter(|s| s.recording());
    // The quotas admit the call before anything of it runs (rule A3); the
    // guest's CPU time is measured into the context and charged at the end.
    let (admitted, ctx) = match p.quotas {
        None => (None, ctx),
        Some(quotas) => match quotas.admit(ctx.tenant(), plugin) {
            Ok(admitted) if admitted.counts_cpu() => {
                let meter = CpuMeter::new();
                (
                    Some((admitted, Some(meter.clone()))),
                    ctx.with_cpu_meter(meter),
                )
            }
            Ok(admitted) => (Some((admitted, None)), ctx),
            Err(over) => {
                tracing::warn!(
                    target: "toolhost::call",
                    tool = name,
                    call_id = %ctx.call_id(),
                    tenant = ctx.tenant(),
                    outcome = "over_quota",
                    quota = over.kind.key(),
                    "call refused by a quota",
                );
                let err = ToolError::OverQuota {
                    quota: over.kind,
                    scope: over.scope,
                    retry_after: over.retry_after,
                };
                if counts_itself && let (Some(tool), Some((_, at))) = (&metered, entered) {
                    tool.call(ctx.tenant(), "over_quota", at.elapsed());
                }
                if let Some(span) = &traced {
                    span.end("over_quota");
                }
                return Err(err);
            }
        },
    };
    // What the hooks and the approval wait took, and whether the approval
    // wait refused the call: read only with metrics.
    let mut hooks_from = None;
    let mut approval_took = None;
    let mut approval_refused = false;
    let mut call = CallInfo::new(entry.spec.clone(), args, ctx.call_id().clone());
    let no_hooks = Vec::new();
    let before_tool = p.stack.before_tool.get(name).unwrap_or(&no_hooks);
    let no_hooks = Vec::new();
    let after_tool = p.stack.after_tool.get(name).unwrap_or(&no_hooks);
    let has_hooks = !before_tool.is_empty()
        || !p.stack.before_global.is_empty()
        || !p.rules.allows_everything();

    // When the arguments' validation started and ended, for a sampled
    // call's span: its child span is recorded as the span ends.
    let mut validated = None;
    let before = async {
        if p.validate {
            let from = spans.map(|_| StdInstant::now());
            let valid = validate(&entry, &call.arguments, &ctx).await;
            validated = from.map(|from| (from, StdInstant::now()));
            valid?;
        }
        // The hooks are timed only where there are any (or rules).
        if has_hooks {
            hooks_from = entered.map(|_| Instant::now());
        }
        let mut asked = Vec::new();
        for hook in before_tool.iter().chain(&p.stack.before_global) {
            let hook = &*hook.item;
            let from = spans.map(|_| StdInstant::now());
            let decision = hook.before(&call).await;
            if let (Some(span), Some(from)) = (spans, from) {
                let word = match &decision {
                    Decision::Allow => "allow",
                    Decision::Reject(_) => "reject",
                    Decision::Rewrite(_) => "rewrite",
                    Decision::Ask { .. } => "ask",
                };
                hook_span(span, hook.name(), "before", word, from);
            }
            match decision {
                Decision::Allow => {}
                // What a hook hands back may carry a secret it was
                // granted: redacted like a tool's result (rule O2).
                Decision::Reject(r) => {
                    return Err(p.secrets.redact_error(rejected(hook, r.reason)));
                }
                Decision::Rewrite(new) => {
                    // Nor does a rewrite hand a secret to the tool, which
                    // may belong to a plugin not granted it.
                    let new = redacted_arguments(p.secrets, new)?;
                    validate(&entry, &new, &ctx).await.map_err(|e| match e {
                        ToolError::InvalidArguments { .. } => rejected(
                            hook,
                            format!("its rewritten arguments do not fit the tool's schema: {e}"),
                        ),
                        other => other,
                    })?;
                    call.journal().record(HookChange {
                        hook: hook.name().to_owned(),
                        kind: ChangeKind::RewroteArguments,
                        bytes_before: call.arguments.len(),
                        bytes_after: new.len(),
                    });
                    call.arguments = new;
                }
                Decision::Ask { reason } => asked.push(AskedBy {
                    hook: hook.name().to_owned(),
                    reason: p.secrets.redact(&reason).into_owned(),
                }),
            }
        }
        // The rules judge what the tool would run with: the arguments as
        // the last hook left them (rule O4).
        if !p.rules.allows_everything() {
            let from = spans.map(|_| StdInstant::now());
            let judged = p
                .rules
                .judge(name, entry.tool.hints(), call.arguments.as_value());
            if let (Some(span), Some(from)) = (spans, from) {
                let word = match judged.decision {
                    RuleDecision::Deny => "deny",
                    RuleDecision::Ask => "ask",
                    RuleDecision::Allow => "allow",
                };
                span.child(
                    ChildName::Rules,
                    from,
                    StdInstant::now(),
                    vec![KeyValue::new(keys::HOOK_DECISION, word)],
                );
            }
            match judged.decision {
                RuleDecision::Deny => return Err(judged.denial()),
                RuleDecision::Ask => asked.push(judged.asked_by()),
                RuleDecision::Allow => {}
            }
        }
        if !asked.is_empty() {
            let asking = (entered.is_some() || spans.is_some()).then(Instant::now);
            let answer = ask(&p, &ctx, &call, asked).await;
            if let Some(at) = asking {
                approval_took = Some(at.elapsed());
                approval_refused = matches!(answer, Err(ToolError::Rejected { .. }));
            }
            if let (Some(span), Some(took)) = (spans, approval_took) {
                span.stage_child(Stage::ApprovalWait, took);
            }
            answer?;
        }
        Ok(())
    }
    .await;
    // The hooks' time before the call: from after validation to the end
    // of the rules, without the approval wait.
    let hooks_before = hooks_from.map(|at: Instant| {
        at.elapsed()
            .saturating_sub(approval_took.unwrap_or_default())
    });
    let outcome = match before {
        Ok(()) => {
            let output = Next {
                chain: &p.stack.middleware,
                call: &call,
                tool: &*entry.tool,
                secrets: p.secrets,
            }
            .run(ctx.clone())
            .await;
            match output {
                Ok(output) => check_output(&entry, output, &ctx).await,
                Err(e) => Err(e),
            }
        }
        Err(refused) => Err(refused),
    };

    if let Err(
        err @ (ToolError::InvalidArguments { .. }
        | ToolError::Rejected { .. }
        | ToolError::Denied { .. }),
    ) = &outcome
    {
        // Refused before execution, so the logging middleware never saw it.
        tracing::warn!(
            target: "toolhost::call",
            tool = name,
            call_id = %call.call_id,
            args_bytes = call.arguments.len(),
            outcome = err.kind().as_str(),
            "call refused before execution",
        );
    }
    let mut outcome = outcome;
    let has_after = !after_tool.is_empty() || !p.stack.after_global.is_empty();
    let after_from = entered.filter(|_| has_after).map(|_| Instant::now());
    for hook in p.stack.after_global.iter().chain(after_tool) {
        let hook = &*hook.item;
        let from = spans.map(|_| StdInstant::now());
        let decision = hook.after(&call, &outcome).await;
        if let (Some(span), Some(from)) = (spans, from) {
            let word = match &decision {
                AfterDecision::Replace(_) => "replace",
                _ => "keep",
            };
            hook_span(span, hook.name(), "after", word, from);
        }
        if let AfterDecision::Replace(new) = decision {
            let new = match new.map_err(|e| p.secrets.redact_error(e)) {
                Ok(output) => match p.secrets.redact_output(output) {
                    Ok(output) => check_output(&entry, output, &ctx).await,
                    Err(withheld) => Err(withheld),
                }
                .map_err(|e| match e {
                    ToolError::InvalidOutput { .. } => ToolError::failed(format!(
                        "after hook `{}` replaced the result with one that does not fit the tool's output schema: {e}",
                        hook.name()
                    )),
                    other => other,
                }),
                Err(e) => Err(e),
            };
            call.journal().record(HookChange {
                hook: hook.name().to_owned(),
                kind: ChangeKind::ReplacedOutcome,
                bytes_before: outcome_bytes(&outcome),
                bytes_after: outcome_bytes(&new),
            });
            outcome = new;
        }
    }
    call.journal().finish(&outcome);
    if let Some((admitted, cpu)) = admitted {
        admitted.finish(cpu.map_or(Duration::ZERO, |m| m.total()));
    }
    // One reading of the clock for the call's end, shared by the metrics
    // and the span.
    let ended = entered.map(|_| Instant::now());
    if let (Some(tool), Some((_, at)), Some(ended)) = (&metered, entered, ended) {
        let observer = tool.observer();
        if has_hooks || has_after {
            let after = after_from.map_or(Duration::ZERO, |from| ended.duration_since(from));
            let before = hooks_before.unwrap_or(Duration::ZERO);
            observer.stage(
                plugin,
                Stage::Hooks,
                before + if has_after { after } else { Duration::ZERO },
            );
        }
        if let Some(took) = approval_took {
            observer.stage(plugin, Stage::ApprovalWait, took);
        }
        if let (Err(ToolError::Timeout { .. }), Some(deadline)) = (&outcome, ctx.deadline())
            && ended >= deadline
        {
            observer.deadline_overshoot(plugin, ended.duration_since(deadline));
        }
        if counts_itself {
            tool.call(
                ctx.tenant(),
                metrics::outcome(&outcome, approval_refused),
                ended.duration_since(at),
            );
        }
    }
    if let Some(span) = traced {
        let word = metrics::outcome(&outcome, approval_refused);
        span.end_at(word, ended.map(Instant::into_std), validated);
    }

    match (outcome, p.offloader) {
        (Ok(output), Some(offloader)) => {
            Ok(offloader.maybe_offload(ctx.tenant(), name, output).await)
        }
        (outcome, _) => outcome,
    }
}

/// A child span of `span` for the hook `name` in `phase`, from `from` to
/// now, saying what it decided (rule X2).
fn hook_span(
    span: &CallSpan,
    name: &str,
    phase: &'static str,
    decided: &'static str,
    from: StdInstant,
) {
    span.child(
        ChildName::Hook,
        from,
        StdInstant::now(),
        vec![
            KeyValue::new(keys::HOOK, span.text(name)),
            KeyValue::new(keys::HOOK_PHASE, phase),
            KeyValue::new(keys::HOOK_DECISION, decided),
        ],
    );
}

fn rejected(hook: &dyn BeforeHook, reason: String) -> ToolError {
    ToolError::Rejected {
        hook: hook.name().to_owned(),
        reason,
    }
}

/// Longest excerpt of a call's arguments in a question deferred to the
/// caller ([`ToolError::ApprovalRequired`]).
const QUESTION_ARGUMENT_CHARS: usize = 2000;

/// Asks the call's approver, or the host's, whether the call may run,
/// bounded by the approval timeout, the call's deadline and its
/// cancellation. Anything but an approval refuses the call, naming the
/// hooks that asked.
async fn ask(
    p: &Pipeline<'_>,
    ctx: &CallContext,
    call: &CallInfo,
    asked: Vec<AskedBy>,
) -> Result<(), ToolError> {
    let approver = ctx.approver().unwrap_or(&p.approvals.approver).clone();
    let request = ApprovalRequest::new(
        call.tool(),
        call.arguments.clone(),
        call.call_id.clone(),
        asked,
    );
    let mut wait = p.approvals.timeout;
    let mut bound = "the approval timeout";
    if let Some(left) = ctx.remaining()
        && left < wait
    {
        wait = left;
        bound = "the call's deadline";
    }
    let answer = crate::cancel::until_cancelled(
        ctx.cancellation(),
        tokio::time::timeout(wait, approver.approve(&request)),
    )
    .await;
    let reason = match answer {
        None => return Err(ToolError::Cancelled),
        Some(Ok(Approval::Approved)) => {
            tracing::info!(target: "toolhost::call", tool = call.tool(), call_id = %call.call_id, hooks = %request.hooks(), "a person approved the call");
            return Ok(());
        }
        Some(Ok(Approval::Denied { reason })) => format!("approval was denied: {reason}"),
        Some(Ok(Approval::Deferred)) => {
            tracing::info!(target: "toolhost::call", tool = call.tool(), call_id = %call.call_id, hooks = %request.hooks(), "the call's caller is to ask for approval");
            return Err(ToolError::ApprovalRequired {
                hooks: request.hooks(),
                question: request.question(QUESTION_ARGUMENT_CHARS),
            });
        }
        Some(Err(_elapsed)) => format!(
            "approval was asked for and no answer came within {} s: {bound} ended the wait",
            wait.as_secs_f64()
        ),
    };
    Err(ToolError::Rejected {
        hook: request.hooks(),
        reason,
    })
}

/// Checks `args` against the tool's schema (rule T2), off the async worker
/// when that may take a while (rule C9).
async fn validate(entry: &ToolEntry, args: &Arguments, ctx: &CallContext) -> Result<(), ToolError> {
    let schema = entry.schema();
    if schema.work(args.len()) <= INLINE_VALIDATION_WORK {
        return schema.validate(args.as_value());
    }
    if schema.work(args.len()) > MAX_VALIDATION_WORK {
        return Err(ToolError::InvalidArguments {
            path: String::new(),
            message: too_much_work("the arguments", args.len(), schema),
        });
    }
    let (schema, args) = (schema.clone(), args.clone());
    off_worker(ctx, move || schema.validate(args.as_value())).await
}

/// Checks a result against the tool's output schema, if it declares one
/// (rule N2), off the async worker when that may take a while (rule C9).
async fn check_output(
    entry: &ToolEntry,
    output: ToolOutput,
    ctx: &CallContext,
) -> Result<ToolOutput, ToolError> {
    let Some(schema) = entry.output_schema() else {
        return Ok(output);
    };
    let Some(value) = output.structured_value() else {
        return Err(ToolError::InvalidOutput {
            path: String::new(),
            message: "the tool declares an output schema but returned no structured content".into(),
        });
    };
    let bytes = approximate_len(value);
    if schema.work(bytes) <= INLINE_VALIDATION_WORK {
        return schema.validate_output(value).map(|()| output);
    }
    if schema.work(bytes) > MAX_VALIDATION_WORK {
        return Err(ToolError::InvalidOutput {
            path: String::new(),
            message: too_much_work("the result", bytes, schema),
        });
    }
    let schema = schema.clone();
    off_worker(ctx, move || {
        let checked = output
            .structured_value()
            .map_or(Ok(()), |value| schema.validate_output(value));
        checked.map(|()| output)
    })
    .await
}

/// Roughly how many bytes `value` takes as JSON text, without writing it:
/// a few per value, plus the length of every string and key.
fn approximate_len(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(approximate_len).sum::<usize>() + 2,
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| k.len() + 3 + approximate_len(v))
            .sum::<usize>()
            .saturating_add(2),
        _ => 4,
    }
}

/// Runs CPU-bound `work` on a blocking thread, so that no async worker, and
/// so no other call or health check, waits for it; the call gets its
/// answer, or a timeout at its deadline, or `Cancelled`. Work that outlives
/// the deadline finishes on its thread and is thrown away (it is bounded:
/// see [`crate::schema::cost`]).
async fn off_worker<T: Send + 'static>(
    ctx: &CallContext,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let started = Instant::now();
    let task = tokio::task::spawn_blocking(work);
    let bounded = async {
        match ctx.deadline() {
            Some(deadline) => tokio::time::timeout_at(deadline, task)
                .await
                .map_err(|_elapsed| ToolError::timeout(started.elapsed())),
            None => Ok(task.await),
        }
    };
    match crate::cancel::until_cancelled(ctx.cancellation(), bounded).await {
        None => Err(ToolError::Cancelled),
        Some(Err(timeout)) => Err(timeout),
        Some(Ok(Ok(result))) => result,
        Some(Ok(Err(join))) => Err(ToolError::failed(format!(
            "schema validation failed: {join}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::ToolHost;
    use crate::testing::{RecordAfter, RecordBefore, RecordMiddleware, Recorder, recording_tool};
    use crate::tool::{FnTool, ToolSpec};

    fn host_with_stages(rec: &Recorder, reject: Option<&'static str>) -> ToolHost {
        // Registered global-first, to show that order is by stage, not by
        // registration.
        let host = ToolHost::builder()
            .validate_arguments(true)
            .before_hook(
                HookScope::Global,
                RecordBefore {
                    label: "global-before",
                    rec: rec.clone(),
                    reject,
                },
            )
            .after_hook(
                HookScope::Global,
                RecordAfter {
                    label: "global-after",
                    rec: rec.clone(),
                },
            )
            .middleware(RecordMiddleware {
                label: "mw",
                rec: rec.clone(),
            })
            .build();
        host.add_before_hook(
            HookScope::Tool("t".into()),
            Arc::new(RecordBefore {
                label: "tool-before",
                rec: rec.clone(),
                reject: None,
            }),
        );
        host.add_after_hook(
            HookScope::Tool("t".into()),
            Arc::new(RecordAfter {
                label: "tool-after",
                rec: rec.clone(),
            }),
        );
        host.register_tool(recording_tool("t", None, Duration::ZERO, rec.clone()))
            .unwrap();
        host
    }

    #[tokio::test]
    async fn p1_five_stages_run_in_order() {
        let rec = Recorder::default();
        let host = host_with_stages(&rec, None);
        let out = host
            .invoke_tool(
                CallContext::new(),
                "t",
                Arguments::parse(r#"{"a":1}"#).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(out.llm_text(), r#"{"a":1}"#);
        assert_eq!(
            rec.events(),
            [
                "tool-before:t",
                "global-before:t",
                "mw:enter",
                "start:t",
                "finish:t",
                "mw:exit",
                "global-after:t:ok",
                "tool-after:t:ok",
            ]
        );
    }

    #[tokio::test]
    async fn p1_tool_hooks_apply_only_to_their_tool() {
        let rec = Recorder::default();
        let host = host_with_stages(&rec, None);
        host.register_tool(recording_tool("u", None, Duration::ZERO, rec.clone()))
            .unwrap();
        host.invoke_tool(CallContext::new(), "u", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
        assert_eq!(
            rec.events(),
            [
                "global-before:u",
                "mw:enter",
                "start:u",
                "finish:u",
                "mw:exit",
                "global-after:u:ok"
            ]
        );
    }

    #[tokio::test]
    async fn p2_before_hook_error_rejects_call() {
        let rec = Recorder::default();
        let host = host_with_stages(&rec, Some("writes are disabled"));
        let err = host
            .invoke_tool(CallContext::new(), "t", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::Rejected {
                hook: "global-before".into(),
                reason: "writes are disabled".into()
            }
        );
        // The tool and middleware never ran; the after hooks saw the error.
        assert_eq!(
            rec.events(),
            [
                "tool-before:t",
                "global-before:t",
                "global-after:t:rejected",
                "tool-after:t:rejected",
            ]
        );
    }

    #[tokio::test]
    async fn p2_after_hooks_receive_the_tools_error() {
        let rec = Recorder::default();
        let host = ToolHost::builder()
            .after_hook(
                HookScope::Global,
                RecordAfter {
                    label: "after",
                    rec: rec.clone(),
                },
            )
            .build();
        host.register_tool(FnTool::arc(
            ToolSpec::new("boom", "fails", json!({"type": "object"})),
            |_, _| async { Err(ToolError::failed("disk full")) },
        ))
        .unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "boom", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::failed("disk full"));
        assert_eq!(rec.events(), ["after:boom:failed"]);
    }

    #[tokio::test]
    async fn p3_unknown_tool_is_a_failure_of_its_own_kind() {
        let rec = Recorder::default();
        let host = host_with_stages(&rec, None);
        let err = host
            .invoke_tool(CallContext::new(), "nope", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::UnknownTool {
                name: "nope".into()
            }
        );
        assert!(
            rec.events().is_empty(),
            "no hook runs for a tool that does not exist"
        );
    }

    #[tokio::test]
    async fn p3_invalid_arguments_name_the_path_and_the_tool_does_not_run() {
        let rec = Recorder::default();
        let host = ToolHost::builder()
            .validate_arguments(true)
            .after_hook(
                HookScope::Global,
                RecordAfter {
                    label: "after",
                    rec: rec.clone(),
                },
            )
            .build();
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = ran.clone();
        host.register_tool(FnTool::arc(
            ToolSpec::new(
                "add",
                "adds",
                json!({
                    "type": "object",
                    "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
                    "required": ["items"]
                }),
            ),
            move |_, _| {
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
                async { Ok(ToolOutput::text("")) }
            },
        ))
        .unwrap();
        let err = host
            .invoke_tool(
                CallContext::new(),
                "add",
                Arguments::parse(r#"{"items": [1, "two"]}"#).unwrap(),
            )
            .await
            .unwrap_err();
        match &err {
            ToolError::InvalidArguments { path, message } => {
                assert_eq!(path, "/items/1");
                assert!(message.contains("integer"), "{message}");
            }
            other => panic!("expected invalid arguments, got {other:?}"),
        }
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(rec.events(), ["after:add:invalid_arguments"]);

        let missing = host
            .invoke_tool(CallContext::new(), "add", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(&missing, ToolError::InvalidArguments { message, .. } if message.contains("items")),
            "{missing}"
        );
    }

    #[tokio::test]
    async fn t2_validation_is_a_switch() {
        let host = ToolHost::new();
        host.register_tool(FnTool::arc(
            ToolSpec::new(
                "n",
                "takes an integer",
                json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            ),
            |_, args| async move { Ok(ToolOutput::text(args.as_str())) },
        ))
        .unwrap();
        // Off: the tool receives the arguments as they are.
        let out = host
            .invoke_tool(
                CallContext::new(),
                "n",
                Arguments::parse(r#"{"n":"x"}"#).unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(out.llm_text(), r#"{"n":"x"}"#);
    }

    #[tokio::test]
    async fn p1_a_panicking_tool_fails_only_its_call() {
        let host = ToolHost::new();
        host.register_tool(FnTool::arc(
            ToolSpec::new("panics", "", json!({"type": "object"})),
            |_, _| async { panic!("kaboom") },
        ))
        .unwrap();
        host.register_tool(recording_tool(
            "ok",
            None,
            Duration::ZERO,
            Recorder::default(),
        ))
        .unwrap();
        let err = host
            .invoke_tool(
                CallContext::new(),
                "panics",
                Arguments::parse("{}").unwrap(),
            )
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::failed("tool panicked: kaboom"));
        assert!(
            host.invoke_tool(CallContext::new(), "ok", Arguments::parse("{}").unwrap())
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn p1_cancelled_call_reports_cancelled() {
        let host = ToolHost::new();
        host.register_tool(FnTool::arc(
            ToolSpec::new("slow", "", json!({"type": "object"})),
            |_, _| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(ToolOutput::text("late"))
            },
        ))
        .unwrap();
        let ctx = CallContext::new();
        let token = ctx.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            token.cancel();
        });
        let err = host
            .invoke_tool(ctx, "slow", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled);
    }

    #[tokio::test]
    async fn n2_a_declared_output_schema_is_checked_on_every_result() {
        let schema = json!({
            "type": "object",
            "properties": {"temperature": {"type": "number"}},
            "required": ["temperature"]
        });
        let host = ToolHost::new();
        let tool = |name: &str, out: ToolOutput| {
            FnTool::arc(
                ToolSpec::new(name, "t", json!({"type": "object"})).output_schema(schema.clone()),
                move |_, _| {
                    let out = out.clone();
                    async move { Ok(out) }
                },
            )
        };
        host.register_tool(tool(
            "good",
            ToolOutput::structured(json!({"temperature": 22.5})),
        ))
        .unwrap();
        host.register_tool(tool(
            "wrong",
            ToolOutput::structured(json!({"temperature": "hot"})),
        ))
        .unwrap();
        host.register_tool(tool("plain", ToolOutput::text("22.5")))
            .unwrap();
        let call = |name: &'static str| {
            let host = host.clone();
            async move {
                host.invoke_tool(CallContext::new(), name, Arguments::parse("{}").unwrap())
                    .await
            }
        };
        let good = call("good").await.unwrap();
        assert_eq!(good.structured_value(), Some(&json!({"temperature": 22.5})));
        let wrong = call("wrong").await.unwrap_err();
        assert!(
            matches!(&wrong, ToolError::InvalidOutput { path, .. } if path == "/temperature"),
            "{wrong:?}"
        );
        assert!(
            wrong
                .to_string()
                .contains("output schema at `/temperature`"),
            "{wrong}"
        );
        let plain = call("plain").await.unwrap_err();
        assert_eq!(plain.kind(), crate::ErrorKind::InvalidOutput);
        assert!(
            plain.to_string().contains("no structured content"),
            "{plain}"
        );

        let bad = FnTool::arc(
            ToolSpec::new("bad", "t", json!({"type": "object"}))
                .output_schema(json!({"type": "no-such-type"})),
            |_, _| async { Ok(ToolOutput::text("")) },
        );
        let err = host.register_tool(bad).unwrap_err();
        assert!(
            crate::report(&err).starts_with("the output schema of `bad` does not compile"),
            "{err}"
        );
    }
}

/// The deadline covers every step of a call (rule C1), and schema work
/// stays off the async workers (rule C9).
#[cfg(test)]
mod containment_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::hook::FnBeforeHook;
    use crate::schema::cost::tests_support::doubling;
    use crate::tool::{FnTool, ToolSpec};
    use crate::{RegistryError, SchemaError, ToolHost};

    /// Never answers.
    struct Silent;

    #[async_trait]
    impl crate::Approver for Silent {
        async fn approve(&self, _request: &ApprovalRequest) -> Approval {
            std::future::pending().await
        }
    }

    fn echo(schema: serde_json::Value) -> Arc<dyn Tool> {
        FnTool::arc(
            ToolSpec::new("echo", "echoes", schema),
            |_ctx, args| async move { Ok(ToolOutput::text(args.as_str())) },
        )
    }

    // Each case has one short timer and one two minutes away: which one
    // ended the wait does not depend on the machine's speed.
    #[tokio::test]
    async fn c1_the_approval_wait_ends_at_the_calls_deadline_and_says_so() {
        let host = ToolHost::builder()
            .approver(Arc::new(Silent))
            .approval_timeout(Duration::from_secs(120))
            .call_timeout(Duration::from_millis(100))
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("gate", |_| Decision::Ask {
                    reason: "a person decides".into(),
                }),
            )
            .build();
        host.register_tool(echo(json!({"type": "object"}))).unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "echo", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        match err {
            ToolError::Rejected { hook, reason } => {
                assert_eq!(hook, "gate");
                assert!(
                    reason.contains("the call's deadline ended the wait"),
                    "{reason}"
                );
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        // Without a call deadline the approval timeout ends it, and says so.
        let host = ToolHost::builder()
            .approver(Arc::new(Silent))
            .approval_timeout(Duration::from_millis(100))
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("gate", |_| Decision::Ask { reason: "x".into() }),
            )
            .build();
        host.register_tool(echo(json!({"type": "object"}))).unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "echo", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("the approval timeout ended the wait"),
            "{err}"
        );
    }

    /// Defers every question to the caller.
    struct Defers;

    #[async_trait]
    impl crate::Approver for Defers {
        async fn approve(&self, _request: &ApprovalRequest) -> Approval {
            Approval::Deferred
        }
    }

    #[tokio::test]
    async fn n6_a_deferred_approval_ends_the_call_with_the_question_and_runs_nothing() {
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = ran.clone();
        let host = ToolHost::builder()
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("gate", |_| Decision::Ask {
                    reason: "a person decides".into(),
                }),
            )
            .build();
        host.register_tool(FnTool::arc(
            ToolSpec::new("echo", "echoes", json!({"type": "object"})),
            move |_ctx, _args| {
                seen.store(true, std::sync::atomic::Ordering::SeqCst);
                async { Ok(ToolOutput::text("ran")) }
            },
        ))
        .unwrap();
        let ctx = CallContext::new().with_approver(Arc::new(Defers));
        let err = host
            .invoke_tool(ctx, "echo", Arguments::parse(r#"{"a":1}"#).unwrap())
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::ApprovalRequired {
                hooks: "gate".into(),
                question: "Allow the call to `echo` with {\"a\":1}? `gate` asks: a person decides."
                    .into(),
            }
        );
        assert_eq!(err.kind().as_str(), "approval_required");
        assert!(!err.is_retryable());
        assert!(
            !ran.load(std::sync::atomic::Ordering::SeqCst),
            "the tool ran"
        );
    }

    #[tokio::test]
    async fn c9_a_schema_of_exponential_cost_is_refused_at_registration() {
        let host = ToolHost::new();
        for depth in [20, 30, 40, 60] {
            let err = host.register_tool(echo(doubling(depth))).unwrap_err();
            assert!(
                matches!(
                    err,
                    RegistryError::InvalidSchema {
                        source: SchemaError::Unbounded(_),
                        ..
                    }
                ),
                "{err}"
            );
            let tool = FnTool::arc(
                ToolSpec::new("out", "", json!({"type": "object"})).output_schema(doubling(depth)),
                |_ctx, _args| async move { Ok(ToolOutput::text("")) },
            );
            let err = host.register_tool(tool).unwrap_err();
            assert!(
                matches!(
                    err,
                    RegistryError::InvalidOutputSchema {
                        source: SchemaError::Unbounded(_),
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    /// A schema within the bounds whose validation of a large value still
    /// takes a long while: 400 alternatives for each of 100,000 items.
    fn costly() -> (serde_json::Value, String) {
        let alternatives: Vec<_> = (0..400)
            .map(|i| json!({"type": "object", "required": [format!("k{i}")]}))
            .collect();
        let schema = json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"anyOf": alternatives}}
        }});
        let mut items = vec![json!({"k399": 1}); 100_000];
        // The last item fits no alternative, so the value is invalid.
        items.push(json!({"none": 1}));
        (schema, json!({ "items": items }).to_string())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn c9_a_long_validation_leaves_the_only_worker_free_for_other_calls() {
        let host = ToolHost::builder().validate_arguments(true).build();
        let (schema, args) = costly();
        host.register_tool(echo(schema)).unwrap();
        host.register_tool(FnTool::arc(
            ToolSpec::new("quick", "", json!({"type": "object"})),
            |_ctx, _args| async move { Ok(ToolOutput::text("done")) },
        ))
        .unwrap();
        let slow = {
            let host = host.clone();
            tokio::spawn(async move {
                host.invoke_tool(CallContext::new(), "echo", Arguments::parse(&args).unwrap())
                    .await
            })
        };
        // Let the slow call start its validation.
        tokio::task::yield_now().await;
        let quick = host
            .invoke_tool(CallContext::new(), "quick", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
        assert_eq!(quick.llm_text(), "done");
        // Had validation run on the runtime's one worker, the slow call
        // would have finished before the quick one could start.
        assert!(!slow.is_finished());
        let err = slow.await.unwrap().unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { ref path, .. } if path == "/items/100000"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn c9_a_check_past_the_work_bound_is_refused_not_run() {
        // 3,000 subschemas applied to every item: 2 MB of items would be
        // minutes of CPU on a thread no deadline stops.
        let all: Vec<_> = (0..3_000).map(|i| json!({"minimum": -i})).collect();
        let per_item = json!({"type": "array", "items": {"allOf": all}});
        let host = ToolHost::builder().validate_arguments(true).build();
        let items = vec![json!(0); 1 << 20];
        let schema = json!({"type": "object", "properties": {"items": per_item}});
        let result = ToolOutput::structured(json!({ "items": items.clone() }));
        host.register_tool(FnTool::arc(
            ToolSpec::new("out", "", json!({"type": "object"})).output_schema(schema.clone()),
            move |_ctx, _args| {
                let result = result.clone();
                async move { Ok(result) }
            },
        ))
        .unwrap();
        host.register_tool(echo(schema)).unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "out", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidOutput { message, .. }
                if message.starts_with("the result of ") && message.contains("is too large to check against this tool's schema of 3")),
            "{err:?}"
        );
        let args = json!({ "items": items }).to_string();
        let err = host
            .invoke_tool(CallContext::new(), "echo", Arguments::parse(&args).unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidArguments { message, .. }
                if message.starts_with("the arguments of ") && message.contains("(at most 1073741824 bytes × subschemas)")),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn c9_a_long_validation_ends_at_the_calls_deadline() {
        let host = ToolHost::builder()
            .validate_arguments(true)
            .call_timeout(Duration::from_millis(1))
            .build();
        let (schema, args) = costly();
        host.register_tool(echo(schema)).unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "echo", Arguments::parse(&args).unwrap())
            .await
            .unwrap_err();
        // Inline validation would have run to its end and named the bad item.
        assert_eq!(err.kind(), crate::ErrorKind::Timeout, "{err:?}");
    }
}

/// Rule R2: what a call's caller gets when its ends race.
#[cfg(test)]
mod settle_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::ToolHost;
    use crate::tool::ToolSpec;

    const RAN: Duration = Duration::from_millis(7);

    fn ends(caller_cancelled: bool, deadline_passed: bool) -> Ends {
        Ends {
            caller_cancelled,
            deadline_passed,
        }
    }

    fn timeout(plugin: Option<&str>) -> ToolError {
        ToolError::Timeout {
            after: RAN,
            plugin: plugin.map(str::to_owned),
        }
    }

    #[test]
    fn r2_a_finished_result_stands_even_as_the_deadline_passes() {
        let out = settle(
            Ok(ToolOutput::text("done")),
            ends(true, true),
            Some("p"),
            RAN,
        );
        assert_eq!(out.unwrap().llm_text(), "done");
    }

    #[test]
    fn r2_the_callers_cancellation_wins_over_the_deadline() {
        for result in [
            Err(timeout(Some("p"))),
            Err(ToolError::failed("broken pipe")),
        ] {
            let err = settle(result, ends(true, true), Some("p"), RAN).unwrap_err();
            assert!(matches!(err, ToolError::Cancelled), "{err:?}");
        }
    }

    #[test]
    fn r2_a_passed_deadline_is_a_timeout_naming_the_plugin_whoever_noticed() {
        // The executor's timer (no plugin named), the sandbox's interrupt
        // (named), and a guest that failed some other way as it was stopped.
        for result in [
            Err(timeout(None)),
            Err(timeout(Some("slow"))),
            Err(ToolError::failed("trapped")),
            Err(ToolError::Cancelled),
        ] {
            let err = settle(result, ends(false, true), Some("slow"), RAN).unwrap_err();
            assert!(
                matches!(&err, ToolError::Timeout { plugin: Some(p), .. } if p == "slow"),
                "{err:?}"
            );
        }
        // A native tool names no plugin.
        let err = settle(Err(timeout(None)), ends(false, true), None, RAN).unwrap_err();
        assert!(
            matches!(err, ToolError::Timeout { plugin: None, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn r2_before_the_deadline_the_tools_own_error_stands() {
        let err = settle(
            Err(ToolError::failed("no such city")),
            ends(false, false),
            Some("weather"),
            RAN,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "no such city");
    }

    /// A tool in a plugin that never answers.
    struct Stuck(ToolSpec);

    #[async_trait]
    impl Tool for Stuck {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn plugin(&self) -> Option<&str> {
            Some("stuck-plugin")
        }
        async fn call(&self, _ctx: CallContext, _args: Arguments) -> Result<ToolOutput, ToolError> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn r2_the_pipelines_timer_names_the_plugin_too() {
        let host = ToolHost::builder()
            .call_timeout(Duration::from_millis(50))
            .build();
        host.register_tool(Arc::new(Stuck(ToolSpec::new(
            "stuck",
            "never answers",
            json!({"type": "object"}),
        ))))
        .unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "stuck", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Timeout { plugin: Some(p), .. } if p == "stuck-plugin"),
            "{err:?}"
        );
        assert!(err.to_string().contains("stuck-plugin"), "{err}");
    }

    /// A tool that says it ends by its deadline and then answers `late`
    /// after it, or never (`late` of `None`), unless the deadline is
    /// enforced elsewhere.
    struct SelfTimed(ToolSpec, Option<Duration>);

    #[async_trait]
    impl Tool for SelfTimed {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        fn plugin(&self) -> Option<&str> {
            Some("self-timed")
        }
        fn ends_by_deadline(&self) -> bool {
            true
        }
        async fn call(&self, ctx: CallContext, _args: Arguments) -> Result<ToolOutput, ToolError> {
            let Some(late) = self.1 else {
                return std::future::pending().await;
            };
            if let Some(deadline) = ctx.deadline() {
                tokio::time::sleep_until(deadline + late).await;
            }
            Ok(ToolOutput::text("whole, but late"))
        }
    }

    #[tokio::test]
    async fn p4_a_tool_that_ends_by_its_deadline_is_not_timed_again_and_is_still_cancelled() {
        let host = ToolHost::builder()
            .call_timeout(Duration::from_millis(20))
            .build();
        let spec = |name: &str| ToolSpec::new(name, "", json!({"type": "object"}));
        host.register_tool(Arc::new(SelfTimed(
            spec("late"),
            Some(Duration::from_millis(30)),
        )))
        .unwrap();
        host.register_tool(Arc::new(SelfTimed(spec("never"), None)))
            .unwrap();
        // Its word is taken: no timer of the executor cuts it off, so the
        // result it finishes stands (what a plugin's tool relies on: the
        // sandbox stops it instead).
        let out = host
            .invoke_tool(CallContext::new(), "late", Arguments::parse("{}").unwrap())
            .await
            .unwrap();
        assert_eq!(out, ToolOutput::text("whole, but late"));
        // The caller's cancellation still drops it.
        let ctx = CallContext::new();
        let token = ctx.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            token.cancel();
        });
        // A bound far looser than the 5 ms expected, only to catch a hang.
        let never = host.invoke_tool(ctx, "never", Arguments::parse("{}").unwrap());
        let err = tokio::time::timeout(Duration::from_secs(30), never)
            .await
            .expect("the cancellation ends the call")
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled);
        // A token cancelled before the call runs nothing.
        let ctx = CallContext::new();
        ctx.cancellation().cancel();
        let err = host
            .invoke_tool(ctx, "late", Arguments::parse("{}").unwrap())
            .await
            .unwrap_err();
        assert_eq!(err, ToolError::Cancelled);
    }
}

/// Rule O4: the declarative rules judge every call on its final arguments.
#[cfg(test)]
mod rules_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;
    use crate::ToolHost;
    use crate::hook::FnBeforeHook;
    use crate::rules::{Condition, Rule, RuleDecision, ToolPattern};
    use crate::tool::{FnTool, ToolHints, ToolSpec};

    fn rule(tool: &str, decision: RuleDecision) -> Rule {
        Rule::new(ToolPattern::new(tool).unwrap(), decision)
    }

    /// A tool that counts its runs.
    fn counting(
        name: &str,
        runs: &Arc<AtomicUsize>,
    ) -> FnTool<
        impl Fn(CallContext, Arguments) -> futures::future::Ready<Result<ToolOutput, ToolError>>
        + Send
        + Sync
        + 'static,
    > {
        let runs = runs.clone();
        FnTool::new(
            ToolSpec::new(name, "", json!({"type": "object"})),
            move |_ctx, args: Arguments| {
                runs.fetch_add(1, Ordering::SeqCst);
                futures::future::ready(Ok(ToolOutput::text(args.as_str())))
            },
        )
    }

    /// Answers every request as told, and keeps what it was asked.
    struct Recording {
        answer: Approval,
        asked: Mutex<Vec<ApprovalRequest>>,
    }

    #[async_trait]
    impl crate::Approver for Recording {
        async fn approve(&self, request: &ApprovalRequest) -> Approval {
            self.asked.lock().unwrap().push(request.clone());
            self.answer.clone()
        }
    }

    fn recording(answer: Approval) -> Arc<Recording> {
        Arc::new(Recording {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn args(v: serde_json::Value) -> Arguments {
        Arguments::from_value(&v).unwrap()
    }

    #[tokio::test]
    async fn o4_rules_judge_arguments_after_a_rewriting_hook() {
        let deny_secrets = RuleSet::new(vec![
            rule("write", RuleDecision::Deny)
                .when(Condition::glob("/path", "secrets/**").unwrap())
                .reason("secrets are not written"),
        ]);
        // A hook that moves every path under secrets/: the rule sees the
        // rewritten path, not the one the caller sent.
        let into_secrets = FnBeforeHook::deciding("into-secrets", |call| {
            let mut v = call.arguments.to_value();
            v["path"] = format!("secrets/{}", v["path"].as_str().unwrap_or("")).into();
            Decision::Rewrite(Arguments::from_value(&v).unwrap())
        });
        let runs = Arc::new(AtomicUsize::new(0));
        let host = ToolHost::builder()
            .rules(deny_secrets.clone())
            .before_hook(HookScope::Global, into_secrets)
            .build();
        host.register_tool(Arc::new(counting("write", &runs)))
            .unwrap();
        let err = host
            .invoke_tool(
                CallContext::new(),
                "write",
                args(json!({"path": "notes.md"})),
            )
            .await
            .unwrap_err();
        assert_eq!(
            err,
            ToolError::Denied {
                rule: "rules[0]".into(),
                reason: "secrets are not written".into()
            }
        );
        assert_eq!(err.kind().as_str(), "denied");
        assert_eq!(runs.load(Ordering::SeqCst), 0, "the tool ran");

        // And the other way: a hook that moves a path out of secrets/ is
        // judged on where the call will really write.
        let out_of_secrets = FnBeforeHook::deciding("out-of-secrets", |call| {
            let mut v = call.arguments.to_value();
            let path = v["path"]
                .as_str()
                .unwrap_or("")
                .replace("secrets/", "public/");
            v["path"] = path.into();
            Decision::Rewrite(Arguments::from_value(&v).unwrap())
        });
        let host = ToolHost::builder()
            .rules(deny_secrets)
            .before_hook(HookScope::Tool("write".into()), out_of_secrets)
            .build();
        host.register_tool(Arc::new(counting("write", &runs)))
            .unwrap();
        let out = host
            .invoke_tool(
                CallContext::new(),
                "write",
                args(json!({"path": "secrets/a"})),
            )
            .await
            .unwrap();
        assert_eq!(out.llm_text(), r#"{"path":"public/a"}"#);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn o4_a_denial_comes_before_any_question_and_names_the_rule() {
        let approver = recording(Approval::Approved);
        let runs = Arc::new(AtomicUsize::new(0));
        let host = ToolHost::builder()
            .approver(approver.clone())
            .rules(RuleSet::new(vec![
                rule("*", RuleDecision::Ask),
                rule("shell", RuleDecision::Deny)
                    .when(Condition::regex("/command", r"\brm\b").unwrap()),
            ]))
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("gate", |_| Decision::ask("a hook asks too")),
            )
            .build();
        host.register_tool(Arc::new(counting("shell", &runs)))
            .unwrap();
        let err = host
            .invoke_tool(
                CallContext::new(),
                "shell",
                args(json!({"command": "rm -r /"})),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Denied { rule, .. } if rule == "rules[1]"),
            "{err:?}"
        );
        assert!(err.to_string().starts_with("denied by rules[1]: the call matches the rule `deny tool \"shell\" where /command matches regex"), "{err}");
        assert!(
            approver.asked.lock().unwrap().is_empty(),
            "nobody is asked about a denied call"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn o4_an_ask_goes_to_the_approver_once_with_the_hooks_asks() {
        let runs = Arc::new(AtomicUsize::new(0));
        let build = |approver: Arc<Recording>| {
            let host = ToolHost::builder()
                .approver(approver)
                .rules(RuleSet::new(vec![
                    rule("shell", RuleDecision::Ask).reason("runs a command"),
                    rule("calc", RuleDecision::Allow),
                ]))
                .before_hook(
                    HookScope::Global,
                    FnBeforeHook::deciding("gate", |call| {
                        if call.tool() == "shell" {
                            Decision::ask("a hook asks too")
                        } else {
                            Decision::Allow
                        }
                    }),
                )
                .build();
            host.register_tool(Arc::new(counting("shell", &runs)))
                .unwrap();
            host.register_tool(Arc::new(counting("calc", &runs)))
                .unwrap();
            host
        };
        let approver = recording(Approval::Approved);
        let host = build(approver.clone());
        host.invoke_tool(CallContext::new(), "shell", args(json!({"command": "ls"})))
            .await
            .unwrap();
        host.invoke_tool(CallContext::new(), "calc", args(json!({})))
            .await
            .unwrap();
        {
            let asked = approver.asked.lock().unwrap();
            assert_eq!(asked.len(), 1, "asked once, for shell only");
            assert_eq!(asked[0].hooks(), "gate, rules[0]");
            assert!(
                asked[0]
                    .question(100)
                    .ends_with("`rules[0]` asks: runs a command."),
                "{}",
                asked[0].question(100)
            );
        }
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        // A denial at the approver refuses it, as a hook's ask would be.
        let host = build(recording(Approval::denied("declined")));
        let err = host
            .invoke_tool(CallContext::new(), "shell", args(json!({"command": "ls"})))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Rejected { hook, reason } if hook == "gate, rules[0]" && reason.contains("declined")),
            "{err:?}"
        );
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn o4_an_allow_rule_overrules_no_hook() {
        let host = ToolHost::builder()
            .rules(RuleSet::new(vec![rule("*", RuleDecision::Allow)]))
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("no", |_| Decision::reject("never")),
            )
            .build();
        let runs = Arc::new(AtomicUsize::new(0));
        host.register_tool(Arc::new(counting("t", &runs))).unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "t", args(json!({})))
            .await
            .unwrap_err();
        assert!(matches!(err, ToolError::Rejected { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn o4_a_native_tools_hints_are_defaults_when_asked_for() {
        let runs = Arc::new(AtomicUsize::new(0));
        let approver = recording(Approval::denied("no"));
        let host = ToolHost::builder()
            .approver(approver.clone())
            .rules(RuleSet::default().annotation_defaults(true))
            .build();
        host.register_tool(Arc::new(
            counting("rm", &runs).with_hints(ToolHints::default().destructive(true)),
        ))
        .unwrap();
        host.register_tool(Arc::new(
            counting("ls", &runs).with_hints(ToolHints::default().read_only(true)),
        ))
        .unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "rm", args(json!({})))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ToolError::Rejected { hook, .. } if hook == "destructiveHint"),
            "{err:?}"
        );
        host.invoke_tool(CallContext::new(), "ls", args(json!({})))
            .await
            .unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let explained = host.explain("rm", &args(json!({}))).unwrap();
        assert_eq!(explained.judgement.decision, RuleDecision::Ask);
        assert!(host.explain("nope", &args(json!({}))).is_none());
    }
}
