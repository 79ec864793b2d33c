//! [`PromptCache`]: lets providers cache the stable start of every prompt.
//!
//! Before each model call it sets the request's
//! [`CacheHints`]: a breakpoint after the system prompt,
//! one after the tool list, one after the latest message (the conversation
//! so far is what the next turn repeats) and one after the message marked on
//! the previous turn (so the next request reads what this one wrote), plus a
//! cache key. It sorts the tool list by name, so the prefix does not depend
//! on registration order, and counts a turn whose system prompt or tools
//! differ from the previous turn's, since that throws the cache away. After
//! each call it adds the provider's cache reads and writes to
//! [`CacheStats`].
//!
//! Register it before hooks that add per-turn text to the request, so the
//! marked messages are the stable ones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::{
    AgentError, CacheHints, ModelError, ModelRequest, ModelResponse, RunOutput, ToolSchema,
};
use toolhost_core::{Extension, LifecycleHook, RunInfo, TurnInfo};

/// Settings of [`PromptCache`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptCacheConfig {
    /// The cache key sent to providers that route requests by one
    /// (OpenAI's `prompt_cache_key`). `None` derives one from the stable
    /// prefix (a hash of the system prompt and the tools), so runs with the
    /// same prefix share it. It is sent as is: put no secret in it.
    pub key: Option<String>,
}

/// Prompt-cache figures summed over the model calls seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Successful model calls.
    pub model_calls: u64,
    /// Their input tokens, cached or not.
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Turns whose system prompt or tool list differed from the previous
    /// turn of the same run (each such change invalidates the cache).
    pub prefix_changes: u64,
}

/// The prompt caching extension. Cloning shares its statistics.
#[derive(Clone, Default)]
pub struct PromptCache {
    hook: Arc<CacheHook>,
}

impl PromptCache {
    /// The extension with `config`.
    pub fn new(config: PromptCacheConfig) -> Self {
        Self {
            hook: Arc::new(CacheHook {
                config,
                state: Mutex::default(),
            }),
        }
    }

    /// The figures so far.
    pub fn stats(&self) -> CacheStats {
        self.hook.state().stats
    }
}

#[async_trait]
impl Extension for PromptCache {
    fn name(&self) -> &str {
        "prompt_cache"
    }

    fn lifecycle_hooks(&self) -> Vec<Arc<dyn LifecycleHook>> {
        vec![self.hook.clone()]
    }
}

#[derive(Default)]
struct CacheHook {
    config: PromptCacheConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    stats: CacheStats,
    runs: HashMap<String, RunState>,
}

/// What the hook remembers of a run in progress.
struct RunState {
    prefix: u64,
    last_marked: Option<usize>,
}

impl CacheHook {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl LifecycleHook for CacheHook {
    async fn before_model_call(&self, turn: &TurnInfo, request: &mut ModelRequest) {
        request.tools.sort_by(|a, b| a.name.cmp(&b.name));
        let prefix = fingerprint(&request.system, &request.tools);
        let latest = request.messages.len().checked_sub(1);
        let mut state = self.state();
        let previous = state.runs.insert(
            turn.run_id.clone(),
            RunState {
                prefix,
                last_marked: latest,
            },
        );
        if let Some(prev) = &previous
            && prev.prefix != prefix
        {
            state.stats.prefix_changes += 1;
            tracing::warn!(
                run = %turn.run_id,
                turn = turn.turn,
                "the system prompt or tool list changed within the run; the prompt cache starts over"
            );
        }
        let mut messages: Vec<usize> = previous
            .and_then(|p| p.last_marked)
            .into_iter()
            .chain(latest)
            .collect();
        messages.dedup();
        request.cache = CacheHints {
            system: true,
            tools: true,
            messages,
            key: Some(
                self.config
                    .key
                    .clone()
                    .unwrap_or_else(|| format!("toolhost-{prefix:016x}")),
            ),
        };
    }

    async fn after_model_call(
        &self,
        turn: &TurnInfo,
        response: &Result<ModelResponse, ModelError>,
    ) {
        let Ok(response) = response else { return };
        let usage = response.usage;
        let mut state = self.state();
        let stats = &mut state.stats;
        stats.model_calls += 1;
        stats.input_tokens += usage.input_tokens;
        stats.cache_read_tokens += usage.cache_read_tokens;
        stats.cache_write_tokens += usage.cache_write_tokens;
        tracing::debug!(
            run = %turn.run_id,
            turn = turn.turn,
            input_tokens = usage.input_tokens,
            cache_read_tokens = usage.cache_read_tokens,
            cache_write_tokens = usage.cache_write_tokens,
            "prompt cache"
        );
    }

    async fn after_run(&self, run: &RunInfo, _outcome: &Result<RunOutput, AgentError>) {
        self.state().runs.remove(&run.run_id);
    }
}

/// A stable 64-bit FNV-1a hash of the prefix: the same text and tools give
/// the same value in every process and on every platform.
fn fingerprint(system: &str, tools: &[ToolSchema]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes.iter().chain(&[0xff]) {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(PRIME);
        }
    };
    feed(system.as_bytes());
    for tool in tools {
        feed(tool.name.as_bytes());
        feed(tool.description.as_bytes());
        feed(tool.parameters.to_string().as_bytes());
    }
    hash
}

#[cfg(all(test, feature = "openai", feature = "anthropic"))]
mod tests;
