//! The foundation through the public API only: an extension contributes a
//! tool, a policy hook and a lifecycle hook, and an agent driven by a scripted
//! model uses them in mixed mode.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolhost::agent::scripted::ScriptedProvider;
use toolhost::agent::{Message, ModelResponse, ModelToolCall};
use toolhost::middleware::Timeout;
use toolhost::{
    AfterDecision, AfterHook, Agent, AgentConfig, BatchConfig, BeforeHook, CallInfo, ExecutionMode,
    Extension, FnBeforeHook, FnTool, HookScope, LifecycleHook, Rejection, Tool, ToolError,
    ToolHost, ToolOutput, ToolSpec, TurnInfo,
};

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

impl Log {
    fn push(&self, s: String) {
        self.0.lock().unwrap().push(s);
    }
}

struct Notes {
    log: Arc<Log>,
}

struct ToolEvents(Arc<Log>);

#[async_trait]
impl LifecycleHook for ToolEvents {
    async fn after_tool(
        &self,
        turn: &TurnInfo,
        call: &ModelToolCall,
        outcome: &Result<ToolOutput, ToolError>,
        _d: Duration,
    ) {
        let what = match outcome {
            Ok(o) => o.llm_text().into_owned(),
            Err(e) => e.kind().as_str().to_owned(),
        };
        self.0
            .push(format!("turn {} {} -> {what}", turn.turn, call.name));
    }
}

struct CountAfter(Arc<Log>);

#[async_trait]
impl AfterHook for CountAfter {
    fn name(&self) -> &str {
        "count"
    }
    async fn after(&self, call: &CallInfo, _o: &Result<ToolOutput, ToolError>) -> AfterDecision {
        self.0.push(format!("after-hook {}", call.tool()));
        AfterDecision::Keep
    }
}

#[async_trait]
impl Extension for Notes {
    fn name(&self) -> &str {
        "notes"
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            FnTool::arc(
                ToolSpec::new(
                    "note_count",
                    "How many notes there are",
                    json!({"type": "object", "additionalProperties": false}),
                )
                .concurrency_safe(true),
                |_, _| async { Ok(ToolOutput::text("3")) },
            ),
            FnTool::arc(
                ToolSpec::new("note_delete", "Delete all notes", json!({"type": "object"}))
                    .concurrency_safe(false),
                |_, _| async { Ok(ToolOutput::text("deleted")) },
            ),
        ]
    }
    async fn system_prompt(&self) -> Option<String> {
        Some("Notes are precious.".into())
    }
    fn before_hooks(&self) -> Vec<(HookScope, Arc<dyn BeforeHook>)> {
        vec![(
            HookScope::Tool("note_delete".into()),
            Arc::new(FnBeforeHook::new("no-deletes", |_| {
                Err(Rejection::new("deleting notes needs a human"))
            })),
        )]
    }
    fn after_hooks(&self) -> Vec<(HookScope, Arc<dyn AfterHook>)> {
        vec![(HookScope::Global, Arc::new(CountAfter(self.log.clone())))]
    }
    fn lifecycle_hooks(&self) -> Vec<Arc<dyn LifecycleHook>> {
        vec![Arc::new(ToolEvents(self.log.clone()))]
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
async fn e1_e2_an_extension_equips_an_agent_through_the_one_pipeline() {
    let log = Arc::new(Log::default());
    let host = ToolHost::builder()
        .validate_arguments(true)
        .middleware(Timeout::new(Duration::from_secs(5)))
        .build();
    host.register_extension(Arc::new(Notes { log: log.clone() }))
        .await
        .unwrap();

    let provider = Arc::new(ScriptedProvider::new([
        ModelResponse::tool_calls(vec![
            call("a", "note_count", "{}"),
            call("b", "note_delete", "{}"),
            call("c", "note_count", r#"{"unexpected": true}"#),
        ]),
        ModelResponse::text("There are 3 notes; I may not delete them."),
    ]));
    let agent = Agent::new(host.clone(), provider.clone()).with_config(AgentConfig {
        batch: BatchConfig {
            mode: ExecutionMode::Mixed,
            concurrency: 2,
        },
        ..AgentConfig::default()
    });
    let out = agent
        .run("tidy my notes", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.final_text, "There are 3 notes; I may not delete them.");

    let requests = provider.requests();
    assert_eq!(requests[0].system, "Notes are precious.");
    let names: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["note_count", "note_delete"]);
    let results: Vec<_> = requests[1]
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { result, .. } => Some(result.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results[0], Ok(ToolOutput::text("3")));
    assert_eq!(
        results[1],
        Err(ToolError::Rejected {
            hook: "no-deletes".into(),
            reason: "deleting notes needs a human".into()
        })
    );
    assert!(matches!(
        &results[2],
        Err(ToolError::InvalidArguments { .. })
    ));

    let events = log.0.lock().unwrap().clone();
    assert_eq!(
        events
            .iter()
            .filter(|e| e.starts_with("after-hook"))
            .count(),
        3
    );
    assert!(events.contains(&"turn 1 note_delete -> rejected".to_string()));

    host.unload_extension("notes").await.unwrap();
    assert!(host.tool_names().is_empty());
}
