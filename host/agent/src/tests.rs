use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::scripted::ScriptedProvider;
use toolhost_core::schedule::ExecutionMode;
use toolhost_core::testing::{Recorder, recording_tool};
use toolhost_core::tool::{FnTool, ToolSpec};
use toolhost_core::{Extension, LifecycleHook, RunInfo, TurnInfo};

/// Records every lifecycle event with the data it carries.
struct Events(Recorder);

#[async_trait]
impl LifecycleHook for Events {
    async fn before_run(&self, run: &RunInfo) {
        self.0.push(format!("before_run:{}", run.prompt));
    }
    async fn after_run(&self, _run: &RunInfo, outcome: &Result<RunOutput, AgentError>) {
        let what = match outcome {
            Ok(o) => format!("ok:{}:{}", o.final_text, o.usage.input_tokens),
            Err(e) => format!("err:{e}"),
        };
        self.0.push(format!("after_run:{what}"));
    }
    async fn before_turn(&self, turn: &TurnInfo, messages: &[Message]) {
        self.0
            .push(format!("before_turn:{}:{}", turn.turn, messages.len()));
    }
    async fn after_turn(&self, turn: &TurnInfo, messages: &[Message]) {
        self.0
            .push(format!("after_turn:{}:{}", turn.turn, messages.len()));
    }
    async fn before_model_call(&self, turn: &TurnInfo, request: &mut ModelRequest) {
        self.0.push(format!(
            "before_model:{}:{}",
            turn.turn,
            request.tools.len()
        ));
    }
    async fn after_model_call(
        &self,
        turn: &TurnInfo,
        response: &Result<ModelResponse, ModelError>,
    ) {
        let calls = response.as_ref().map(|r| r.tool_calls.len()).unwrap_or(0);
        self.0.push(format!("after_model:{}:{calls}", turn.turn));
    }
    async fn before_tool(&self, _turn: &TurnInfo, call: &ModelToolCall) {
        self.0.push(format!("before_tool:{}", call.id));
    }
    async fn after_tool(
        &self,
        _turn: &TurnInfo,
        call: &ModelToolCall,
        outcome: &Result<ToolOutput, ToolError>,
        _duration: Duration,
    ) {
        let what = if outcome.is_ok() { "ok" } else { "err" };
        self.0.push(format!("after_tool:{}:{what}", call.id));
    }
}

fn call(id: &str, name: &str, args: &str) -> ModelToolCall {
    ModelToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    }
}

fn host_with_tools(rec: &Recorder) -> ToolHost {
    let host = ToolHost::builder()
        .lifecycle_hook(Events(rec.clone()))
        .build();
    host.register_tool(recording_tool(
        "echo",
        Some(true),
        Duration::ZERO,
        Recorder::default(),
    ))
    .unwrap();
    host
}

