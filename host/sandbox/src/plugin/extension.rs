//! [`WasmExtension`]: a loaded plugin as the host's extension (rule E4):
//! its tools, and for an extension-plugin its system prompt and its before
//! and after hooks, all run in the sandbox with the plugin's limits.

use std::sync::Arc;

use async_trait::async_trait;
use toolhost_core::extension::Extension;
use toolhost_core::hook::{AfterHook, BeforeHook, HookScope};
use toolhost_core::tool::{Tool, ToolSpec};

use super::Schemas;
use super::hook::WasmHook;
use super::tool::WasmTool;
use crate::inspect::PluginWorld;
use crate::lazy::LazyRuntime;

/// A loaded plugin registered as an extension: its tools, and for an
/// extension-plugin its prompt and hooks (rule E4).
pub(crate) struct WasmExtension {
    pub(crate) runtime: Arc<LazyRuntime>,
    pub(crate) world: PluginWorld,
    pub(crate) specs: Vec<(ToolSpec, Schemas)>,
}

impl WasmExtension {
    fn is_extension(&self) -> bool {
        self.world == PluginWorld::ExtensionPlugin
    }
}

#[async_trait]
impl Extension for WasmExtension {
    fn name(&self) -> &str {
        &self.runtime.name
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.specs
            .iter()
            .map(|(spec, schema)| {
                Arc::new(WasmTool::new(
                    spec.clone(),
                    schema.clone(),
                    self.runtime.clone(),
                )) as Arc<dyn Tool>
            })
            .collect()
    }

    async fn system_prompt(&self) -> Option<String> {
        if !self.is_extension() {
            return None;
        }
        let lazy = &self.runtime;
        let result = async {
            let rt = lazy.get().await?;
            rt.system_prompt()
                .await?
                .map(|text| lazy.message("the system prompt", text))
                .transpose()
        }
        .await;
        result.unwrap_or_else(|e| {
            tracing::warn!(plugin = %lazy.name, error = %e, "the extension's system prompt failed; leaving it out");
            None
        })
    }

    fn before_hooks(&self) -> Vec<(HookScope, Arc<dyn BeforeHook>)> {
        if !self.is_extension() {
            return Vec::new();
        }
        vec![(HookScope::Global, Arc::new(WasmHook(self.runtime.clone())))]
    }

    fn after_hooks(&self) -> Vec<(HookScope, Arc<dyn AfterHook>)> {
        if !self.is_extension() {
            return Vec::new();
        }
        vec![(HookScope::Global, Arc::new(WasmHook(self.runtime.clone())))]
    }
}
