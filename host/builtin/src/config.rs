//! What [`BuiltinTools`](super::BuiltinTools) offers and how: the tool
//! names, and the configuration builder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[cfg(feature = "browser")]
use super::{BrowseLimits, BrowserOps};
#[cfg(feature = "run-code")]
use super::{CodeConfig, CodeOps};
use super::{FileLimits, FileOps};
#[cfg(feature = "search")]
use super::{SearchBackend, SearchLimits, SearchOps};
#[cfg(feature = "shell")]
use super::{ShellConfig, ShellOps};
#[cfg(feature = "web")]
use super::{WebLimits, WebOps};
use toolhost_net::NetPolicy;
#[cfg(feature = "run-code")]
use toolhost_sandbox::Sandbox;

/// The built-in tools, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BuiltinTool {
    /// `read_file`
    ReadFile,
    /// `write_file`
    WriteFile,
    /// `edit_file`
    EditFile,
    /// `list_dir`
    ListDir,
    /// `glob`
    Glob,
    /// `grep`
    Grep,
    /// `shell`
    Shell,
    /// `web_fetch`
    WebFetch,
    /// `browse`
    Browse,
    /// `run_code`
    RunCode,
}

impl BuiltinTool {
    /// The tool's registered name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ReadFile => "read_file",
            Self::WriteFile => "write_file",
            Self::EditFile => "edit_file",
            Self::ListDir => "list_dir",
            Self::Glob => "glob",
            Self::Grep => "grep",
            Self::Shell => "shell",
            Self::WebFetch => "web_fetch",
            Self::Browse => "browse",
            Self::RunCode => "run_code",
        }
    }

    /// The cargo feature of `toolhost-builtin` that builds this tool's
    /// family (`None`: always built).
    pub fn feature(self) -> Option<&'static str> {
        match self {
            Self::ReadFile | Self::WriteFile | Self::EditFile | Self::ListDir => None,
            Self::Glob | Self::Grep => Some("search"),
            Self::Shell => Some("shell"),
            Self::WebFetch => Some("web"),
            Self::Browse => Some("browser"),
            Self::RunCode => Some("run-code"),
        }
    }

    /// Whether this build has the tool (its family's feature is on).
    pub fn is_built(self) -> bool {
        match self {
            Self::ReadFile | Self::WriteFile | Self::EditFile | Self::ListDir => true,
            Self::Glob | Self::Grep => cfg!(feature = "search"),
            Self::Shell => cfg!(feature = "shell"),
            Self::WebFetch => cfg!(feature = "web"),
            Self::Browse => cfg!(feature = "browser"),
            Self::RunCode => cfg!(feature = "run-code"),
        }
    }

    /// Every built-in tool.
    pub const ALL: [BuiltinTool; 10] = [
        Self::ReadFile,
        Self::WriteFile,
        Self::EditFile,
        Self::ListDir,
        Self::Glob,
        Self::Grep,
        Self::Shell,
        Self::WebFetch,
        Self::Browse,
        Self::RunCode,
    ];
}

/// How [`BuiltinTools`](super::BuiltinTools) is set up. Start from
/// [`BuiltinConfig::new`]: the file and search tools (search when its
/// feature is built), local operations,
/// nothing granted on the network, and the shell, web, browser and
/// code-execution tools off.
#[derive(Clone)]
pub struct BuiltinConfig {
    pub(crate) workdir: PathBuf,
    pub(crate) tools: BTreeSet<BuiltinTool>,
    pub(crate) file_limits: FileLimits,
    #[cfg(feature = "search")]
    pub(crate) search_backend: SearchBackend,
    #[cfg(feature = "search")]
    pub(crate) search_limits: SearchLimits,
    #[cfg(feature = "shell")]
    pub(crate) shell: ShellConfig,
    pub(crate) net: NetPolicy,
    pub(crate) file_ops: Option<Arc<dyn FileOps>>,
    #[cfg(feature = "search")]
    pub(crate) search_ops: Option<Arc<dyn SearchOps>>,
    #[cfg(feature = "shell")]
    pub(crate) shell_ops: Option<Arc<dyn ShellOps>>,
    #[cfg(feature = "web")]
    pub(crate) web_limits: WebLimits,
    #[cfg(feature = "web")]
    pub(crate) web_ops: Option<Arc<dyn WebOps>>,
    #[cfg(feature = "browser")]
    pub(crate) browse_limits: BrowseLimits,
    #[cfg(feature = "browser")]
    pub(crate) browser_ops: Option<Arc<dyn BrowserOps>>,
    #[cfg(feature = "run-code")]
    pub(crate) run_code: Option<CodeConfig>,
    #[cfg(feature = "run-code")]
    pub(crate) code_ops: Option<Arc<dyn CodeOps>>,
    #[cfg(feature = "run-code")]
    pub(crate) sandbox: Option<Sandbox>,
}

