//! [`ScriptedProvider`]: a model that replays a script of responses, for
//! tests of agents, hooks and extensions without a network.

use std::collections::VecDeque;
use std::sync::Mutex;

use async_trait::async_trait;

use toolhost_core::model::{ModelError, ModelProvider, ModelRequest, ModelResponse};

/// A provider that plays back a fixed list of responses, one per call, and
/// records every request it receives. For tests, demos and replaying a
/// recorded conversation.
#[derive(Default)]
pub struct ScriptedProvider {
    script: Mutex<VecDeque<Result<ModelResponse, ModelError>>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedProvider {
    /// Plays back `responses` in order.
    pub fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self::with_results(responses.into_iter().map(Ok))
    }

    /// Plays back responses and errors in order.
    pub fn with_results(
        results: impl IntoIterator<Item = Result<ModelResponse, ModelError>>,
    ) -> Self {
        Self {
            script: Mutex::new(results.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl ModelProvider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(request.clone());
        self.script
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .unwrap_or_else(|| Err(ModelError::Other("the script has no more responses".into())))
    }
}
