//! [`WasmTool`]: one of a plugin's tools, registered like a native one
//! (rule T1). Each call loads the plugin if it is not yet loaded and runs
//! in a fresh instance of it.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use toolhost_core::CompiledSchema;
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext, Tool, ToolSpec};

use crate::lazy::LazyRuntime;
use crate::plugin::Schemas;
use crate::plugin::runtime::PluginRuntime;

/// One of a plugin's tools.
pub(crate) struct WasmTool {
    spec: ToolSpec,
    schemas: Schemas,
    runtime: Arc<LazyRuntime>,
}

impl WasmTool {
    /// The tool described by `spec`, whose schemas compiled to `schemas`,
    /// run by `runtime`.
    pub(crate) fn new(spec: ToolSpec, schemas: Schemas, runtime: Arc<LazyRuntime>) -> Self {
        Self {
            spec,
            schemas,
            runtime,
        }
    }
}

#[async_trait]
impl Tool for WasmTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn compiled_schema(&self) -> Option<CompiledSchema> {
        Some(self.schemas.parameters.clone())
    }

    fn compiled_output_schema(&self) -> Option<CompiledSchema> {
        self.schemas.output.clone()
    }

    fn plugin(&self) -> Option<&str> {
        Some(&self.runtime.name)
    }

    /// The sandbox stops the call at its deadline wherever it stands (a
    /// wait for the plugin's load or for an instance, the guest running
    /// or blocked in a host call: rule C1), with a timeout naming the
    /// plugin.
    fn ends_by_deadline(&self) -> bool {
        true
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        let runtime = match self.runtime.loaded() {
            Some(runtime) => runtime,
            // Boxed: the wait holds the load's future, kilobytes that
            // every call's future would carry, and copy at each of its
            // moves, for a path taken only until the plugin is loaded.
            None => Box::pin(self.loading(ctx.deadline())).await?,
        };
        runtime.call_tool(&self.spec.name, &ctx, &args).await
    }
}

impl WasmTool {
    /// The plugin's runtime once its load ends. A load under way (the
    /// background load of a plugin listed from its cache, or one this use
    /// begins) is waited for until the call's `deadline` at most: a load
    /// this use began is given up with it, and the next use begins it
    /// again.
    async fn loading(
        &self,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<&Arc<PluginRuntime>, ToolError> {
        let Some(deadline) = deadline else {
            return self.runtime.get().await;
        };
        let waited = Instant::now();
        tokio::time::timeout_at(deadline, self.runtime.get())
            .await
            .map_err(|_elapsed| ToolError::Timeout {
                after: waited.elapsed(),
                plugin: Some(self.runtime.name.to_string()),
            })?
    }
}
