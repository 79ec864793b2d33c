//! [`McpClient`]: a remote MCP server's tools as an extension (rule E3).
//!
//! Each remote tool becomes a [`Tool`] named `prefix.name` whose `call`
//! forwards to the server, so it goes through the same pipeline as every
//! other tool: validation against the server's schema, hooks, middleware,
//! timeouts, execution modes. The server's `tools/list_changed`
//! notifications replace the extension's tools in the registry.
//!
//! The server is the operator's choice, written in `toolhost.toml`; the
//! model can neither add one nor change its address. So the address is not
//! put through a [`NetPolicy`](toolhost_net::NetPolicy): that policy exists to
//! limit what tools reach on the model's behalf.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::config::{McpConfigError, McpServerConfig};
use super::connection::Connection;
use super::convert;
use toolhost_core::error::ToolError;
use toolhost_core::extension::{Extension, ExtensionContext};
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{Arguments, CallContext, Tool, ToolSpec};
use toolhost_core::{CompiledSchema, InitError};

/// An extension that registers a remote MCP server's tools.
///
/// `init` starts the server (or opens the HTTP session), lists its tools and
/// registers them; a server that cannot be reached fails the registration
/// with the reason. Afterwards:
///
/// - `notifications/tools/list_changed` replaces the tools atomically;
/// - a server that dies fails the calls that find it gone with
///   [`ToolError::Failed`] (retryable) naming it, and the next call starts it
///   again (a new process for a command) and lists its tools anew;
/// - `dispose` closes the session and stops the command.
///
/// Remote tools declare no concurrency safety and are not idempotent,
/// whatever the server's annotations say: those are hints from a party the
/// host does not control. Their `readOnlyHint` and `destructiveHint` are
/// kept as the tool's [`ToolHints`](toolhost_core::tool::ToolHints), which only rules that ask for them
/// read (rule O4). A tool whose prefixed name is not a valid tool
/// name, or whose schema does not compile, is left out with a warning.
pub struct McpClient {
    extension_name: String,
    config: Arc<McpServerConfig>,
    connection: Arc<Connection>,
    stop: CancellationToken,
    problems: Arc<Mutex<Vec<String>>>,
}

