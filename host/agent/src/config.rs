//! The `[agent]` section of a configuration file, and building a provider
//! and an [`AgentConfig`] from it.
//!
//! ```toml
//! [agent]
//! provider = "anthropic"          # or "openai" (any chat-completions server)
//! model = "claude-sonnet-4-5"
//! base_url = "https://api.anthropic.com"   # optional; else the *_BASE_URL variable, else the default
//! api_key_env = "ANTHROPIC_API_KEY"        # optional; the variable holding the key
//! max_turns = 16
//! max_tokens = 4096
//! stream = true
//! ```
//!
//! Keys are never written in the file: only the name of the environment
//! variable that holds one. Unknown keys are rejected by name.

use std::sync::Arc;
#[cfg(feature = "http")]
use std::time::Duration;

use serde::Deserialize;

use super::AgentConfig;
pub use super::providers::AgentConfigError;
#[cfg(feature = "http")]
use super::providers::ApiKey;
#[cfg(feature = "http")]
use super::providers::HttpConfig;
#[cfg(feature = "anthropic")]
use super::providers::{ANTHROPIC_API_KEY_ENV, AnthropicConfig, AnthropicProvider};
#[cfg(feature = "openai")]
use super::providers::{OPENAI_API_KEY_ENV, OpenAiConfig, OpenAiProvider};
use toolhost_core::model::ModelProvider;

/// Which API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProviderKind {
    /// OpenAI chat completions, or any server that speaks them.
    #[serde(rename = "openai")]
    OpenAi,
    /// The Anthropic Messages API.
    #[serde(rename = "anthropic")]
    Anthropic,
}

/// The `[agent]` section: which model to drive, where, and how.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSection {
    /// `"openai"` or `"anthropic"`.
    pub provider: ProviderKind,
    /// The model name.
    pub model: String,
    /// The API's base URL. Unset: the provider's `*_BASE_URL` variable,
    /// else its public endpoint.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the key. Unset: `OPENAI_API_KEY`
    /// (optional, local servers need none) or `ANTHROPIC_API_KEY`
    /// (required). Set: the variable must hold a key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Most turns in one run (at least 1).
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    /// Most output tokens per response. Unset: the server decides
    /// (OpenAI-compatible) or 8192 (Anthropic, which requires a value).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature. Unset: the server decides.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Stream responses (text reaches the lifecycle hooks as it arrives).
    #[serde(default = "default_stream")]
    pub stream: bool,
    /// The agent's own system prompt; extension prompts follow it.
    #[serde(default)]
    pub system_prompt: String,
    /// Retries of a failed model call (429, 5xx, transport).
    #[serde(default)]
    pub max_retries: Option<u32>,
    /// The longest silence, in seconds, while waiting for response bytes.
    #[serde(default)]
    pub read_timeout_secs: Option<u64>,
    /// Mark prompt-cache breakpoints and report cache use (the
    /// [`PromptCache`](crate::extensions::PromptCache) extension). Default on.
    #[serde(default = "default_stream")]
    pub prompt_cache: bool,
    /// Add the project's instruction files (`AGENTS.md` and `rules_files`)
    /// from the working directory up to the repository root to the system
    /// prompt (the [`ProjectRules`](crate::extensions::ProjectRules)
    /// extension). Default off.
    #[serde(default)]
    pub project_rules: bool,
    /// Other instruction file names looked for besides `AGENTS.md`.
    #[serde(default)]
    pub rules_files: Vec<String>,
    /// Folders of skills (each subfolder with a `SKILL.md`), offered through
    /// the [`Skills`](crate::extensions::Skills) extension; relative paths
    /// are resolved against the configuration file.
    #[serde(default)]
    pub skills: Vec<std::path::PathBuf>,
}

fn default_max_turns() -> u32 {
    AgentConfig::default().max_turns
}

fn default_stream() -> bool {
    true
}

impl AgentSection {
    /// Builds the provider, reading the key and base URL from the process
    /// environment.
    pub fn build_provider(&self) -> Result<Arc<dyn ModelProvider>, AgentConfigError> {
        self.build_provider_with(&|name| std::env::var(name).ok())
    }

