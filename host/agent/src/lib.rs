//! The agent run loop over a [`ModelProvider`] (rule E2).
//!
//! A run sends the conversation and the tool list to the model, runs the tool
//! calls it asks for as one batch (through the pipeline, under the configured
//! execution mode), appends their results, and repeats until the model answers
//! without tool calls, the turn limit is reached, or the run is cancelled.
//! Lifecycle hooks fire around the run, each turn, each model call and each
//! tool execution.

mod config;
pub mod extensions;
// Always built, never part of the API: a feature for it would give tests
// and the binary different builds of this crate and everything above it.
#[doc(hidden)]
pub mod fuzzing;
pub mod providers;
pub mod scripted;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::FutureExt as _;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use config::{AgentConfigError, AgentSection, ProviderKind};
pub use toolhost_core::model::{
    AgentError, CacheHints, Message, ModelError, ModelProvider, ModelRequest, ModelResponse,
    ModelToolCall, RunOutput, StopReason, StreamEvent, StreamSink, ToolSchema, Usage,
};

use toolhost_core::ToolHost;
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::schedule::{BatchCall, BatchConfig, CallRunner};
use toolhost_core::tool::elicitation::Elicitor;
use toolhost_core::tool::{Arguments, CallContext};
use toolhost_core::{LifecycleHook, RunInfo, TurnInfo};

/// How an agent runs.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The agent's own system prompt; extension prompts follow it.
    pub system_prompt: String,
    /// Most turns (model calls) in one run.
    pub max_turns: u32,
    /// How each turn's tool calls are scheduled.
    pub batch: BatchConfig,
    /// Streams model responses: each piece reaches the lifecycle hooks'
    /// [`on_model_stream`](LifecycleHook::on_model_stream) as it arrives.
    /// Off by default.
    pub stream: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            system_prompt: String::new(),
            max_turns: 16,
            batch: BatchConfig::default(),
            stream: false,
        }
    }
}

/// An agent: a host's tools and extensions driven by a model.
#[derive(Clone)]
pub struct Agent {
    host: ToolHost,
    provider: Arc<dyn ModelProvider>,
    config: AgentConfig,
    elicitor: Option<Arc<dyn Elicitor>>,
}

impl Agent {
    /// An agent over `host`'s tools, asking `provider`, with the default
    /// configuration.
    pub fn new(host: ToolHost, provider: Arc<dyn ModelProvider>) -> Self {
        Self {
            host,
            provider,
            config: AgentConfig::default(),
            elicitor: None,
        }
    }

