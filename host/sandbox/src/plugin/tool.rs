//! [`WasmTool`]: one of a plugin's tools, registered like a native one
//! (rule T1). Each call loads the plugin if it is not yet loaded and runs
//! in a fresh instance of it.

use std::sync::Arc;

use async_trait::async_trait;
use toolhost_core::CompiledSchema;
use toolhost_core::error::ToolError;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext, Tool, ToolSpec};

use crate::lazy::LazyRuntime;

/// One of a plugin's tools.
pub(crate) struct WasmTool {
    spec: ToolSpec,
    schema: CompiledSchema,
    runtime: Arc<LazyRuntime>,
}

impl WasmTool {
    /// The tool described by `spec`, whose parameters schema compiled to
    /// `schema`, run by `runtime`.
    pub(crate) fn new(spec: ToolSpec, schema: CompiledSchema, runtime: Arc<LazyRuntime>) -> Self {
        Self {
            spec,
            schema,
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
        Some(self.schema.clone())
    }

    fn plugin(&self) -> Option<&str> {
        Some(&self.runtime.name)
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        let runtime = self.runtime.get().await?;
        runtime.call_tool(&self.spec.name, &ctx, &args).await
    }
}
