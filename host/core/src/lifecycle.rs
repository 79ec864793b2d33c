//! Hooks around agent execution (rule E2): runs, turns, model calls and
//! tool executions. The agent fires them; extensions and embedders supply
//! them.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::ToolError;
use crate::model::{
    AgentError, Message, ModelError, ModelRequest, ModelResponse, ModelToolCall, RunOutput,
    StreamEvent,
};
use crate::output::ToolOutput;

/// Identifies an agent run for lifecycle hooks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    /// A unique id for the run.
    pub run_id: String,
    /// The prompt that started it.
    pub prompt: String,
}

/// Identifies one turn (a model call and the tool calls it asked for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnInfo {
    /// The run's id.
    pub run_id: String,
    /// The turn number, from 1.
    pub turn: u32,
}

/// Hooks around agent execution (rule E2). All methods default to doing
/// nothing; they run in registration order, one at a time, and are awaited
/// before the agent goes on.
#[async_trait]
pub trait LifecycleHook: Send + Sync {
    /// Before the run starts.
    async fn before_run(&self, run: &RunInfo) {
        let _ = run;
    }

    /// After the run ends, with its outcome.
    async fn after_run(&self, run: &RunInfo, outcome: &Result<RunOutput, AgentError>) {
        let _ = (run, outcome);
    }

    /// Before each turn, with the conversation so far.
    async fn before_turn(&self, turn: &TurnInfo, messages: &[Message]) {
        let _ = (turn, messages);
    }

    /// After each turn, with the conversation including the turn's results.
    async fn after_turn(&self, turn: &TurnInfo, messages: &[Message]) {
        let _ = (turn, messages);
    }

    /// Before each model call. The hook may adjust the request (for
    /// example, to mark cache breakpoints).
    async fn before_model_call(&self, turn: &TurnInfo, request: &mut ModelRequest) {
        let _ = (turn, request);
    }

    /// Each piece of a streamed model response, as it arrives (only when
    /// [`AgentConfig::stream`](crate::AgentConfig::stream) is on). Called
    /// on the task awaiting the model, between `before_model_call` and
    /// `after_model_call`: it must return quickly (hand the event to a
    /// channel to do slow work).
    fn on_model_stream(&self, turn: &TurnInfo, event: &StreamEvent) {
        let _ = (turn, event);
    }

    /// After each model call, with the response (text, tool calls, usage
    /// including prompt-cache reads and writes) or the error.
    async fn after_model_call(
        &self,
        turn: &TurnInfo,
        response: &Result<ModelResponse, ModelError>,
    ) {
        let _ = (turn, response);
    }

    /// Before each tool execution the model asked for.
    async fn before_tool(&self, turn: &TurnInfo, call: &ModelToolCall) {
        let _ = (turn, call);
    }

    /// After each tool execution, with its outcome and duration.
    async fn after_tool(
        &self,
        turn: &TurnInfo,
        call: &ModelToolCall,
        outcome: &Result<ToolOutput, ToolError>,
        duration: Duration,
    ) {
        let _ = (turn, call, outcome, duration);
    }
}
