//! The prompt caching extension driving real providers against a local
//! fake server.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::providers::{AnthropicConfig, AnthropicProvider, OpenAiConfig, OpenAiProvider};
use crate::{Agent, AgentConfig, Message, ModelProvider, Usage};
use toolhost_core::ToolHost;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{FnTool, ToolSpec};
use toolhost_test_support::{HttpServer, Recorded, Reply};

/// Records the usage every model call reported, as any lifecycle hook sees it.
#[derive(Default)]
struct UsageLog(Mutex<Vec<Usage>>);

#[async_trait]
impl LifecycleHook for UsageLog {
    async fn after_model_call(
        &self,
        _turn: &TurnInfo,
        response: &Result<ModelResponse, ModelError>,
    ) {
        if let Ok(r) = response {
            self.0.lock().unwrap().push(r.usage);
        }
    }
}

/// A host with two tools registered in reverse name order, the prompt
/// cache extension, and a usage log.
async fn host(cache: &PromptCache, log: Arc<UsageLog>) -> ToolHost {
    let host = ToolHost::new();
    for name in ["zeta", "alpha"] {
        host.register_tool(FnTool::arc(
            ToolSpec::new(
                name,
                format!("The {name} tool"),
                json!({"type": "object", "properties": {"q": {"type": "string"}}}),
            )
            .concurrency_safe(true),
            move |_, _| async move { Ok(ToolOutput::text(format!("{name} done"))) },
        ))
        .unwrap();
    }
    host.register_extension(Arc::new(cache.clone()))
        .await
        .unwrap();
    host.add_lifecycle_hook(log);
    host
}

async fn run(host: ToolHost, provider: Arc<dyn ModelProvider>) {
    let agent = Agent::new(host, provider).with_config(AgentConfig {
        system_prompt: "You are a careful assistant.".into(),
        ..AgentConfig::default()
    });
    let out = agent.run("do it", CancellationToken::new()).await.unwrap();
    assert_eq!(out.final_text, "finished");
    assert_eq!(out.turns, 2);
}

/// The bytes of a request body before `marker`.
fn prefix_before<'a>(request: &'a Recorded, marker: &str) -> &'a [u8] {
    let body = std::str::from_utf8(&request.body).unwrap();
    let end = body
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {body}"));
    &request.body[..end]
}

fn has_mark(block: &Value) -> bool {
    block.get("cache_control") == Some(&json!({"type": "ephemeral"}))
}

#[tokio::test]
async fn e3_prompt_cache_prefix_is_byte_identical_across_turns_anthropic() {
    let server = HttpServer::script(vec![
        Reply::json(
            200,
            &json!({"content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "zeta", "input": {"q": "a"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "alpha", "input": {}}],
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 20, "cache_creation_input_tokens": 1500, "cache_read_input_tokens": 0, "output_tokens": 30}}),
        ),
        Reply::json(
            200,
            &json!({"content": [{"type": "text", "text": "finished"}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 40, "cache_creation_input_tokens": 60, "cache_read_input_tokens": 1500, "output_tokens": 5}}),
        ),
    ])
    .await;
    let mut config = AnthropicConfig::new("claude-test");
    config.base_url = server.url("");
    let provider = Arc::new(AnthropicProvider::new(config).unwrap());
    let cache = PromptCache::default();
    let log = Arc::new(UsageLog::default());
    run(host(&cache, log.clone()).await, provider).await;

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // Everything before the conversation — model, settings, tools, system —
    // is the same bytes on both turns.
    let first = prefix_before(&requests[0], "\"messages\":");
    let second = prefix_before(&requests[1], "\"messages\":");
    assert_eq!(first, second);
    let (a, b) = (requests[0].json(), requests[1].json());
    let tool_names: Vec<&str> = a["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tool_names, ["alpha", "zeta"]);
    assert!(!has_mark(&a["tools"][0]) && has_mark(&a["tools"][1]));
    assert!(has_mark(&a["system"][0]));
    // Turn 1 marks its only message; turn 2 marks that one again (read)
    // and the latest (the tool results).
    assert!(has_mark(&a["messages"][0]["content"][0]));
    assert!(has_mark(&b["messages"][0]["content"][0]));
    assert!(!has_mark(&b["messages"][1]["content"][1]));
    assert!(has_mark(&b["messages"][2]["content"][1]));
    assert!(!has_mark(&b["messages"][2]["content"][0]));

    assert_eq!(
        cache.stats(),
        CacheStats {
            model_calls: 2,
            input_tokens: (20 + 1500) + (40 + 60 + 1500),
            cache_read_tokens: 1500,
            cache_write_tokens: 1560,
            prefix_changes: 0
        }
    );
    let seen = log.0.lock().unwrap().clone();
    assert_eq!(
        seen.iter()
            .map(|u| (u.cache_read_tokens, u.cache_write_tokens))
            .collect::<Vec<_>>(),
        [(0, 1500), (1500, 60)]
    );
}