impl McpClient {
    /// An extension named `mcp.NAME` for the server `config` describes.
    /// Fails with [`McpServerConfig::validate`]'s reason.
    pub fn new(config: McpServerConfig) -> Result<Self, McpConfigError> {
        config.validate()?;
        let config = Arc::new(config);
        Ok(Self {
            extension_name: format!("mcp.{}", config.name),
            connection: Arc::new(Connection::new(config.clone())),
            config,
            stop: CancellationToken::new(),
            problems: Arc::default(),
        })
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The remote tools left out at the last listing, each with why.
    pub fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Builds the tools of one listing; records the ones left out.
fn remote_tools(
    listed: &[rmcp::model::Tool],
    connection: &Arc<Connection>,
    config: &McpServerConfig,
    problems: &Mutex<Vec<String>>,
) -> Vec<Arc<dyn Tool>> {
    let mut skipped = Vec::new();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    // One budget for the compiled patterns of all the server's schemas.
    let mut patterns = toolhost_core::schema::PatternBudget::per_plugin();
    for tool in listed {
        match convert::spec_from_mcp(tool, &config.prefix, &mut patterns) {
            Ok((spec, schema, output_schema)) => tools.push(Arc::new(RemoteTool {
                spec,
                schema,
                output_schema,
                remote: tool.name.to_string(),
                connection: connection.clone(),
            })),
            Err(error) => {
                let reason = toolhost_core::report(&error);
                tracing::warn!(target: "toolhost::mcp", server = %config.name, "tool left out: {reason}");
                skipped.push(reason);
            }
        }
    }
    *problems.lock().unwrap_or_else(|e| e.into_inner()) = skipped;
    tools
}

#[async_trait]
impl Extension for McpClient {
    fn name(&self) -> &str {
        &self.extension_name
    }

    async fn init(&self, ctx: &ExtensionContext) -> Result<(), InitError> {
        self.connection
            .ensure_connected()
            .await
            .map_err(InitError::from_error)?;
        let listed = match self.connection.list_tools().await {
            Some(listed) => listed.map_err(InitError::from_error)?,
            None => {
                return Err(InitError::new(format!(
                    "MCP server `{}` closed right after starting",
                    self.config.name
                )));
            }
        };
        ctx.set_tools(remote_tools(
            &listed,
            &self.connection,
            &self.config,
            &self.problems,
        ))?;
        tokio::spawn(follow_list_changes(
            Arc::downgrade(&self.connection),
            self.config.clone(),
            ctx.clone(),
            self.problems.clone(),
            self.stop.clone(),
        ));
        Ok(())
    }

    async fn dispose(&self) {
        self.stop.cancel();
        self.connection.close().await;
    }
}

/// Re-lists the server's tools whenever it says they changed (or it was
/// reconnected), and replaces the extension's tools with them, until the
/// extension is disposed.
async fn follow_list_changes(
    connection: std::sync::Weak<Connection>,
    config: Arc<McpServerConfig>,
    ctx: ExtensionContext,
    problems: Arc<Mutex<Vec<String>>>,
    stop: CancellationToken,
) {
    let Some(changed) = connection
        .upgrade()
        .map(|c| c.events().tools_changed.clone())
    else {
        return;
    };
    loop {
        if toolhost_core::until_cancelled(&stop, changed.notified())
            .await
            .is_none()
        {
            return;
        }
        let Some(connection) = connection.upgrade() else {
            return;
        };
        match connection.list_tools().await {
            None => {}
            Some(Err(e)) => {
                tracing::warn!(target: "toolhost::mcp", "{}", toolhost_core::report(&e))
            }
            Some(Ok(listed)) => {
                let tools = remote_tools(&listed, &connection, &config, &problems);
                match ctx.set_tools(tools) {
                    Ok(()) => tracing::info!(
                        target: "toolhost::mcp",
                        server = %config.name,
                        "tool list changed: {}",
                        ctx.tool_names().join(", ")
                    ),
                    Err(e) => tracing::warn!(
                        target: "toolhost::mcp",
                        server = %config.name,
                        "new tool list not applied: {}",
                        toolhost_core::report(&e)
                    ),
                }
            }
        }
    }
}

/// One remote tool: its (prefixed) descriptor, and the connection its calls
/// go through.
struct RemoteTool {
    spec: ToolSpec,
    /// The input schema, compiled once while listing.
    schema: CompiledSchema,
    /// The output schema, if any, compiled with it.
    output_schema: Option<CompiledSchema>,
    remote: String,
    connection: Arc<Connection>,
}

#[async_trait]
impl Tool for RemoteTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn compiled_schema(&self) -> Option<CompiledSchema> {
        Some(self.schema.clone())
    }

    fn compiled_output_schema(&self) -> Option<CompiledSchema> {
        self.output_schema.clone()
    }

    async fn call(&self, ctx: CallContext, args: Arguments) -> Result<ToolOutput, ToolError> {
        self.connection.call(&self.remote, args, &ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn e3_a_server_that_cannot_start_fails_registration_naming_it() {
        let host = toolhost_core::ToolHost::new();
        let client = McpClient::new(McpServerConfig::command(
            "ghost",
            vec!["/nonexistent/mcp-server".into()],
        ))
        .unwrap();
        let err = host.register_extension(Arc::new(client)).await.unwrap_err();
        let text = toolhost_core::report(&err);
        assert!(text.contains("cannot start MCP server `ghost`"), "{text}");
        assert!(text.contains("/nonexistent/mcp-server"), "{text}");
        assert!(host.extension_names().is_empty());
    }
}