#[tokio::test]
async fn e2_lifecycle_hooks_fire_around_run_turn_model_call_and_tool() {
    let rec = Recorder::default();
    let host = host_with_tools(&rec);
    let mut first = ModelResponse::tool_calls(vec![
        call("c1", "echo", r#"{"x":1}"#),
        call("c2", "missing", "{}"),
    ]);
    first.usage.input_tokens = 10;
    let mut second = ModelResponse::text("done");
    second.usage.input_tokens = 15;
    let provider = Arc::new(ScriptedProvider::new([first, second]));
    let agent = Agent::new(host, provider.clone()).with_config(AgentConfig {
        batch: BatchConfig {
            mode: ExecutionMode::Serial,
            concurrency: 0,
        },
        ..AgentConfig::default()
    });
    let out = agent.run("hi", CancellationToken::new()).await.unwrap();
    assert_eq!(out.final_text, "done");
    assert_eq!(out.turns, 2);
    assert_eq!(out.usage.input_tokens, 25);
    assert_eq!(
        rec.events(),
        [
            "before_run:hi",
            "before_turn:1:1",
            "before_model:1:1",
            "after_model:1:2",
            "before_tool:c1",
            "after_tool:c1:ok",
            "before_tool:c2",
            "after_tool:c2:err",
            "after_turn:1:4",
            "before_turn:2:4",
            "before_model:2:1",
            "after_model:2:0",
            "after_turn:2:5",
            "after_run:ok:done:25",
        ]
    );
    // The tool results went back to the model in call order, errors typed.
    let second_request = &provider.requests()[1];
    match &second_request.messages[2..] {
        [
            Message::ToolResult {
                call_id: a,
                result: Ok(out),
                ..
            },
            Message::ToolResult {
                call_id: b,
                result: Err(err),
                ..
            },
        ] => {
            assert_eq!((a.as_str(), b.as_str()), ("c1", "c2"));
            assert_eq!(out.llm_text(), r#"{"x":1}"#);
            assert_eq!(
                err,
                &ToolError::UnknownTool {
                    name: "missing".into()
                }
            );
        }
        other => panic!("unexpected messages {other:?}"),
    }
}

#[tokio::test]
async fn e2_run_ends_at_the_turn_limit() {
    let rec = Recorder::default();
    let host = host_with_tools(&rec);
    let forever =
        (0..5).map(|i| ModelResponse::tool_calls(vec![call(&format!("c{i}"), "echo", "{}")]));
    let agent =
        Agent::new(host, Arc::new(ScriptedProvider::new(forever))).with_config(AgentConfig {
            max_turns: 3,
            ..AgentConfig::default()
        });
    let err = agent
        .run("loop", CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(err, AgentError::MaxTurns { limit: 3 });
    assert_eq!(
        rec.events().last().unwrap(),
        "after_run:err:no final answer after 3 turns"
    );
}

#[tokio::test]
async fn e2_run_ends_on_cancellation() {
    let host = ToolHost::new();
    host.register_tool(FnTool::arc(
        ToolSpec::new("wait", "", json!({"type": "object"})),
        |_, _| async {
            std::future::pending::<()>().await;
            Ok(ToolOutput::text(""))
        },
    ))
    .unwrap();
    let provider =
        ScriptedProvider::new([ModelResponse::tool_calls(vec![call("c", "wait", "{}")])]);
    let agent = Agent::new(host, Arc::new(provider));
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        trigger.cancel();
    });
    let err = agent.run("wait", cancel).await.unwrap_err();
    assert_eq!(err, AgentError::Cancelled);
}

#[tokio::test]
async fn e2_model_errors_end_the_run_typed() {
    let host = ToolHost::new();
    let provider = ScriptedProvider::with_results([Err(ModelError::RateLimited {
        retry_after: Some(Duration::from_secs(3)),
    })]);
    let err = Agent::new(host, Arc::new(provider))
        .run("x", CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(
        err,
        AgentError::Model(ModelError::RateLimited {
            retry_after: Some(Duration::from_secs(3))
        })
    );
}

#[tokio::test]
async fn e2_system_prompt_combines_agent_and_extensions_and_stays_fixed() {
    struct Prompt;
    #[async_trait]
    impl Extension for Prompt {
        fn name(&self) -> &str {
            "rules"
        }
        async fn system_prompt(&self) -> Option<String> {
            Some("Follow the project rules.".into())
        }
    }
    struct Marker;
    #[async_trait]
    impl LifecycleHook for Marker {
        async fn before_model_call(&self, turn: &TurnInfo, request: &mut ModelRequest) {
            request.messages.push(Message::User {
                text: format!("(turn {})", turn.turn),
            });
        }
    }
    let host = ToolHost::builder().lifecycle_hook(Marker).build();
    host.register_tool(recording_tool(
        "echo",
        Some(true),
        Duration::ZERO,
        Recorder::default(),
    ))
    .unwrap();
    host.register_extension(Arc::new(Prompt)).await.unwrap();
    let provider = Arc::new(ScriptedProvider::new([
        ModelResponse::tool_calls(vec![call("c1", "echo", "{}")]),
        ModelResponse::text("ok"),
    ]));
    let agent = Agent::new(host, provider.clone()).with_config(AgentConfig {
        system_prompt: "You are careful.".into(),
        ..AgentConfig::default()
    });
    agent.run("go", CancellationToken::new()).await.unwrap();
    let requests = provider.requests();
    assert_eq!(
        requests[0].system,
        "You are careful.\n\nFollow the project rules."
    );
    assert_eq!(requests[0].system, requests[1].system);
    assert_eq!(requests[0].tools, requests[1].tools);
    // A lifecycle hook adjusted the request the provider saw.
    assert!(
        matches!(requests[1].messages.last(), Some(Message::User { text }) if text == "(turn 2)")
    );
}

/// Collects streamed text deltas per turn, as a user interface would.
#[derive(Default)]
struct Deltas(std::sync::Mutex<Vec<(u32, StreamEvent)>>);

impl LifecycleHook for Deltas {
    fn on_model_stream(&self, turn: &TurnInfo, event: &StreamEvent) {
        self.0.lock().unwrap().push((turn.turn, event.clone()));
    }
}

#[tokio::test]
async fn e2_streamed_pieces_reach_lifecycle_hooks_only_when_streaming() {
    for stream in [false, true] {
        let deltas = Arc::new(Deltas::default());
        let host = host_with_tools(&Recorder::default());
        host.add_lifecycle_hook(deltas.clone());
        let provider = ScriptedProvider::new([
            ModelResponse::tool_calls(vec![call("c1", "echo", r#"{"a":1}"#)]),
            ModelResponse::text("all done"),
        ]);
        let agent = Agent::new(host, Arc::new(provider)).with_config(AgentConfig {
            stream,
            ..AgentConfig::default()
        });
        agent.run("go", CancellationToken::new()).await.unwrap();
        let seen = deltas.0.lock().unwrap().clone();
        if !stream {
            assert!(seen.is_empty());
            continue;
        }
        assert_eq!(
            seen,
            [
                (
                    1,
                    StreamEvent::ToolCallStart {
                        index: 0,
                        id: "c1".into(),
                        name: "echo".into()
                    }
                ),
                (
                    1,
                    StreamEvent::ToolCallDelta {
                        index: 0,
                        arguments: r#"{"a":1}"#.into()
                    }
                ),
                (
                    2,
                    StreamEvent::TextDelta {
                        text: "all done".into()
                    }
                ),
            ]
        );
    }
}

#[cfg(feature = "openai")]
#[tokio::test]
async fn e2_an_agent_streams_from_a_real_provider_and_runs_parallel_calls() {
    use crate::providers::{OpenAiConfig, OpenAiProvider};
    use toolhost_test_support::{HttpServer, Reply, sse};

    let chunk = |delta: serde_json::Value, finish: serde_json::Value| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let call_delta = |index: u64, id: &str, args: &str| {
        chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                                   "function": {"name": "echo", "arguments": args}}]}),
            serde_json::Value::Null,
        )
    };
    let turn1 = sse(&[
        ("", call_delta(0, "call_a", r#"{"n":1}"#)),
        ("", call_delta(1, "call_b", r#"{"n":2}"#)),
        ("", chunk(json!({}), json!("tool_calls"))),
    ]) + "data: [DONE]\n\n";
    let turn2 = sse(&[
        (
            "",
            chunk(json!({"content": "Both "}), serde_json::Value::Null),
        ),
        ("", chunk(json!({"content": "ran."}), json!("stop"))),
    ]) + "data: [DONE]\n\n";
    let server = HttpServer::script(vec![
        Reply::stream_split(&turn1, &[7, 3]),
        Reply::stream_split(&turn2, &[5]),
    ])
    .await;
    let mut config = OpenAiConfig::new("local-model");
    config.base_url = server.url("/v1");
    let provider = Arc::new(OpenAiProvider::new(config).unwrap());

    let rec = Recorder::default();
    let host = host_with_tools(&rec);
    let deltas = Arc::new(Deltas::default());
    host.add_lifecycle_hook(deltas.clone());
    let agent = Agent::new(host, provider).with_config(AgentConfig {
        stream: true,
        ..AgentConfig::default()
    });
    let out = agent
        .run("run both", CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.final_text, "Both ran.");
    let texts: Vec<String> = deltas
        .0
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(_, e)| match e {
            StreamEvent::TextDelta { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Both ", "ran."]);
    // Both calls ran through the pipeline, and their results went back in
    // the API's format, in call order.
    let events = rec.events();
    assert!(
        events.contains(&"after_tool:call_a:ok".to_owned()),
        "{events:?}"
    );
    assert!(
        events.contains(&"after_tool:call_b:ok".to_owned()),
        "{events:?}"
    );
    let second = server.requests()[1].json();
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(
        messages[2..],
        [
            json!({"role": "tool", "tool_call_id": "call_a", "content": r#"{"n":1}"#}),
            json!({"role": "tool", "tool_call_id": "call_b", "content": r#"{"n":2}"#}),
        ]
    );
}
