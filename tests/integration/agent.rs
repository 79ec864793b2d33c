//! The agent end to end: one model turn asks for two wasm tool calls and one
//! built-in call; they run in mixed mode through the pipeline, every hook
//! records what it saw, and the model's final answer ends the run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;
use toolhost::agent::scripted::ScriptedProvider;
use toolhost::agent::{Message, ModelRequest, ModelResponse, ModelToolCall, RunOutput};
use toolhost::builtin::{BuiltinConfig, BuiltinTools};
use toolhost::sandbox::PluginPolicy;
use toolhost::{
    Agent, AgentConfig, AgentError, BatchConfig, ExecutionMode, FnAfterHook, FnBeforeHook,
    HookScope, LifecycleHook, RunInfo, ToolError, ToolOutput, TurnInfo,
};

use crate::common::{host_with, load};

#[derive(Default)]
struct Events(Mutex<Vec<String>>);

impl Events {
    fn push(&self, e: String) {
        self.0.lock().unwrap().push(e);
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

struct Lifecycle(Arc<Events>);

#[async_trait]
impl LifecycleHook for Lifecycle {
    async fn before_run(&self, run: &RunInfo) {
        self.0.push(format!("run start: {}", run.prompt));
    }
    async fn after_run(&self, _run: &RunInfo, outcome: &Result<RunOutput, AgentError>) {
        self.0.push(format!(
            "run end: {}",
            outcome
                .as_ref()
                .map(|o| o.final_text.as_str())
                .unwrap_or("error")
        ));
    }
    async fn before_turn(&self, turn: &TurnInfo, _m: &[Message]) {
        self.0.push(format!("turn {} start", turn.turn));
    }
    async fn after_turn(&self, turn: &TurnInfo, _m: &[Message]) {
        self.0.push(format!("turn {} end", turn.turn));
    }
    async fn before_model_call(&self, turn: &TurnInfo, request: &mut ModelRequest) {
        let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        self.0.push(format!(
            "model call {} with tools {}",
            turn.turn,
            tools.join(",")
        ));
    }
    async fn before_tool(&self, _t: &TurnInfo, call: &ModelToolCall) {
        self.0.push(format!("tool start {}", call.id));
    }
    async fn after_tool(
        &self,
        _t: &TurnInfo,
        call: &ModelToolCall,
        outcome: &Result<ToolOutput, ToolError>,
        _d: Duration,
    ) {
        let what = outcome
            .as_ref()
            .map(|o| o.llm_text().into_owned())
            .unwrap_or_else(|e| e.to_string());
        self.0.push(format!("tool end {}: {what}", call.id));
    }
}

fn call(id: &str, name: &str, args: &str) -> ModelToolCall {
    ModelToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn e2_one_turn_with_two_wasm_calls_and_a_builtin_call_in_mixed_mode() {
    let workdir = tempfile::tempdir().unwrap();
    std::fs::write(workdir.path().join("plan.md"), "step one\nstep two\n").unwrap();

    let host = host_with(vec![load("calc", "calc", PluginPolicy::default()).await]).await;
    let builtin = BuiltinTools::new(BuiltinConfig::new(workdir.path())).unwrap();
    host.register_extension(Arc::new(builtin)).await.unwrap();

    let events = Arc::new(Events::default());
    host.add_lifecycle_hook(Arc::new(Lifecycle(events.clone())));
    let seen = events.clone();
    host.add_before_hook(
        HookScope::Global,
        Arc::new(FnBeforeHook::new("record", move |c| {
            seen.push(format!("before hook {}", c.tool()));
            Ok(())
        })),
    );
    let seen = events.clone();
    host.add_after_hook(
        HookScope::Global,
        Arc::new(FnAfterHook::new("record", move |c, o| {
            seen.push(format!("after hook {} ok={}", c.tool(), o.is_ok()));
        })),
    );

    let provider = Arc::new(ScriptedProvider::new([
        ModelResponse::tool_calls(vec![
            call("a", "calc", r#"{"expression": "6 * 7"}"#),
            call("b", "stats", r#"{"numbers": [1, 2, 3, 4]}"#),
            call("c", "read_file", r#"{"path": "plan.md"}"#),
        ]),
        ModelResponse::text("6 × 7 is 42, the mean is 2.5, and the plan has two steps."),
    ]));
    let agent = Agent::new(host.clone(), provider.clone()).with_config(AgentConfig {
        batch: BatchConfig {
            mode: ExecutionMode::Mixed,
            concurrency: 4,
        },
        ..AgentConfig::default()
    });
    let out = agent
        .run("Work it out", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.final_text,
        "6 × 7 is 42, the mean is 2.5, and the plan has two steps."
    );
    assert_eq!(out.turns, 2);

    // What went back to the model: the three results, in call order.
    let requests = provider.requests();
    let results: Vec<(String, String)> = requests[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id, result, ..
            } => Some((
                call_id.clone(),
                result.as_ref().unwrap().llm_text().into_owned(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(results[0], ("a".into(), "42".into()));
    assert_eq!(results[1], ("b".into(), "mean 2.5, median 2.5".into()));
    assert_eq!(results[2].0, "c");
    assert!(results[2].1.contains("step two"), "{}", results[2].1);

    let all = events.all();
    let index = |e: &str| {
        all.iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("no `{e}` in {all:#?}"))
    };
    // The run, its turns and its model calls, in order.
    assert!(index("run start: Work it out") < index("turn 1 start"));
    assert!(
        index("turn 1 start")
            < all
                .iter()
                .position(|x| x.starts_with("model call 1"))
                .unwrap()
    );
    assert!(index("turn 1 end") < index("turn 2 start"));
    assert_eq!(
        all.last().unwrap(),
        "run end: 6 × 7 is 42, the mean is 2.5, and the plan has two steps."
    );
    // Every tool: lifecycle start and end around the pipeline's hooks.
    for (id, tool) in [("a", "calc"), ("b", "stats"), ("c", "read_file")] {
        assert!(index(&format!("tool start {id}")) < index(&format!("before hook {tool}")));
        assert!(
            index(&format!("before hook {tool}")) < index(&format!("after hook {tool} ok=true"))
        );
        let end = all
            .iter()
            .position(|x| x.starts_with(&format!("tool end {id}:")))
            .unwrap();
        assert!(index(&format!("after hook {tool} ok=true")) < end);
        assert!(end < index("turn 1 end"));
    }
    // The model saw the wasm tools and the built-in tools side by side.
    let tools = all.iter().find(|x| x.starts_with("model call 1")).unwrap();
    assert!(
        tools.contains("calc") && tools.contains("read_file") && tools.contains("stats"),
        "{tools}"
    );
}
