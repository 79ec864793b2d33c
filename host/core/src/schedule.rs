//! Execution modes for a batch of calls from one model turn (rules M1–M3).
//!
//! Each call is placed either in the concurrent pool or as a barrier:
//!
//! | mode       | declared safe | undeclared | declared unsafe |
//! |------------|---------------|------------|-----------------|
//! | `Serial`   | barrier       | barrier    | barrier         |
//! | `Parallel` | pool          | pool       | barrier         |
//! | `Mixed`    | pool          | barrier    | barrier         |
//!
//! A barrier waits for every earlier call to finish, runs alone, and only then
//! lets later calls start. Pool calls run on their own tasks (so they use all
//! cores), at most `concurrency` at a time (0 = unbounded). Results come back
//! in call order; one call's failure never cancels another.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::error::ToolError;
use crate::host::ToolHost;
use crate::output::ToolOutput;
use crate::tool::{Arguments, CallContext, CallId};

/// How a batch is scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecutionMode {
    /// One call after another.
    Serial,
    /// Calls join the pool unless declared unsafe (fail-open).
    Parallel,
    /// Only calls declared safe join the pool (fail-closed). The default.
    #[default]
    Mixed,
}

impl ExecutionMode {
    /// Whether a call to a tool with this declaration joins the pool.
    pub fn joins_pool(self, concurrency_safe: Option<bool>) -> bool {
        match self {
            Self::Serial => false,
            Self::Parallel => concurrency_safe != Some(false),
            Self::Mixed => concurrency_safe == Some(true),
        }
    }
}

/// A batch's mode and concurrency bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchConfig {
    /// The scheduling mode.
    pub mode: ExecutionMode,
    /// Most pool calls running at once; 0 means unbounded.
    pub concurrency: usize,
}

impl Default for BatchConfig {
    /// Mixed mode, at most 8 calls at once.
    fn default() -> Self {
        Self {
            mode: ExecutionMode::Mixed,
            concurrency: 8,
        }
    }
}

/// One call of a batch.
#[derive(Debug, Clone)]
pub struct BatchCall {
    /// The call id (the model's tool-call id, or a fresh one).
    pub call_id: CallId,
    /// The tool to call.
    pub name: String,
    /// The arguments, or why they could not be parsed (the call then fails
    /// with that error without running).
    pub arguments: Result<Arguments, ToolError>,
}

impl BatchCall {
    /// A call with parsed arguments and a fresh id.
    pub fn new(name: impl Into<String>, arguments: Arguments) -> Self {
        Self {
            call_id: CallId::fresh(),
            name: name.into(),
            arguments: Ok(arguments),
        }
    }

    /// A call from a model: its id, the tool name and the raw argument text.
    pub fn from_model(
        call_id: impl Into<CallId>,
        name: impl Into<String>,
        raw_arguments: &str,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            arguments: Arguments::parse(raw_arguments),
        }
    }
}

/// Runs call number `i` of a batch; lets the agent wrap each call in
/// lifecycle hooks. It must run the call through the pipeline (normally by
/// [`ToolHost::invoke_batch_call`]).
pub type CallRunner = Arc<
    dyn Fn(usize, CallContext, BatchCall) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
        + Send
        + Sync,
>;

impl ToolHost {
    /// Runs a batch of calls under `config`, each through the full pipeline.
    /// Every call inherits `parent`'s deadline and cancellation; results are
    /// in call order.
    pub async fn run_batch(
        &self,
        parent: &CallContext,
        calls: Vec<BatchCall>,
        config: BatchConfig,
    ) -> Vec<Result<ToolOutput, ToolError>> {
        let host = self.clone();
        let runner: CallRunner = Arc::new(move |_, ctx, call| {
            let host = host.clone();
            async move { host.invoke_batch_call(ctx, call).await }.boxed()
        });
        self.run_batch_with(parent, calls, config, runner).await
    }

    /// Runs one batch member through [`ToolHost::invoke_tool`]; arguments
    /// that did not parse fail the call without running it.
    pub async fn invoke_batch_call(
        &self,
        ctx: CallContext,
        call: BatchCall,
    ) -> Result<ToolOutput, ToolError> {
        let args = call.arguments?;
        self.invoke_tool(ctx, &call.name, args).await
    }

