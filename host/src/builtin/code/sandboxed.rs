//! [`SandboxedCode`]: the default [`CodeOps`], which runs snippets in an
//! interpreter component inside the host's wasm sandbox.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::OnceCell;

use super::{CodeOps, CodeRequest, CodeResult, Language};
use crate::error::{SandboxFault, ToolError};
use crate::output::ToolOutput;
use crate::sandbox::{LoadError, LoadedPlugin, PluginPolicy, Sandbox};
use crate::tool::{Arguments, CallContext};

/// The name the interpreter is loaded under; sandbox errors name it.
const PLUGIN_NAME: &str = "run_code";

/// The interpreter's tool for `language`.
fn interpreter_tool(language: Language) -> &'static str {
    match language {
        Language::JavaScript => "run_js",
    }
}

/// Where the interpreter is and how it is bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeConfig {
    /// The JavaScript interpreter component: the `run-js` plugin, built to
    /// `target/wasm32-wasip2/release/run_js.wasm` by `make plugins`.
    pub wasm: PathBuf,
    /// Most linear memory a run may use, in bytes (default 64 MiB, at most
    /// [`MAX_PLUGIN_MEMORY`](crate::sandbox::MAX_PLUGIN_MEMORY)).
    pub memory_bytes: u64,
    /// Longest a run may take (default 10 s); the call's own deadline wins
    /// if sooner.
    pub timeout: Duration,
    /// Most runs at once (default 4); further runs wait.
    pub max_instances: usize,
}

impl CodeConfig {
    /// The interpreter at `wasm` with the default limits.
    pub fn new(wasm: impl Into<PathBuf>) -> Self {
        let defaults = PluginPolicy::default();
        Self {
            wasm: wasm.into(),
            memory_bytes: defaults.memory_bytes,
            timeout: defaults.timeout,
            max_instances: defaults.max_instances,
        }
    }

    /// The interpreter's policy: these limits, and nothing granted — no
    /// directories, no network, no environment variables.
    pub fn policy(&self) -> PluginPolicy {
        PluginPolicy {
            memory_bytes: self.memory_bytes,
            timeout: self.timeout,
            max_instances: self.max_instances,
            ..PluginPolicy::default()
        }
    }
}

/// Why the interpreter cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterpreterError {
    /// The component file does not exist.
    #[error("the interpreter {} does not exist (build the plugins first, e.g. `make plugins`)", .0.display())]
    Missing(PathBuf),
    /// The component could not be loaded, or the limits are invalid.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The component loaded but does not offer the interpreter's tool.
    #[error("{} offers no `{tool}` tool: it is not the interpreter", path.display())]
    NotAnInterpreter {
        /// The component.
        path: PathBuf,
        /// The tool it should offer.
        tool: &'static str,
    },
}

/// Runs snippets in the interpreter component, each in a fresh instance of
/// the sandbox under [`CodeConfig::policy`]. The component is loaded once,
/// by [`load`](Self::load) or on the first run.
pub struct SandboxedCode {
    sandbox: Sandbox,
    config: CodeConfig,
    plugin: OnceCell<LoadedPlugin>,
}

impl SandboxedCode {
    /// Sets up the interpreter at `config.wasm`, to be loaded into
    /// `sandbox` on the first run. Fails if the file does not exist.
    pub fn new(sandbox: Sandbox, config: CodeConfig) -> Result<Self, InterpreterError> {
        if !config.wasm.is_file() {
            return Err(InterpreterError::Missing(config.wasm));
        }
        Ok(Self {
            sandbox,
            config,
            plugin: OnceCell::new(),
        })
    }

    /// Sets up and loads the interpreter now, so that a bad file or limit
    /// is reported here rather than by the first run.
    pub async fn load(sandbox: Sandbox, config: CodeConfig) -> Result<Self, InterpreterError> {
        let code = Self::new(sandbox, config)?;
        code.plugin().await?;
        Ok(code)
    }

    /// Its configuration.
    pub fn config(&self) -> &CodeConfig {
        &self.config
    }

    /// The loaded interpreter, loading it if this is the first use. A
    /// failed load is not remembered: the next use tries again.
    pub async fn plugin(&self) -> Result<&LoadedPlugin, InterpreterError> {
        self.plugin
            .get_or_try_init(|| async {
                let plugin = self
                    .sandbox
                    .load(PLUGIN_NAME, &self.config.wasm, self.config.policy(), None)
                    .await?;
                for language in Language::ALL {
                    let tool = interpreter_tool(language);
                    if !plugin.tools().iter().any(|t| t.name == tool) {
                        return Err(InterpreterError::NotAnInterpreter {
                            path: self.config.wasm.clone(),
                            tool,
                        });
                    }
                }
                Ok(plugin)
            })
            .await
    }
}

#[async_trait]
impl CodeOps for SandboxedCode {
    fn languages(&self) -> Vec<Language> {
        Language::ALL.to_vec()
    }

    async fn run(&self, request: CodeRequest) -> Result<CodeResult, ToolError> {
        let plugin = self.plugin().await.map_err(|e| ToolError::Sandbox {
            plugin: PLUGIN_NAME.into(),
            fault: SandboxFault::Host(e.to_string()),
        })?;
        let mut ctx = CallContext::new();
        if let Some(left) = request.time_left {
            ctx = ctx.with_timeout(left);
        }
        let args = Arguments::from_value(&json!({ "code": request.code }));
        let output = plugin
            .call_tool(interpreter_tool(request.language), &ctx, &args)
            .await?;
        match output {
            ToolOutput::Dual { for_llm, for_user } => Ok(CodeResult {
                summary: for_llm,
                transcript: for_user,
            }),
            ToolOutput::Text { text } | ToolOutput::Silent { text } => Ok(CodeResult {
                summary: text.clone(),
                transcript: text,
            }),
            ToolOutput::Blocks { .. } | ToolOutput::Offloaded(_) => Err(ToolError::Sandbox {
                plugin: PLUGIN_NAME.into(),
                fault: SandboxFault::InvalidOutput("the interpreter returned no text".into()),
            }),
        }
    }
}