    /// Puts the questions the model's tool calls ask in the middle of a
    /// call (a remote MCP server's elicitation) to `elicitor`: the person
    /// the agent runs for. Without one, such a question is answered by no
    /// one, and the tool is told so.
    pub fn with_elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = Some(elicitor);
        self
    }

    /// Replaces the configuration.
    pub fn with_config(mut self, config: AgentConfig) -> Self {
        self.config = config;
        self
    }

    /// The host whose tools the agent uses.
    pub fn host(&self) -> &ToolHost {
        &self.host
    }

    /// Calls a tool through the same pipeline the model's calls take.
    pub async fn invoke_tool(
        &self,
        ctx: CallContext,
        name: &str,
        args: Arguments,
    ) -> Result<ToolOutput, ToolError> {
        self.host.invoke_tool(ctx, name, args).await
    }

    /// Runs the agent on `prompt` until a final answer, the turn limit, or
    /// `cancel`.
    pub async fn run(
        &self,
        prompt: &str,
        cancel: CancellationToken,
    ) -> Result<RunOutput, AgentError> {
        let run = RunInfo {
            run_id: fresh_run_id(),
            prompt: prompt.to_owned(),
        };
        let hooks = self.host.lifecycle_hooks();
        for h in &hooks {
            h.before_run(&run).await;
        }
        // Cancellation is checked first on every poll.
        let outcome = toolhost_core::until_cancelled(&cancel, self.run_loop(&run, &hooks, &cancel))
            .await
            .unwrap_or(Err(AgentError::Cancelled));
        for h in &hooks {
            h.after_run(&run, &outcome).await;
        }
        outcome
    }

    async fn run_loop(
        &self,
        run: &RunInfo,
        hooks: &[Arc<dyn LifecycleHook>],
        cancel: &CancellationToken,
    ) -> Result<RunOutput, AgentError> {
        let system = self.system_prompt().await;
        let mut messages = vec![Message::User {
            text: run.prompt.clone(),
        }];
        let mut usage = Usage::default();
        for turn in 1..=self.config.max_turns {
            let turn = TurnInfo {
                run_id: run.run_id.clone(),
                turn,
            };
            for h in hooks {
                h.before_turn(&turn, &messages).await;
            }
            let mut request = ModelRequest {
                system: system.clone(),
                messages: messages.clone(),
                tools: self
                    .host
                    .tool_specs()
                    .iter()
                    .map(|s| ToolSchema::from(&**s))
                    .collect(),
                cache: CacheHints::default(),
                trace: None,
            };
            for h in hooks {
                h.before_model_call(&turn, &mut request).await;
            }
            // With traces, the call is a span the provider's request
            // carries on in its headers (rule X2).
            let span = self
                .host
                .traces()
                .map(|t| t.model_call(self.provider.name(), request.trace.as_ref()));
            if let Some(span) = &span {
                request.trace = Some(span.context().clone());
            }
            let response = self.call_model(&turn, hooks, &request).await;
            if let Some(span) = span {
                span.end(response.as_ref().map(|r| &r.usage));
            }
            for h in hooks {
                h.after_model_call(&turn, &response).await;
            }
            let response = response?;
            usage += response.usage;
            let calls = response.tool_calls;
            messages.push(Message::Assistant {
                text: response.text.clone(),
                tool_calls: calls.clone(),
            });
            if calls.is_empty() {
                for h in hooks {
                    h.after_turn(&turn, &messages).await;
                }
                return Ok(RunOutput {
                    final_text: response.text.unwrap_or_default(),
                    turns: turn.turn,
                    messages,
                    usage,
                });
            }
            let results = self.run_tools(&turn, hooks, &calls, cancel).await;
            for (call, result) in calls.into_iter().zip(results) {
                messages.push(Message::ToolResult {
                    call_id: call.id,
                    name: call.name,
                    result,
                });
            }
            for h in hooks {
                h.after_turn(&turn, &messages).await;
            }
        }
        Err(AgentError::MaxTurns {
            limit: self.config.max_turns,
        })
    }

    /// One model call, streamed to the hooks when streaming is on.
    async fn call_model(
        &self,
        turn: &TurnInfo,
        hooks: &[Arc<dyn LifecycleHook>],
        request: &ModelRequest,
    ) -> Result<ModelResponse, ModelError> {
        if !self.config.stream {
            return self.provider.complete(request).await;
        }
        let sink = |event: &StreamEvent| {
            for h in hooks {
                h.on_model_stream(turn, event);
            }
        };
        self.provider.stream(request, &sink).await
    }

    async fn system_prompt(&self) -> String {
        let extensions = self.host.system_prompt().await;
        match (
            self.config.system_prompt.trim().is_empty(),
            extensions.is_empty(),
        ) {
            (_, true) => self.config.system_prompt.clone(),
            (true, false) => extensions,
            (false, false) => format!("{}\n\n{extensions}", self.config.system_prompt),
        }
    }

    /// Runs one turn's tool calls as a batch, each wrapped in the
    /// `before_tool` / `after_tool` lifecycle hooks.
    async fn run_tools(
        &self,
        turn: &TurnInfo,
        hooks: &[Arc<dyn LifecycleHook>],
        calls: &[ModelToolCall],
        cancel: &CancellationToken,
    ) -> Vec<Result<ToolOutput, ToolError>> {
        let batch: Vec<BatchCall> = calls
            .iter()
            .map(|c| BatchCall::from_model(c.id.as_str(), c.name.as_str(), &c.arguments))
            .collect();
        let host = self.host.clone();
        let hooks: Arc<[Arc<dyn LifecycleHook>]> = hooks.into();
        let turn = Arc::new(turn.clone());
        let calls: Arc<[ModelToolCall]> = calls.into();
        let elicitor = self.elicitor.clone();
        let runner: CallRunner = Arc::new(move |i, ctx, call| {
            let (host, hooks, turn, calls) =
                (host.clone(), hooks.clone(), turn.clone(), calls.clone());
            let ctx = match &elicitor {
                Some(e) => ctx.with_elicitor(e.clone()),
                None => ctx,
            };
            async move {
                let model_call = &calls[i];
                for h in hooks.iter() {
                    h.before_tool(&turn, model_call).await;
                }
                let started = Instant::now();
                let outcome = host.invoke_batch_call(ctx, call).await;
                let took = started.elapsed();
                for h in hooks.iter() {
                    h.after_tool(&turn, model_call, &outcome, took).await;
                }
                outcome
            }
            .boxed()
        });
        let parent = CallContext::new().with_cancellation(cancel.child_token());
        self.host
            .run_batch_with(&parent, batch, self.config.batch, runner)
            .await
    }
}

fn fresh_run_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("run-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests;