    /// Runs a batch like [`run_batch`](Self::run_batch), with `runner`
    /// running each call (to wrap it, as the agent does with its lifecycle
    /// hooks). Results are in call order.
    pub async fn run_batch_with(
        &self,
        parent: &CallContext,
        calls: Vec<BatchCall>,
        config: BatchConfig,
        runner: CallRunner,
    ) -> Vec<Result<ToolOutput, ToolError>> {
        let n = calls.len();
        let in_pool: Vec<bool> = calls
            .iter()
            .map(|c| {
                let declared = self.get_tool(&c.name).and_then(|s| s.concurrency_safe);
                config.mode.joins_pool(declared)
            })
            .collect();
        let limit = (config.concurrency > 0).then(|| Arc::new(Semaphore::new(config.concurrency)));
        let mut results: Vec<Option<Result<ToolOutput, ToolError>>> =
            (0..n).map(|_| None).collect();
        let mut calls = calls.into_iter().enumerate().peekable();

        while let Some((i, call)) = calls.next() {
            let ctx = member_context(parent, &call);
            if !in_pool[i] {
                results[i] = Some(guarded(runner(i, ctx, call)).await);
                continue;
            }
            // A run of pool calls: start them all (each waits for a permit),
            // then wait for all of them before anything later starts.
            let mut set = JoinSet::new();
            let mut start = |i: usize, call: BatchCall, ctx: CallContext| {
                let fut = runner(i, ctx, call);
                let limit = limit.clone();
                set.spawn(async move {
                    let _permit = match limit {
                        Some(sem) => {
                            Some(sem.acquire_owned().await.expect("semaphore never closed"))
                        }
                        None => None,
                    };
                    (i, guarded(fut).await)
                });
            };
            start(i, call, ctx);
            while let Some((j, next)) = calls.next_if(|(j, _)| in_pool[*j]) {
                let ctx = member_context(parent, &next);
                start(j, next, ctx);
            }
            while let Some(joined) = set.join_next().await {
                match joined {
                    Ok((j, result)) => results[j] = Some(result),
                    // `guarded` catches panics, and the set is never aborted
                    // while we wait on it, so this cannot happen.
                    Err(e) => tracing::error!(error = %e, "batch task failed"),
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(ToolError::failed("the call's task was lost"))))
            .collect()
    }
}

fn member_context(parent: &CallContext, call: &BatchCall) -> CallContext {
    let mut ctx = CallContext::new()
        .with_call_id(call.call_id.clone())
        .with_cancellation(parent.cancellation().child_token());
    if let Some(deadline) = parent.deadline() {
        ctx = ctx.with_deadline(deadline);
    }
    if let Some(key) = parent.dedup_key() {
        ctx = ctx.with_dedup_key(format!("{key}/{}", call.call_id));
    }
    ctx
}

async fn guarded(
    fut: BoxFuture<'static, Result<ToolOutput, ToolError>>,
) -> Result<ToolOutput, ToolError> {
    AssertUnwindSafe(fut)
        .catch_unwind()
        .await
        .unwrap_or_else(|_| Err(ToolError::failed("the call panicked")))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::testing::{Recorder, recording_tool};
    use crate::tool::{FnTool, Tool, ToolSpec};

    #[test]
    fn m2_parallel_is_fail_open_and_mixed_fail_closed() {
        use ExecutionMode::*;
        assert!(Parallel.joins_pool(None));
        assert!(!Mixed.joins_pool(None));
        assert!(Parallel.joins_pool(Some(true)) && Mixed.joins_pool(Some(true)));
        assert!(!Parallel.joins_pool(Some(false)) && !Mixed.joins_pool(Some(false)));
        assert!(!Serial.joins_pool(Some(true)));
    }

    /// Counts calls in flight and remembers the most seen at once. Each call
    /// waits on `barrier` (if any) while counted, which proves that that many
    /// calls really ran together.
    #[derive(Clone, Default)]
    struct Gauge {
        now: Arc<AtomicUsize>,
        max: Arc<AtomicUsize>,
    }

    impl Gauge {
        fn tool(
            &self,
            name: &'static str,
            safe: Option<bool>,
            barrier: Option<Arc<tokio::sync::Barrier>>,
        ) -> Arc<dyn Tool> {
            let g = self.clone();
            let mut spec = ToolSpec::new(name, "", json!({"type": "object"}));
            spec.concurrency_safe = safe;
            FnTool::arc(spec, move |_, _| {
                let (g, barrier) = (g.clone(), barrier.clone());
                async move {
                    let n = g.now.fetch_add(1, Ordering::SeqCst) + 1;
                    g.max.fetch_max(n, Ordering::SeqCst);
                    match barrier {
                        Some(b) => {
                            b.wait().await;
                        }
                        None => tokio::time::sleep(Duration::from_millis(5)).await,
                    }
                    g.now.fetch_sub(1, Ordering::SeqCst);
                    Ok(ToolOutput::text(name))
                }
            })
        }

        fn max(&self) -> usize {
            self.max.load(Ordering::SeqCst)
        }
    }

    fn calls(name: &str, n: usize) -> Vec<BatchCall> {
        (0..n)
            .map(|i| BatchCall::new(name, Arguments::parse(&format!(r#"{{"i":{i}}}"#)).unwrap()))
            .collect()
    }

    fn config(mode: ExecutionMode, concurrency: usize) -> BatchConfig {
        BatchConfig { mode, concurrency }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m1_serial_runs_one_call_at_a_time() {
        let g = Gauge::default();
        let host = ToolHost::new();
        host.register_tool(g.tool("safe", Some(true), None))
            .unwrap();
        let results = host
            .run_batch(
                &CallContext::new(),
                calls("safe", 4),
                config(ExecutionMode::Serial, 0),
            )
            .await;
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(g.max(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m2_parallel_admits_undeclared_tools_and_mixed_does_not() {
        // Parallel: two undeclared calls must meet at a barrier of two, which
        // only happens if they run together.
        let g = Gauge::default();
        let host = ToolHost::new();
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        host.register_tool(g.tool("undeclared", None, Some(barrier)))
            .unwrap();
        let results = tokio::time::timeout(
            Duration::from_secs(30),
            host.run_batch(
                &CallContext::new(),
                calls("undeclared", 2),
                config(ExecutionMode::Parallel, 0),
            ),
        )
        .await
        .expect("parallel mode must run undeclared calls together");
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(g.max(), 2);

        // Mixed: the same undeclared tool is treated as unsafe.
        let g = Gauge::default();
        let host = ToolHost::new();
        host.register_tool(g.tool("undeclared", None, None))
            .unwrap();
        let results = host
            .run_batch(
                &CallContext::new(),
                calls("undeclared", 4),
                config(ExecutionMode::Mixed, 0),
            )
            .await;
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(g.max(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m2_unsafe_call_is_a_barrier() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        for (name, safe, ms) in [
            ("a", Some(true), 30),
            ("b", Some(true), 5),
            ("w", Some(false), 10),
            ("d", Some(true), 20),
            ("e", Some(true), 1),
        ] {
            host.register_tool(recording_tool(
                name,
                safe,
                Duration::from_millis(ms),
                rec.clone(),
            ))
            .unwrap();
        }
        let batch: Vec<BatchCall> = ["a", "b", "w", "d", "e"]
            .iter()
            .map(|n| BatchCall::new(*n, Arguments::parse("{}").unwrap()))
            .collect();
        for mode in [ExecutionMode::Parallel, ExecutionMode::Mixed] {
            let results = host
                .run_batch(&CallContext::new(), batch.clone(), config(mode, 0))
                .await;
            assert!(results.iter().all(Result::is_ok));
            let events = rec.events();
            let pos = |e: &str| events.iter().rposition(|x| x == e).unwrap();
            for before in ["a", "b"] {
                assert!(
                    pos(&format!("finish:{before}")) < pos("start:w"),
                    "{mode:?} {events:?}"
                );
            }
            for after in ["d", "e"] {
                assert!(
                    pos("finish:w") < pos(&format!("start:{after}")),
                    "{mode:?} {events:?}"
                );
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m3_concurrency_bound_is_never_exceeded() {
        // Nine calls, bound three: groups of three meet at a barrier of
        // three (so three really run at once), and the gauge shows no
        // fourth ever started while three were in flight.
        let g = Gauge::default();
        let host = ToolHost::new();
        let barrier = Arc::new(tokio::sync::Barrier::new(3));
        host.register_tool(g.tool("safe", Some(true), Some(barrier)))
            .unwrap();
        let results = tokio::time::timeout(
            Duration::from_secs(30),
            host.run_batch(
                &CallContext::new(),
                calls("safe", 9),
                config(ExecutionMode::Mixed, 3),
            ),
        )
        .await
        .expect("three calls must run at once");
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(g.max(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m3_zero_means_unbounded() {
        let g = Gauge::default();
        let host = ToolHost::new();
        let barrier = Arc::new(tokio::sync::Barrier::new(6));
        host.register_tool(g.tool("safe", Some(true), Some(barrier)))
            .unwrap();
        let results = tokio::time::timeout(
            Duration::from_secs(30),
            host.run_batch(
                &CallContext::new(),
                calls("safe", 6),
                config(ExecutionMode::Parallel, 0),
            ),
        )
        .await
        .expect("all six calls must run at once");
        assert!(results.iter().all(Result::is_ok));
        assert_eq!(g.max(), 6);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m3_results_come_back_in_call_order() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        // The first call is the slowest, the last the fastest.
        for (name, ms) in [("slow", 40), ("mid", 20), ("fast", 1)] {
            host.register_tool(recording_tool(
                name,
                Some(true),
                Duration::from_millis(ms),
                rec.clone(),
            ))
            .unwrap();
        }
        let batch = ["slow", "mid", "fast"]
            .iter()
            .map(|n| BatchCall::new(*n, Arguments::parse(&format!(r#"{{"n":"{n}"}}"#)).unwrap()))
            .collect();
        let results = host
            .run_batch(
                &CallContext::new(),
                batch,
                config(ExecutionMode::Parallel, 0),
            )
            .await;
        let texts: Vec<String> = results
            .into_iter()
            .map(|r| r.unwrap().llm_text().into_owned())
            .collect();
        assert_eq!(
            texts,
            [r#"{"n":"slow"}"#, r#"{"n":"mid"}"#, r#"{"n":"fast"}"#]
        );
        let events = rec.events();
        let finished: Vec<&str> = events
            .iter()
            .filter_map(|e| e.strip_prefix("finish:"))
            .collect();
        assert_eq!(
            finished,
            ["fast", "mid", "slow"],
            "they finished out of order"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn m3_one_failure_does_not_cancel_siblings() {
        let rec = Recorder::default();
        let host = ToolHost::new();
        host.register_tool(recording_tool(
            "slow",
            Some(true),
            Duration::from_millis(30),
            rec.clone(),
        ))
        .unwrap();
        host.register_tool(FnTool::arc(
            ToolSpec::new("fails", "", json!({"type": "object"})).concurrency_safe(true),
            |_, _| async { Err(ToolError::failed("broken")) },
        ))
        .unwrap();
        host.register_tool(FnTool::arc(
            ToolSpec::new("panics", "", json!({"type": "object"})).concurrency_safe(true),
            |_, _| async { panic!("boom") },
        ))
        .unwrap();
        let batch = vec![
            BatchCall::new("fails", Arguments::parse("{}").unwrap()),
            BatchCall::new("slow", Arguments::parse("{}").unwrap()),
            BatchCall::new("panics", Arguments::parse("{}").unwrap()),
            BatchCall::new("missing", Arguments::parse("{}").unwrap()),
            BatchCall::from_model("m-1", "slow", "{not json"),
            BatchCall::new("slow", Arguments::parse("{}").unwrap()),
        ];
        let results = host
            .run_batch(
                &CallContext::new(),
                batch,
                config(ExecutionMode::Parallel, 0),
            )
            .await;
        assert_eq!(results[0], Err(ToolError::failed("broken")));
        assert!(results[1].is_ok());
        assert_eq!(results[2], Err(ToolError::failed("tool panicked: boom")));
        assert_eq!(
            results[3],
            Err(ToolError::UnknownTool {
                name: "missing".into()
            })
        );
        assert_eq!(
            results[4].as_ref().unwrap_err().kind(),
            crate::ErrorKind::InvalidArguments
        );
        assert!(results[5].is_ok());
    }

    #[tokio::test]
    async fn m3_cancelling_the_batch_cancels_its_calls() {
        let host = ToolHost::new();
        host.register_tool(FnTool::arc(
            ToolSpec::new("forever", "", json!({"type": "object"})).concurrency_safe(true),
            |_, _| async {
                std::future::pending::<()>().await;
                Ok(ToolOutput::text(""))
            },
        ))
        .unwrap();
        let parent = CallContext::new();
        let token = parent.cancellation().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            token.cancel();
        });
        let results = host
            .run_batch(
                &parent,
                calls("forever", 3),
                config(ExecutionMode::Parallel, 0),
            )
            .await;
        assert!(results.iter().all(|r| r == &Err(ToolError::Cancelled)));
    }
}