impl std::fmt::Debug for BuiltinConfig {
    /// The settings, and which operations are replaced (not their values).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("BuiltinConfig");
        d.field("workdir", &self.workdir);
        d.field("tools", &self.tools);
        #[cfg(feature = "search")]
        d.field("search_backend", &self.search_backend);
        #[cfg(feature = "shell")]
        d.field("shell", &self.shell);
        d.field("net", &self.net);
        d.field("file_ops_replaced", &self.file_ops.is_some());
        #[cfg(feature = "search")]
        d.field("search_ops_replaced", &self.search_ops.is_some());
        #[cfg(feature = "shell")]
        d.field("shell_ops_replaced", &self.shell_ops.is_some());
        #[cfg(feature = "web")]
        d.field("web_ops_replaced", &self.web_ops.is_some());
        #[cfg(feature = "browser")]
        d.field("browser_ops_replaced", &self.browser_ops.is_some());
        #[cfg(feature = "run-code")]
        d.field("run_code", &self.run_code);
        #[cfg(feature = "run-code")]
        d.field("code_ops_replaced", &self.code_ops.is_some());
        d.finish_non_exhaustive()
    }
}

impl BuiltinConfig {
    /// A configuration for the working directory `workdir`.
    pub fn new(workdir: impl Into<PathBuf>) -> Self {
        Self {
            workdir: workdir.into(),
            tools: [
                BuiltinTool::ReadFile,
                BuiltinTool::WriteFile,
                BuiltinTool::EditFile,
                BuiltinTool::ListDir,
                BuiltinTool::Glob,
                BuiltinTool::Grep,
            ]
            .into_iter()
            .filter(|t| t.is_built())
            .collect(),
            file_limits: FileLimits::default(),
            #[cfg(feature = "search")]
            search_backend: SearchBackend::default(),
            #[cfg(feature = "search")]
            search_limits: SearchLimits::default(),
            #[cfg(feature = "shell")]
            shell: ShellConfig::default(),
            net: NetPolicy::deny_all(),
            file_ops: None,
            #[cfg(feature = "search")]
            search_ops: None,
            #[cfg(feature = "shell")]
            shell_ops: None,
            #[cfg(feature = "web")]
            web_limits: WebLimits::default(),
            #[cfg(feature = "web")]
            web_ops: None,
            #[cfg(feature = "browser")]
            browse_limits: BrowseLimits::default(),
            #[cfg(feature = "browser")]
            browser_ops: None,
            #[cfg(feature = "run-code")]
            run_code: None,
            #[cfg(feature = "run-code")]
            code_ops: None,
            #[cfg(feature = "run-code")]
            sandbox: None,
        }
    }

    /// Offers exactly `tools`.
    pub fn tools(mut self, tools: impl IntoIterator<Item = BuiltinTool>) -> Self {
        self.tools = tools.into_iter().collect();
        self
    }

    /// Adds `tool` to the offered tools.
    pub fn enable(mut self, tool: BuiltinTool) -> Self {
        self.tools.insert(tool);
        self
    }

    /// Removes `tool` from the offered tools.
    pub fn disable(mut self, tool: BuiltinTool) -> Self {
        self.tools.remove(&tool);
        self
    }