    /// Builds the provider, reading variables through `env`.
    pub fn build_provider_with(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Arc<dyn ModelProvider>, AgentConfigError> {
        self.check()?;
        #[cfg(not(feature = "http"))]
        let _ = env;
        #[cfg(feature = "http")]
        let mut http = HttpConfig::default();
        #[cfg(feature = "http")]
        if let Some(retries) = self.max_retries {
            http.retry.max_retries = retries;
        }
        #[cfg(feature = "http")]
        if let Some(secs) = self.read_timeout_secs {
            http.read_timeout = Duration::from_secs(secs);
        }
        match self.provider {
            #[cfg(not(feature = "openai"))]
            ProviderKind::OpenAi => Err(AgentConfigError::NotBuilt { provider: "openai" }),
            #[cfg(not(feature = "anthropic"))]
            ProviderKind::Anthropic => Err(AgentConfigError::NotBuilt {
                provider: "anthropic",
            }),
            #[cfg(feature = "openai")]
            ProviderKind::OpenAi => {
                let mut config = OpenAiConfig::from_lookup(&self.model, env);
                config.api_key = self.api_key(env, OPENAI_API_KEY_ENV, false)?;
                if let Some(url) = &self.base_url {
                    config.base_url = url.clone();
                }
                config.max_tokens = self.max_tokens;
                config.temperature = self.temperature;
                config.http = http;
                Ok(Arc::new(OpenAiProvider::new(config)?))
            }
            #[cfg(feature = "anthropic")]
            ProviderKind::Anthropic => {
                let mut config = AnthropicConfig::from_lookup(&self.model, env);
                config.api_key = self.api_key(env, ANTHROPIC_API_KEY_ENV, true)?;
                if let Some(url) = &self.base_url {
                    config.base_url = url.clone();
                }
                if let Some(max) = self.max_tokens {
                    config.max_tokens = max;
                }
                config.temperature = self.temperature;
                config.http = http;
                Ok(Arc::new(AnthropicProvider::new(config)?))
            }
        }
    }

    /// The agent settings of this section (turn limit, streaming, system
    /// prompt); the batch settings keep their defaults.
    pub fn agent_config(&self) -> AgentConfig {
        AgentConfig {
            system_prompt: self.system_prompt.clone(),
            max_turns: self.max_turns,
            stream: self.stream,
            ..AgentConfig::default()
        }
    }

    fn check(&self) -> Result<(), AgentConfigError> {
        if self.max_turns == 0 {
            return Err(AgentConfigError::Invalid {
                field: "max_turns",
                reason: "must be at least 1".into(),
            });
        }
        if self.max_tokens == Some(0) {
            return Err(AgentConfigError::Invalid {
                field: "max_tokens",
                reason: "must be at least 1".into(),
            });
        }
        if let Some(t) = self.temperature.filter(|t| !(0.0..=2.0).contains(t)) {
            return Err(AgentConfigError::Invalid {
                field: "temperature",
                reason: format!("{t} is outside 0 to 2"),
            });
        }
        if self
            .api_key_env
            .as_deref()
            .is_some_and(|v| v.trim().is_empty())
        {
            return Err(AgentConfigError::Invalid {
                field: "api_key_env",
                reason: "the variable name is empty".into(),
            });
        }
        Ok(())
    }

    #[cfg(feature = "http")]
    /// The key from the configured variable (which must then be set), else
    /// from the provider's default variable (required or not).
    fn api_key(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        default_var: &str,
        required: bool,
    ) -> Result<Option<ApiKey>, AgentConfigError> {
        let (var, required) = match &self.api_key_env {
            Some(var) => (var.as_str(), true),
            None => (default_var, required),
        };
        match env(var).filter(|v| !v.trim().is_empty()) {
            Some(key) => Ok(Some(ApiKey::new(key))),
            None if required => Err(AgentConfigError::MissingApiKey { var: var.into() }),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn section(value: serde_json::Value) -> Result<AgentSection, serde_json::Error> {
        serde_json::from_value(value)
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn e2_agent_section_rejects_unknown_keys_by_name() {
        let err = section(json!({"provider": "openai", "model": "m", "max_turn": 3})).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `max_turn`"),
            "{err}"
        );
        let err = section(json!({"provider": "gemini", "model": "m"})).unwrap_err();
        assert!(err.to_string().contains("gemini"), "{err}");
        assert!(err.to_string().contains("openai"), "{err}");
    }

    #[test]
    fn e2_agent_section_defaults_and_agent_config() {
        let s = section(
            json!({"provider": "anthropic", "model": "claude", "system_prompt": "Be brief."}),
        )
        .unwrap();
        assert_eq!(s.max_turns, 16);
        assert!(s.stream);
        let config = s.agent_config();
        assert_eq!(config.max_turns, 16);
        assert!(config.stream);
        assert_eq!(config.system_prompt, "Be brief.");
    }

    #[cfg(all(feature = "openai", feature = "anthropic"))]
    #[test]
    fn e2_agent_section_builds_each_provider_from_the_environment() {
        let openai = section(json!({"provider": "openai", "model": "llama3", "base_url": "http://127.0.0.1:11434/v1"}))
            .unwrap();
        // A local OpenAI-compatible server needs no key.
        let provider = openai.build_provider_with(&env(&[])).unwrap();
        assert_eq!(provider.name(), "openai");

        let anthropic = section(json!({"provider": "anthropic", "model": "claude"})).unwrap();
        assert_eq!(
            anthropic.build_provider_with(&env(&[])).err().unwrap(),
            AgentConfigError::MissingApiKey {
                var: "ANTHROPIC_API_KEY".into()
            }
        );
        let provider = anthropic
            .build_provider_with(&env(&[("ANTHROPIC_API_KEY", "sk-ant-secret")]))
            .unwrap();
        assert_eq!(provider.name(), "anthropic");

        let custom =
            section(json!({"provider": "openai", "model": "m", "api_key_env": "MY_KEY"})).unwrap();
        assert_eq!(
            custom
                .build_provider_with(&env(&[("OPENAI_API_KEY", "x")]))
                .err()
                .unwrap(),
            AgentConfigError::MissingApiKey {
                var: "MY_KEY".into()
            }
        );
    }

    #[test]
    fn e2_agent_section_names_bad_values() {
        let cases = [
            (
                json!({"provider": "openai", "model": "m", "max_turns": 0}),
                "max_turns",
            ),
            (json!({"provider": "openai", "model": " "}), "model"),
            (
                json!({"provider": "openai", "model": "m", "base_url": "localhost:8080"}),
                "base_url",
            ),
            (
                json!({"provider": "anthropic", "model": "m", "max_tokens": 0}),
                "max_tokens",
            ),
            (
                json!({"provider": "openai", "model": "m", "temperature": 7.0}),
                "temperature",
            ),
        ];
        for (value, field) in cases {
            let err = section(value)
                .unwrap()
                .build_provider_with(&env(&[("ANTHROPIC_API_KEY", "k")]))
                .err()
                .unwrap();
            assert!(
                matches!(&err, AgentConfigError::Invalid { field: f, .. } if *f == field),
                "{field}: {err}"
            );
        }
    }
}