#[tokio::test]
async fn e3_prompt_cache_prefix_and_key_are_stable_for_openai_compatible_servers() {
    let reply = |message: Value, finish: &str, cached: u64| {
        Reply::json(
            200,
            &json!({"choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1200, "completion_tokens": 9,
                              "prompt_tokens_details": {"cached_tokens": cached}}}),
        )
    };
    let server = HttpServer::script(vec![
        reply(
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "zeta", "arguments": "{}"}}]}),
            "tool_calls",
            0,
        ),
        reply(
            json!({"role": "assistant", "content": "finished"}),
            "stop",
            1024,
        ),
    ])
    .await;
    let mut config = OpenAiConfig::new("gpt-test");
    config.base_url = server.url("/v1");
    let provider = Arc::new(OpenAiProvider::new(config).unwrap());
    let cache = PromptCache::default();
    run(host(&cache, Arc::new(UsageLog::default())).await, provider).await;

    let requests = server.requests();
    // Model, tools, cache key and the system message: the same bytes.
    let first = prefix_before(&requests[0], "{\"role\":\"user\"");
    let second = prefix_before(&requests[1], "{\"role\":\"user\"");
    assert_eq!(first, second);
    assert!(
        std::str::from_utf8(first)
            .unwrap()
            .contains("\"role\":\"system\"")
    );
    let (a, b) = (requests[0].json(), requests[1].json());
    assert_eq!(a["prompt_cache_key"], b["prompt_cache_key"]);
    assert!(
        a["prompt_cache_key"]
            .as_str()
            .unwrap()
            .starts_with("toolhost-")
    );
    let stats = cache.stats();
    assert_eq!(
        (stats.cache_read_tokens, stats.cache_write_tokens),
        (1024, 0)
    );
    assert_eq!(stats.model_calls, 2);
}

#[tokio::test]
async fn e3_prompt_cache_counts_a_changed_prefix_and_uses_a_configured_key() {
    let cache = PromptCache::new(PromptCacheConfig {
        key: Some("tenant-7".into()),
    });
    let hook = &cache.lifecycle_hooks()[0];
    let turn = |n| TurnInfo {
        run_id: "run-x".into(),
        turn: n,
    };
    let mut request = ModelRequest {
        system: "one".into(),
        messages: vec![Message::User { text: "hi".into() }],
        ..ModelRequest::default()
    };
    hook.before_model_call(&turn(1), &mut request).await;
    assert_eq!(
        request.cache,
        CacheHints {
            system: true,
            tools: true,
            messages: vec![0],
            key: Some("tenant-7".into())
        }
    );
    request.messages.push(Message::User {
        text: "more".into(),
    });
    hook.before_model_call(&turn(2), &mut request).await;
    assert_eq!(request.cache.messages, [0, 1]);
    assert_eq!(cache.stats().prefix_changes, 0);
    request.system = "two".into();
    hook.before_model_call(&turn(3), &mut request).await;
    assert_eq!(cache.stats().prefix_changes, 1);
    // A new run starts afresh.
    hook.after_run(
        &RunInfo {
            run_id: "run-x".into(),
            prompt: String::new(),
        },
        &Err(AgentError::Cancelled),
    )
    .await;
    hook.before_model_call(&turn(1), &mut request).await;
    assert_eq!(cache.stats().prefix_changes, 1);
    assert_eq!(request.cache.messages, [1]);
}

#[test]
fn e3_prompt_cache_fingerprint_depends_on_every_part_of_the_prefix() {
    let tool = |name: &str, schema: Value| ToolSchema {
        name: name.into(),
        description: "d".into(),
        parameters: schema,
    };
    let base = fingerprint("sys", &[tool("a", json!({"type": "object"}))]);
    assert_eq!(
        base,
        fingerprint("sys", &[tool("a", json!({"type": "object"}))])
    );
    assert_ne!(
        base,
        fingerprint("sys2", &[tool("a", json!({"type": "object"}))])
    );
    assert_ne!(
        base,
        fingerprint("sys", &[tool("b", json!({"type": "object"}))])
    );
    assert_ne!(
        base,
        fingerprint("sys", &[tool("a", json!({"type": "string"}))])
    );
    // Boundaries between parts count: moving text across them changes the hash.
    assert_ne!(
        fingerprint("ab", &[]),
        fingerprint("a", &[tool("b", json!(null))])
    );
}
