//! Hooks (rules P2, P7, P8): the [`BeforeHook`] and [`AfterHook`] traits
//! and their closure forms, where a hook applies ([`HookScope`]), what a
//! hook sees of a call ([`CallInfo`], which middleware sees too), what it
//! decides ([`Decision`], [`AfterDecision`]), and the journal of what hooks
//! changed, which the audit trail reads.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;

use crate::error::{Rejection, ToolError};
use crate::output::ToolOutput;
use crate::tool::{Arguments, CallId, ToolSpec};

/// What a before hook decides about a call (rule P7).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Decision {
    /// The call goes on, unchanged.
    Allow,
    /// The call is refused; the tool does not run.
    Reject(Rejection),
    /// The call goes on with these arguments instead. They are checked
    /// against the tool's schema at once; arguments that do not fit refuse
    /// the call, naming the hook. Later hooks see the new arguments.
    Rewrite(Arguments),
    /// The call goes on only if a person approves it. The question is put
    /// once, after every before hook has run, with the arguments as the
    /// hooks left them; no answer within the approval timeout is a denial.
    Ask {
        /// Why a person is asked, for that person.
        reason: String,
    },
}

impl Decision {
    /// Refuses the call with `reason`.
    pub fn reject(reason: impl Into<String>) -> Self {
        Self::Reject(Rejection::new(reason))
    }

    /// Asks a person, saying `reason`.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::Ask {
            reason: reason.into(),
        }
    }
}

/// A veto-only hook's answer: `Ok` allows, `Err` rejects.
impl From<Result<(), Rejection>> for Decision {
    fn from(r: Result<(), Rejection>) -> Self {
        match r {
            Ok(()) => Self::Allow,
            Err(rejection) => Self::Reject(rejection),
        }
    }
}

impl From<Rejection> for Decision {
    fn from(r: Rejection) -> Self {
        Self::Reject(r)
    }
}

/// What an after hook decides about a call's outcome (rule P8).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum AfterDecision {
    /// The outcome stays as it is.
    Keep,
    /// The outcome is replaced: a redacted result, or an error turned into a
    /// message for the model. Later after hooks, the audit trail and the
    /// caller see the replacement. A successful replacement must fit the
    /// tool's output schema, if it declares one.
    Replace(Result<ToolOutput, ToolError>),
}

/// An observing hook's answer: nothing changes.
impl From<()> for AfterDecision {
    fn from((): ()) -> Self {
        Self::Keep
    }
}

/// What a hook changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeKind {
    /// A before hook rewrote the arguments.
    RewroteArguments,
    /// An after hook replaced the outcome.
    ReplacedOutcome,
}

impl ChangeKind {
    /// A stable name for logs: `rewrote_arguments`, `replaced_outcome`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RewroteArguments => "rewrote_arguments",
            Self::ReplacedOutcome => "replaced_outcome",
        }
    }
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One change a hook made to a call, as the audit trail records it: who
/// and how big, never the payloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookChange {
    /// The hook's name.
    pub hook: String,
    /// What it changed.
    pub kind: ChangeKind,
    /// Size in bytes before the change: the arguments' JSON text, or the
    /// outcome's output bytes (an error's message).
    pub bytes_before: usize,
    /// Size in bytes after the change, counted the same way.
    pub bytes_after: usize,
}

/// The size an outcome counts for in a [`HookChange`].
pub(crate) fn outcome_bytes(outcome: &Result<ToolOutput, ToolError>) -> usize {
    match outcome {
        Ok(output) => output.size_bytes(),
        Err(err) => err.to_string().len(),
    }
}

/// A call as it ended: its final outcome and every change hooks made, in
/// order. Given to the callbacks of [`Journal::when_finished`].
pub struct Finished<'a> {
    /// The outcome the caller receives (before any artifact offload).
    pub outcome: &'a Result<ToolOutput, ToolError>,
    /// What hooks changed, in the order they changed it.
    pub changes: &'a [HookChange],
}

