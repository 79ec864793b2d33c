//! [`SandboxedCode`]: the default [`CodeOps`], which runs snippets in
//! interpreter components inside the host's wasm sandbox.

use std::collections::BTreeMap;
use std::path::PathBuf;

use async_trait::async_trait;
use serde_json::json;
use tokio::sync::OnceCell;

use super::{CodeConfig, CodeOps, CodeRequest, CodeResult, Language};
use toolhost_core::error::{SandboxFault, ToolError};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext};
use toolhost_sandbox::{LoadError, LoadedPlugin, Sandbox};

/// The name interpreters are loaded under; sandbox errors name it.
const PLUGIN_NAME: &str = "run_code";

/// The tool an interpreter for `language` offers, taking `{"code": …}`.
fn interpreter_tool(language: Language) -> &'static str {
    match language {
        Language::JavaScript => "run_js",
        Language::Python => "run_py",
    }
}

/// Why an interpreter cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InterpreterError {
    /// The configuration names no interpreter.
    #[error("no interpreter is configured: run_code needs at least one language")]
    NoInterpreter,
    /// An interpreter's component file does not exist.
    #[error("the {language} interpreter {} does not exist (build the plugins first, e.g. `make plugins`)", path.display())]
    Missing {
        /// Its language.
        language: Language,
        /// The file.
        path: PathBuf,
    },
    /// A component could not be loaded, or the limits are invalid.
    #[error("the {language} interpreter")]
    Load {
        /// The language it was configured for.
        language: Language,
        /// Why.
        #[source]
        error: LoadError,
    },
    /// A component loaded but does not offer its language's tool.
    #[error("{} offers no `{tool}` tool: it is not the {language} interpreter", path.display())]
    NotAnInterpreter {
        /// The language it was configured for.
        language: Language,
        /// The component.
        path: PathBuf,
        /// The tool it should offer.
        tool: &'static str,
    },
}

impl InterpreterError {
    /// The language whose interpreter failed, if the error concerns one.
    pub fn language(&self) -> Option<Language> {
        match self {
            Self::NoInterpreter => None,
            Self::Missing { language, .. }
            | Self::Load { language, .. }
            | Self::NotAnInterpreter { language, .. } => Some(*language),
        }
    }
}

/// Runs snippets in the configured interpreter components, each run in a
/// fresh instance of the sandbox under [`CodeConfig::policy`]. Each
/// component is loaded once, by [`load`](Self::load) or on its first run.
pub struct SandboxedCode {
    sandbox: Sandbox,
    config: CodeConfig,
    plugins: BTreeMap<Language, OnceCell<LoadedPlugin>>,
}

impl SandboxedCode {
    /// Sets up the interpreters of `config`, to be loaded into `sandbox` on
    /// their first run. Fails if there is none, or a file does not exist.
    pub fn new(sandbox: Sandbox, config: CodeConfig) -> Result<Self, InterpreterError> {
        if config.interpreters.is_empty() {
            return Err(InterpreterError::NoInterpreter);
        }
        for (&language, path) in &config.interpreters {
            if !path.is_file() {
                return Err(InterpreterError::Missing {
                    language,
                    path: path.clone(),
                });
            }
        }
        let plugins = config
            .interpreters
            .keys()
            .map(|&l| (l, OnceCell::new()))
            .collect();
        Ok(Self {
            sandbox,
            config,
            plugins,
        })
    }

    /// Sets up and loads every interpreter now, so that a bad file or limit
    /// is reported here rather than by a first run.
    pub async fn load(sandbox: Sandbox, config: CodeConfig) -> Result<Self, InterpreterError> {
        let code = Self::new(sandbox, config)?;
        for language in code.config.languages() {
            if let Some(loaded) = code.plugin(language).await {
                loaded?;
            }
        }
        Ok(code)
    }

    /// Its configuration.
    pub fn config(&self) -> &CodeConfig {
        &self.config
    }

    /// The loaded interpreter of `language`, loading it if this is its
    /// first use; `None` if `language` has none. A failed load is not
    /// remembered: the next use tries again.
    pub async fn plugin(
        &self,
        language: Language,
    ) -> Option<Result<&LoadedPlugin, InterpreterError>> {
        let (cell, path) = (
            self.plugins.get(&language)?,
            &self.config.interpreters[&language],
        );
        Some(
            cell.get_or_try_init(|| async {
                let plugin = self
                    .sandbox
                    .plugin_file(PLUGIN_NAME, path)
                    .policy(self.config.policy())
                    .load()
                    .await
                    .map_err(|error| InterpreterError::Load { language, error })?;
                let tool = interpreter_tool(language);
                if !plugin.tools().iter().any(|t| t.name == tool) {
                    return Err(InterpreterError::NotAnInterpreter {
                        language,
                        path: path.clone(),
                        tool,
                    });
                }
                Ok(plugin)
            })
            .await,
        )
    }
}

#[async_trait]
impl CodeOps for SandboxedCode {
    fn languages(&self) -> Vec<Language> {
        self.config.languages()
    }

    async fn run(&self, request: CodeRequest) -> Result<CodeResult, ToolError> {
        let host_fault = |reason: String| ToolError::Sandbox {
            plugin: PLUGIN_NAME.into(),
            fault: SandboxFault::Host(reason),
        };
        let plugin = self
            .plugin(request.language)
            .await
            .ok_or_else(|| host_fault(format!("no {} interpreter", request.language)))?
            .map_err(|e| host_fault(toolhost_core::report(&e)))?;
        let mut ctx = CallContext::new();
        if let Some(left) = request.time_left {
            ctx = ctx.with_timeout(left);
        }
        let args = Arguments::from_value(&json!({ "code": request.code }))?;
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
            _ => Err(ToolError::Sandbox {
                plugin: PLUGIN_NAME.into(),
                fault: SandboxFault::InvalidOutput("the interpreter returned no text".into()),
            }),
        }
    }
}