    /// Caps of the file tools.
    pub fn file_limits(mut self, limits: FileLimits) -> Self {
        self.file_limits = limits;
        self
    }

    #[cfg(feature = "search")]
    /// Which local search backend answers `glob` and `grep` (in process by
    /// default). A missing program falls back to the in-process backend.
    pub fn search_backend(mut self, backend: SearchBackend) -> Self {
        self.search_backend = backend;
        self
    }

    #[cfg(feature = "search")]
    /// Caps of the search tools.
    pub fn search_limits(mut self, limits: SearchLimits) -> Self {
        self.search_limits = limits;
        self
    }

    #[cfg(feature = "search")]
    /// Runs searches through `ops` instead of a local backend.
    pub fn search_ops(mut self, ops: Arc<dyn SearchOps>) -> Self {
        self.search_ops = Some(ops);
        self
    }

    #[cfg(feature = "shell")]
    /// Settings of the `shell` tool (which is off until enabled with
    /// [`enable`](Self::enable)`(BuiltinTool::Shell)`).
    pub fn shell(mut self, config: ShellConfig) -> Self {
        self.shell = config;
        self
    }

    #[cfg(feature = "shell")]
    /// Runs shell commands through `ops` instead of local processes.
    pub fn shell_ops(mut self, ops: Arc<dyn ShellOps>) -> Self {
        self.shell_ops = Some(ops);
        self
    }

    /// The network policy of `web_fetch` and `browse` (deny all by default).
    pub fn net_policy(mut self, policy: NetPolicy) -> Self {
        self.net = policy;
        self
    }

    /// Runs file operations through `ops` instead of the local filesystem.
    pub fn file_ops(mut self, ops: Arc<dyn FileOps>) -> Self {
        self.file_ops = Some(ops);
        self
    }

    #[cfg(feature = "web")]
    /// Caps of `web_fetch`.
    pub fn web_limits(mut self, limits: WebLimits) -> Self {
        self.web_limits = limits;
        self
    }

    #[cfg(feature = "web")]
    /// Runs fetches through `ops` instead of local HTTP.
    pub fn web_ops(mut self, ops: Arc<dyn WebOps>) -> Self {
        self.web_ops = Some(ops);
        self
    }

    #[cfg(feature = "browser")]
    /// Caps of `browse`.
    pub fn browse_limits(mut self, limits: BrowseLimits) -> Self {
        self.browse_limits = limits;
        self
    }

    #[cfg(feature = "browser")]
    /// Renders pages through `ops` instead of a local Chromium.
    pub fn browser_ops(mut self, ops: Arc<dyn BrowserOps>) -> Self {
        self.browser_ops = Some(ops);
        self
    }

    #[cfg(feature = "run-code")]
    /// The interpreter and limits of `run_code` (which is off until enabled
    /// with [`enable`](Self::enable)`(BuiltinTool::RunCode)`), for the
    /// default [`SandboxedCode`](super::SandboxedCode).
    pub fn run_code(mut self, config: CodeConfig) -> Self {
        self.run_code = Some(config);
        self
    }

    #[cfg(feature = "run-code")]
    /// Runs `run_code`'s snippets through `ops` instead of the local
    /// sandboxed interpreter.
    pub fn code_ops(mut self, ops: Arc<dyn CodeOps>) -> Self {
        self.code_ops = Some(ops);
        self
    }

    #[cfg(feature = "run-code")]
    /// The sandbox the local interpreter runs in (default: one of its own),
    /// to share one engine and its compiled-code cache with the host's
    /// plugins.
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Whether `tool` is offered.
    pub fn offers(&self, tool: BuiltinTool) -> bool {
        self.tools.contains(&tool)
    }

    #[cfg(feature = "run-code")]
    /// The settings of `run_code`'s local interpreter, if given.
    pub fn run_code_config(&self) -> Option<&CodeConfig> {
        self.run_code.as_ref()
    }

    /// The working directory.
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }
}
