//! [`CodeConfig`]: which interpreter components run which language, and
//! the limits every run is held to.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::Language;
use toolhost_sandbox::PluginPolicy;

/// The interpreters of [`SandboxedCode`](super::SandboxedCode) and their
/// limits. Start from [`CodeConfig::new`] and add an interpreter per
/// language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeConfig {
    /// The interpreter component of each language, which `make plugins`
    /// builds: `target/wasm32-wasip2/release/run_js.wasm` (the `run-js`
    /// plugin) for JavaScript, `run_py.wasm` beside it (the `run-py`
    /// plugin) for Python.
    pub interpreters: BTreeMap<Language, PathBuf>,
    /// Most linear memory a run may use, in bytes (default 64 MiB, at most
    /// [`MAX_PLUGIN_MEMORY`](toolhost_sandbox::MAX_PLUGIN_MEMORY)).
    pub memory_bytes: u64,
    /// Longest a run may take (default 10 s); the call's own deadline wins
    /// if sooner.
    pub timeout: Duration,
    /// Most runs of each interpreter at once (default 4); further runs
    /// wait.
    pub max_instances: usize,
}

impl Default for CodeConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl CodeConfig {
    /// No interpreter yet, and the default limits.
    pub fn new() -> Self {
        let defaults = PluginPolicy::default();
        Self {
            interpreters: BTreeMap::new(),
            memory_bytes: defaults.memory_bytes,
            timeout: defaults.timeout,
            max_instances: defaults.max_instances,
        }
    }

    /// Runs `language` with the interpreter component at `wasm`.
    pub fn interpreter(mut self, language: Language, wasm: impl Into<PathBuf>) -> Self {
        self.interpreters.insert(language, wasm.into());
        self
    }

    /// The languages with an interpreter, in order.
    pub fn languages(&self) -> Vec<Language> {
        self.interpreters.keys().copied().collect()
    }

    /// Every interpreter's policy: these limits, and nothing granted — no
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