type OnFinish = Box<dyn FnOnce(&Finished<'_>) + Send>;

#[derive(Default)]
struct JournalInner {
    changes: Vec<HookChange>,
    on_finish: Vec<OnFinish>,
}

/// What happened to one call on its way through the pipeline, shared by
/// everything that handles it: the changes hooks made, and callbacks to run
/// once the call has finished, after every after hook. Cloning shares it.
///
/// Made on first use: most calls have no hook that changes them and no
/// callback, and then their journal costs neither an allocation nor a lock.
#[derive(Default)]
pub struct Journal(OnceLock<Arc<Mutex<JournalInner>>>);

impl Clone for Journal {
    /// The same journal: what either records, both see.
    fn clone(&self) -> Self {
        Self(OnceLock::from(self.shared().clone()))
    }
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("changes", &self.changes())
            .finish_non_exhaustive()
    }
}

impl Journal {
    fn shared(&self) -> &Arc<Mutex<JournalInner>> {
        self.0.get_or_init(Arc::default)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, JournalInner> {
        // The journal holds plain data; a panic elsewhere leaves it usable.
        self.shared().lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every change so far, in order.
    pub fn changes(&self) -> Vec<HookChange> {
        match self.0.get() {
            Some(_) => self.lock().changes.clone(),
            None => Vec::new(),
        }
    }

    /// Runs `f` once the call has finished, after every after hook, with the
    /// final outcome and every change. Callbacks run in the order they were
    /// added, on the call's task; keep them quick. If the call is refused
    /// before the middleware runs, callbacks added by middleware are never
    /// added.
    pub fn when_finished(&self, f: impl FnOnce(&Finished<'_>) + Send + 'static) {
        self.lock().on_finish.push(Box::new(f));
    }

    pub(crate) fn record(&self, change: HookChange) {
        tracing::info!(
            target: "toolhost::call",
            hook = %change.hook,
            change = change.kind.as_str(),
            bytes_before = change.bytes_before,
            bytes_after = change.bytes_after,
            "a hook changed the call",
        );
        self.lock().changes.push(change);
    }

    /// Runs the callbacks, once.
    pub(crate) fn finish(&self, outcome: &Result<ToolOutput, ToolError>) {
        if self.0.get().is_none() {
            // Nothing was recorded and nobody waits for the end.
            return;
        }
        let (changes, callbacks) = {
            let mut inner = self.lock();
            (inner.changes.clone(), std::mem::take(&mut inner.on_finish))
        };
        let finished = Finished {
            outcome,
            changes: &changes,
        };
        for f in callbacks {
            f(&finished);
        }
    }
}

/// What hooks and middleware know about a call.
#[derive(Debug, Clone)]
pub struct CallInfo {
    /// The descriptor of the tool being called.
    pub spec: Arc<ToolSpec>,
    /// The call's arguments, as the before hooks so far have left them.
    pub arguments: Arguments,
    /// The call's id.
    pub call_id: CallId,
    journal: Journal,
}

impl CallInfo {
    /// Information about a call to the tool described by `spec`, with a
    /// fresh journal.
    pub fn new(spec: Arc<ToolSpec>, arguments: Arguments, call_id: CallId) -> Self {
        Self {
            spec,
            arguments,
            call_id,
            journal: Journal::default(),
        }
    }

    /// The name of the tool being called.
    pub fn tool(&self) -> &str {
        &self.spec.name
    }

    /// The call's journal: what hooks changed so far, and callbacks for
    /// when the call has finished (the audit middleware records there).
    pub fn journal(&self) -> &Journal {
        &self.journal
    }
}

/// Runs before a tool and decides about the call (rules P2, P7): allow,
/// reject, rewrite its arguments, or ask a person.
#[async_trait]
pub trait BeforeHook: Send + Sync {
    /// The hook's name, reported in [`ToolError::Rejected`] and in the
    /// audit trail.
    fn name(&self) -> &str;

    /// Decides about the call. `call.arguments` are the arguments as the
    /// hooks before this one left them.
    async fn before(&self, call: &CallInfo) -> Decision;
}

/// Runs after a call with its outcome, success or error (rules P2, P8), and
/// may replace that outcome. `outcome` is the outcome as the after hooks
/// before this one left it.
#[async_trait]
pub trait AfterHook: Send + Sync {
    /// The hook's name, reported in the audit trail.
    fn name(&self) -> &str;

    /// Observes the call and its outcome, and keeps or replaces it.
    async fn after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> AfterDecision;
}

type BeforeFn = dyn Fn(&CallInfo) -> Decision + Send + Sync;

/// A before hook made from a name and a synchronous closure.
pub struct FnBeforeHook {
    name: String,
    func: Box<BeforeFn>,
}

impl FnBeforeHook {
    /// A veto-only hook called `name`: `func` returns `Ok(())` to allow the
    /// call and `Err` to reject it.
    pub fn new<F>(name: impl Into<String>, func: F) -> Self
    where
        F: Fn(&CallInfo) -> Result<(), Rejection> + Send + Sync + 'static,
    {
        Self::deciding(name, move |call| func(call).into())
    }

    /// A hook called `name` whose closure returns any [`Decision`].
    pub fn deciding<F>(name: impl Into<String>, func: F) -> Self
    where
        F: Fn(&CallInfo) -> Decision + Send + Sync + 'static,
    {
        Self {
            name: name.into(),
            func: Box::new(func),
        }
    }
}

#[async_trait]
impl BeforeHook for FnBeforeHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn before(&self, call: &CallInfo) -> Decision {
        (self.func)(call)
    }
}

type AfterFn = dyn Fn(&CallInfo, &Result<ToolOutput, ToolError>) -> AfterDecision + Send + Sync;

/// An after hook made from a name and a synchronous closure.
pub struct FnAfterHook {
    name: String,
    func: Box<AfterFn>,
}

impl FnAfterHook {
    /// An observing hook called `name` that runs `func`.
    pub fn new<F>(name: impl Into<String>, func: F) -> Self
    where
        F: Fn(&CallInfo, &Result<ToolOutput, ToolError>) + Send + Sync + 'static,
    {
        Self::deciding(name, move |call, outcome| {
            func(call, outcome);
            AfterDecision::Keep
        })
    }

    /// A hook called `name` whose closure may replace the outcome.
    pub fn deciding<F>(name: impl Into<String>, func: F) -> Self
    where
        F: Fn(&CallInfo, &Result<ToolOutput, ToolError>) -> AfterDecision + Send + Sync + 'static,
    {
        Self {
            name: name.into(),
            func: Box::new(func),
        }
    }
}

#[async_trait]
impl AfterHook for FnAfterHook {
    fn name(&self) -> &str {
        &self.name
    }

    async fn after(
        &self,
        call: &CallInfo,
        outcome: &Result<ToolOutput, ToolError>,
    ) -> AfterDecision {
        (self.func)(call, outcome)
    }
}

/// Where a hook applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HookScope {
    /// Every call.
    Global,
    /// Calls to the named tool only.
    Tool(String),
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex as StdMutex;
    use std::time::Duration;

    use async_trait::async_trait;
    use serde_json::json;

    use super::*;
    use crate::middleware::{Audit, AuditOutcome, AuditRecord, AuditSink, RedactKeys};
    use crate::tool::approval::{Approval, ApprovalRequest, ApproveAll, Approver};
    use crate::tool::{CallContext, FnTool, ToolSpec};
    use crate::{ErrorKind, ToolHost};

    /// A tool `write` that takes `{path: string, mode?: string}` and echoes
    /// its arguments.
    fn write_tool() -> Arc<dyn crate::Tool> {
        FnTool::arc(
            ToolSpec::new(
                "write",
                "writes",
                json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "mode": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": false
                }),
            ),
            |_, args| async move { Ok(ToolOutput::text(args.as_str())) },
        )
    }

    fn args(v: serde_json::Value) -> Arguments {
        Arguments::from_value(&v).unwrap()
    }

    /// Rewrites `path` by prefixing `prefix`.
    fn prefixer(name: &'static str, prefix: &'static str) -> FnBeforeHook {
        FnBeforeHook::deciding(name, move |call| {
            let mut v = call.arguments.to_value();
            let path = v["path"].as_str().unwrap_or_default().to_owned();
            v["path"] = json!(format!("{prefix}{path}"));
            Decision::Rewrite(Arguments::from_value(&v).unwrap())
        })
    }

    async fn call(host: &ToolHost, a: serde_json::Value) -> Result<ToolOutput, ToolError> {
        host.invoke_tool(CallContext::new(), "write", args(a)).await
    }

    #[test]
    fn p8_a_journal_cloned_before_anything_is_recorded_still_shares_it() {
        let journal = Journal::default();
        // Nothing recorded and nobody waiting: finishing it does nothing.
        journal.finish(&Ok(ToolOutput::text("x")));
        assert!(journal.changes().is_empty());
        let clone = journal.clone();
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let sink = seen.clone();
        clone.when_finished(move |f| sink.lock().unwrap().push(f.changes.len()));
        journal.record(HookChange {
            hook: "h".into(),
            kind: ChangeKind::RewroteArguments,
            bytes_before: 1,
            bytes_after: 2,
        });
        assert_eq!(clone.changes(), journal.changes());
        assert_eq!(clone.changes().len(), 1);
        // The callback added through the clone runs as the original ends.
        journal.finish(&Ok(ToolOutput::text("x")));
        assert_eq!(*seen.lock().unwrap(), [1]);
    }

    #[tokio::test]
    async fn p7_a_rewrite_is_validated_and_the_tool_runs_with_it() {
        let host = ToolHost::builder()
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("default-mode", |call| {
                    let mut v = call.arguments.to_value();
                    v["mode"] = json!("append");
                    Decision::Rewrite(Arguments::from_value(&v).unwrap())
                }),
            )
            .build();
        host.register_tool(write_tool()).unwrap();
        let out = call(&host, json!({"path": "a.txt"})).await.unwrap();
        assert_eq!(out.llm_text(), r#"{"mode":"append","path":"a.txt"}"#);
    }

    #[tokio::test]
    async fn p7_a_rewrite_that_fails_validation_rejects_the_call_and_names_the_hook() {
        // Validation of the model's arguments is off; the rewrite is still
        // checked, because a hook must not hand a tool what it cannot take.
        let ran = Arc::new(StdMutex::new(false));
        let host = ToolHost::builder()
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("breaks-it", |_| {
                    Decision::Rewrite(Arguments::from_value(&json!({"path": 7})).unwrap())
                }),
            )
            .build();
        let seen = ran.clone();
        host.register_tool(FnTool::arc(write_tool().spec().clone(), move |_, _| {
            let seen = seen.clone();
            async move {
                *seen.lock().unwrap() = true;
                Ok(ToolOutput::text("ran"))
            }
        }))
        .unwrap();
        let err = call(&host, json!({"path": "a.txt"})).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Rejected);
        let text = err.to_string();
        assert!(text.starts_with("rejected by hook `breaks-it`: its rewritten arguments do not fit the tool's schema: invalid arguments at `/path`"), "{text}");
        assert!(
            !*ran.lock().unwrap(),
            "the tool ran with arguments that do not fit"
        );
    }

    #[tokio::test]
    async fn p7_rewriting_hooks_run_in_order_each_seeing_the_previous_ones_arguments() {
        // Tool-specific hooks run before global ones, each in the order added.
        let host = ToolHost::builder()
            .before_hook(HookScope::Global, prefixer("global-1", "g1/"))
            .before_hook(HookScope::Global, prefixer("global-2", "g2/"))
            .before_hook(HookScope::Tool("write".into()), prefixer("tool", "t/"))
            .build();
        host.register_tool(write_tool()).unwrap();
        let out = call(&host, json!({"path": "x"})).await.unwrap();
        assert_eq!(out.llm_text(), r#"{"path":"g2/g1/t/x"}"#);
    }

    #[tokio::test]
    async fn p7_a_rejection_after_a_rewrite_still_stops_the_call() {
        let host = ToolHost::builder()
            .before_hook(HookScope::Global, prefixer("pin", "/project/"))
            .before_hook(
                HookScope::Global,
                FnBeforeHook::new("no-etc", |call| {
                    if call.arguments.as_str().contains("/etc") {
                        Err(crate::Rejection::new("not under /etc"))
                    } else {
                        Ok(())
                    }
                }),
            )
            .build();
        host.register_tool(write_tool()).unwrap();
        assert!(call(&host, json!({"path": "a"})).await.is_ok());
        let err = call(&host, json!({"path": "/etc/passwd"}))
            .await
            .unwrap_err();
        // The second hook saw the first one's rewrite.
        assert_eq!(err.to_string(), "rejected by hook `no-etc`: not under /etc");
    }

    /// Records each request and answers with `answer`.
    struct Scripted {
        answer: Option<Approval>,
        seen: StdMutex<Vec<ApprovalRequest>>,
    }

    impl Scripted {
        fn new(answer: Option<Approval>) -> Arc<Self> {
            Arc::new(Self {
                answer,
                seen: StdMutex::default(),
            })
        }
    }

    #[async_trait]
    impl Approver for Scripted {
        async fn approve(&self, request: &ApprovalRequest) -> Approval {
            self.seen.lock().unwrap().push(request.clone());
            match &self.answer {
                Some(a) => a.clone(),
                // Never answers: only the pipeline's timeout ends the wait.
                None => std::future::pending().await,
            }
        }
    }

    fn asking_host(approver: Option<Arc<dyn Approver>>, timeout: Duration) -> ToolHost {
        let mut b = ToolHost::builder()
            .approval_timeout(timeout)
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("confirm", |_| Decision::ask("it writes a file")),
            )
            .before_hook(HookScope::Global, prefixer("pin", "/p/"))
            .before_hook(
                HookScope::Global,
                FnBeforeHook::deciding("confirm-again", |_| Decision::ask("really")),
            );
        if let Some(a) = approver {
            b = b.approver(a);
        }
        let host = b.build();
        host.register_tool(write_tool()).unwrap();
        host
    }

    #[tokio::test]
    async fn p7_ask_approved_runs_once_with_the_final_arguments() {
        let approver = Scripted::new(Some(Approval::Approved));
        let host = asking_host(Some(approver.clone()), Duration::from_secs(60));
        let out = call(&host, json!({"path": "x"})).await.unwrap();
        assert_eq!(out.llm_text(), r#"{"path":"/p/x"}"#);
        let seen = approver.seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "one question for two asking hooks");
        assert_eq!(seen[0].tool, "write");
        assert_eq!(seen[0].arguments.as_str(), r#"{"path":"/p/x"}"#);
        assert_eq!(seen[0].hooks(), "confirm, confirm-again");
        assert_eq!(
            seen[0].question(200),
            "Allow the call to `write` with {\"path\":\"/p/x\"}? `confirm` asks: it writes a file. `confirm-again` asks: really."
        );
    }

    #[tokio::test]
    async fn p7_ask_denied_refuses_the_call_naming_the_hooks_and_the_reason() {
        let approver = Scripted::new(Some(Approval::denied("declined at the terminal")));
        let host = asking_host(Some(approver), Duration::from_secs(60));
        let err = call(&host, json!({"path": "x"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "rejected by hook `confirm, confirm-again`: approval was denied: declined at the terminal"
        );
    }

    #[tokio::test]
    async fn p7_ask_with_no_answer_in_time_is_a_denial() {
        let approver = Scripted::new(None);
        let host = asking_host(Some(approver.clone()), Duration::from_millis(50));
        let err = call(&host, json!({"path": "x"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "rejected by hook `confirm, confirm-again`: approval was asked for and no answer came within 0.05 s: the approval timeout ended the wait"
        );
        assert_eq!(approver.seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn p7_ask_without_an_approver_is_denied() {
        let host = asking_host(None, Duration::from_secs(60));
        let err = call(&host, json!({"path": "x"})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "rejected by hook `confirm, confirm-again`: approval was denied: no one can be asked to approve calls here"
        );
    }

    #[tokio::test]
    async fn p7_a_calls_own_approver_wins_over_the_hosts() {
        let host = asking_host(None, Duration::from_secs(60));
        let out = host
            .invoke_tool(
                CallContext::new().with_approver(Arc::new(ApproveAll)),
                "write",
                args(json!({"path": "x"})),
            )
            .await
            .unwrap();
        assert_eq!(out.llm_text(), r#"{"path":"/p/x"}"#);
    }

    #[tokio::test]
    async fn p7_a_cancelled_call_stops_waiting_for_approval() {
        let host = asking_host(Some(Scripted::new(None)), Duration::from_secs(600));
        let ctx = CallContext::new();
        let token = ctx.cancellation().clone();
        let waiting = tokio::spawn({
            let host = host.clone();
            async move {
                host.invoke_tool(ctx, "write", args(json!({"path": "x"})))
                    .await
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
        let err = tokio::time::timeout(Duration::from_secs(10), waiting)
            .await
            .expect("the wait ends when the call is cancelled")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Cancelled);
    }

    fn redact(name: &'static str) -> FnAfterHook {
        FnAfterHook::deciding(name, |_, outcome| match outcome {
            Ok(out) => AfterDecision::Replace(Ok(ToolOutput::text(
                out.llm_text().replace("hunter2", "[secret]"),
            ))),
            Err(_) => AfterDecision::Keep,
        })
    }

    #[tokio::test]
    async fn p8_a_replacement_is_seen_by_later_hooks_and_by_the_caller() {
        let seen = Arc::new(StdMutex::new(Vec::new()));
        let later = seen.clone();
        let host = ToolHost::builder()
            .after_hook(HookScope::Global, redact("redact"))
            .after_hook(
                HookScope::Tool("write".into()),
                FnAfterHook::new("observe", move |_, outcome| {
                    later
                        .lock()
                        .unwrap()
                        .push(outcome.as_ref().unwrap().llm_text().into_owned());
                }),
            )
            .build();
        host.register_tool(write_tool()).unwrap();
        let out = call(&host, json!({"path": "hunter2"})).await.unwrap();
        assert_eq!(out.llm_text(), r#"{"path":"[secret]"}"#);
        assert_eq!(*seen.lock().unwrap(), [r#"{"path":"[secret]"}"#]);
    }

    #[tokio::test]
    async fn p8_an_error_can_become_a_message_for_the_model() {
        let host = ToolHost::builder()
            .before_hook(
                HookScope::Global,
                FnBeforeHook::new("deny", |_| Err(crate::Rejection::new("read-only"))),
            )
            .after_hook(
                HookScope::Global,
                FnAfterHook::deciding("explain", |_, outcome| match outcome {
                    Err(e) => AfterDecision::Replace(Ok(ToolOutput::text(format!(
                        "That did not work ({e}); try reading instead."
                    )))),
                    Ok(_) => AfterDecision::Keep,
                }),
            )
            .build();
        host.register_tool(write_tool()).unwrap();
        let out = call(&host, json!({"path": "x"})).await.unwrap();
        assert_eq!(
            out.llm_text(),
            "That did not work (rejected by hook `deny`: read-only); try reading instead."
        );
    }

    #[tokio::test]
    async fn p8_a_replacement_must_fit_the_output_schema() {
        let host = ToolHost::builder()
            .after_hook(HookScope::Global, redact("redact"))
            .build();
        host.register_tool(FnTool::arc(
            ToolSpec::new("sum", "", json!({"type": "object"}))
                .output_schema(json!({"type": "object", "required": ["sum"]})),
            |_, _| async { Ok(ToolOutput::structured(json!({"sum": 3}))) },
        ))
        .unwrap();
        let err = host
            .invoke_tool(CallContext::new(), "sum", args(json!({})))
            .await
            .unwrap_err();
        assert!(
            err.to_string().starts_with("after hook `redact` replaced the result with one that does not fit the tool's output schema"),
            "{err}"
        );
    }

    #[derive(Default)]
    struct Collect(StdMutex<Vec<AuditRecord>>);

    impl AuditSink for Collect {
        fn record(&self, record: AuditRecord) {
            self.0.lock().unwrap().push(record);
        }
    }

    #[tokio::test]
    async fn p7_p8_the_audit_records_every_change_with_sizes_never_payloads() {
        let sink = Arc::new(Collect::default());
        let host = ToolHost::builder()
            .middleware(Audit::new(sink.clone(), Arc::new(RedactKeys::common())))
            .before_hook(HookScope::Global, prefixer("pin", "/p/"))
            .after_hook(HookScope::Global, redact("redact"))
            .build();
        host.register_tool(write_tool()).unwrap();
        call(&host, json!({"path": "hunter2"})).await.unwrap();
        let records = sink.0.lock().unwrap();
        assert_eq!(records.len(), 1);
        let r = &records[0];
        assert_eq!(r.arguments, json!({"path": "/p/hunter2"}));
        assert_eq!(
            r.outcome,
            AuditOutcome::Ok {
                result: r#"{"path":"/p/[secret]"}"#.into(),
                result_bytes: 22,
            },
            "the record holds what the caller received"
        );
        assert_eq!(
            r.changes,
            [
                HookChange {
                    hook: "pin".into(),
                    kind: ChangeKind::RewroteArguments,
                    bytes_before: 18,
                    bytes_after: 21,
                },
                HookChange {
                    hook: "redact".into(),
                    kind: ChangeKind::ReplacedOutcome,
                    bytes_before: 21,
                    bytes_after: 22,
                },
            ]
        );
        let debug = format!("{:?}", r.changes);
        assert!(!debug.contains("hunter2"), "{debug}");
    }
}
