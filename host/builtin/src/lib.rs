//! Built-in tools (rules B1–B7): an extension configured with a working
//! directory that offers file, search, shell, web, browser and
//! code-execution tools.
//!
//! | tool | family trait | concurrency safe | idempotent |
//! |---|---|---|---|
//! | `read_file`, `list_dir` | [`FileOps`] | yes | yes |
//! | `write_file` | [`FileOps`] | no | yes |
//! | `edit_file` | [`FileOps`] | no | no |
//! | `glob`, `grep` | [`SearchOps`] | yes | yes |
//! | `shell` | [`ShellOps`] | no | no |
//! | `web_fetch` | [`WebOps`] | yes | yes |
//! | `browse` | [`BrowserOps`] | yes | no |
//! | `run_code` | [`CodeOps`] | yes | yes |
//!
//! Every tool talks only to its family's operations trait (rule B2); the
//! local implementations are the default and any of them can be replaced,
//! for example by one that runs the operation in a sandbox or on another
//! machine.
//!
//! Deny by default: file tools are confined to the working directory by a
//! capability handle ([`Workdir`]); the shell, `web_fetch`, `browse` and
//! `run_code` are off unless enabled, the network tools reach only what the
//! [`NetPolicy`](toolhost_net::NetPolicy) grants, and `run_code`'s snippets
//! run in the wasm sandbox with nothing granted.
//!
//! Each family but the file tools is a cargo feature, all on by default:
//! `search` (the grep and ignore crates), `shell`, `web` (reqwest,
//! html2text), `browser` (implies `web`) and `run-code` (the wasm sandbox).
//! A configuration that enables a tool whose feature is off is refused by
//! [`BuiltinTools::new`], naming the feature.

use std::future::Future;
use std::io;
use std::sync::Arc;

use async_trait::async_trait;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::de::DeserializeOwned;

use toolhost_core::error::ToolError;
use toolhost_core::extension::Extension;
use toolhost_core::output::ToolOutput;
use toolhost_core::tool::{CallContext, FnTool, Tool, ToolSpec};
#[cfg(feature = "run-code")]
use toolhost_sandbox::Sandbox;

#[cfg(feature = "browser")]
pub mod browse;
#[cfg(feature = "run-code")]
pub mod code;
mod config;
mod file_tools;
pub mod fs;
// Always built, never part of the API: a feature for it would give tests
// and the binary different builds of this crate and everything above it.
#[doc(hidden)]
pub mod fuzzing;
// `pre_exec` and process-group kills (SAFETY at each block).
#[cfg(any(feature = "search", feature = "shell", feature = "browser"))]
#[allow(unsafe_code)]
mod process;
#[cfg(feature = "search")]
pub mod search;
#[cfg(feature = "shell")]
pub mod shell;
mod text;
#[cfg(feature = "web")]
pub mod web;
pub mod workdir;

#[cfg(feature = "browser")]
pub use browse::{BrowseLimits, BrowserOps, LocalBrowser};
#[cfg(feature = "run-code")]
pub use code::{CodeConfig, CodeOps, Language, SandboxedCode};
pub use config::{BuiltinConfig, BuiltinTool};
pub use file_tools::FileLimits;
pub use fs::{DirEntryInfo, EntryKind, FileOps, LocalFileOps};
#[cfg(feature = "search")]
pub use search::{SearchBackend, SearchLimits, SearchOps};
#[cfg(feature = "shell")]
pub use shell::{CommandPolicy, Containment, LocalShell, ShellConfig, ShellOps};
#[cfg(feature = "web")]
pub use web::{LocalWeb, WebLimits, WebOps};
pub use workdir::Workdir;

/// The built-in tools extension (rule B1), named `builtin`.
pub struct BuiltinTools {
    tools: Vec<Arc<dyn Tool>>,
    workdir: Arc<Workdir>,
}

impl BuiltinTools {
    /// Opens the working directory and builds the configured tools. Fails
    /// if the working directory cannot be opened, or if `run_code` is
    /// enabled with neither [`CodeOps`] nor an interpreter file that exists.
    pub fn new(config: BuiltinConfig) -> io::Result<Self> {
        if let Some(tool) = config.tools.iter().find(|t| !t.is_built()) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "the `{}` tool is not built in; enable the `{}` feature of toolhost-builtin",
                    tool.name(),
                    tool.feature().unwrap_or_default()
                ),
            ));
        }
        let workdir = Arc::new(Workdir::open(&config.workdir)?);
        let on = |t| config.tools.contains(&t);
        let file_ops = config
            .file_ops
            .clone()
            .unwrap_or_else(|| Arc::new(LocalFileOps::new(workdir.clone())));
        #[cfg_attr(not(feature = "search"), allow(unused_mut))]
        let mut tools = file_tools::file_tools(&file_ops, &config.file_limits, on);
        #[cfg(feature = "search")]
        {
            let search_ops = config.search_ops.clone().unwrap_or_else(|| {
                search::local_search(
                    config.search_backend,
                    workdir.clone(),
                    config.search_limits.max_collected,
                )
            });
            tools.extend(search::search_tools(&search_ops, &config.search_limits, on));
        }
        #[cfg(feature = "shell")]
        if on(BuiltinTool::Shell) {
            let ops = config.shell_ops.clone().unwrap_or_else(|| {
                let mut local = LocalShell::new(workdir.clone());
                for name in &config.shell.grant_env {
                    if let Some(value) = std::env::var_os(name) {
                        local = local.env(name, value);
                    }
                }
                Arc::new(local)
            });
            tools.push(shell::shell_tool(ops, config.shell.clone()));
        }
        #[cfg(feature = "web")]
        if on(BuiltinTool::WebFetch) {
            let ops = config
                .web_ops
                .clone()
                .unwrap_or_else(|| Arc::new(LocalWeb::new(config.net.clone())));
            tools.push(web::web_fetch_tool(ops, config.web_limits.clone()));
        }
        #[cfg(feature = "browser")]
        if on(BuiltinTool::Browse) {
            let ops = config
                .browser_ops
                .clone()
                .unwrap_or_else(|| Arc::new(LocalBrowser::new(config.net.clone())));
            tools.push(browse::browse_tool(ops, config.browse_limits.clone()));
        }
        #[cfg(feature = "run-code")]
        if on(BuiltinTool::RunCode) {
            tools.push(code::run_code_tool(code_ops(&config)?));
        }
        tools.sort_by(|a, b| a.spec().name.cmp(&b.spec().name));
        Ok(Self { tools, workdir })
    }

    /// The opened working directory.
    pub fn workdir(&self) -> &Workdir {
        &self.workdir
    }
}

/// `run_code`'s operations: the configured ones, else the sandboxed
/// interpreter (loaded on its first run).
#[cfg(feature = "run-code")]
fn code_ops(config: &BuiltinConfig) -> io::Result<Arc<dyn CodeOps>> {
    if let Some(ops) = &config.code_ops {
        return Ok(ops.clone());
    }
    let Some(code) = &config.run_code else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "run_code is enabled without an interpreter: give BuiltinConfig::run_code the \
             interpreters' wasm files, or BuiltinConfig::code_ops",
        ));
    };
    let sandbox = match &config.sandbox {
        Some(s) => s.clone(),
        None => Sandbox::new(None).map_err(io::Error::other)?,
    };
    let ops = SandboxedCode::new(sandbox, code.clone()).map_err(|e| match e {
        code::InterpreterError::Missing { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        code::InterpreterError::NoInterpreter => io::Error::new(io::ErrorKind::InvalidInput, e),
        other => io::Error::other(other),
    })?;
    Ok(Arc::new(ops))
}

/// The name the built-in tools are registered under, as one extension.
pub const EXTENSION_NAME: &str = "builtin";

#[async_trait]
impl Extension for BuiltinTools {
    fn name(&self) -> &str {
        EXTENSION_NAME
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.tools.clone()
    }
}

/// The JSON Schema of `A`, derived from its fields and doc comments (as
/// the SDK derives a plugin's), without the `$schema` and `title` keys:
/// the arguments struct is the one description of a tool's parameters.
/// Bounds that depend on the configuration are set with [`constrain`].
pub(crate) fn schema_of<A: schemars::JsonSchema>() -> serde_json::Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(A)).expect("a derived schema serializes");
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// Sets `key` of the schema of property `property` to `value` (a bound or
/// a description that names a configured limit). Panics if the property
/// does not exist: the tools' tests build every schema.
pub(crate) fn constrain(
    schema: &mut serde_json::Value,
    property: &str,
    key: &str,
    value: serde_json::Value,
) {
    let target = schema
        .pointer_mut(&format!("/properties/{property}"))
        .and_then(serde_json::Value::as_object_mut)
        .unwrap_or_else(|| panic!("the schema has no property `{property}`"));
    target.insert(key.to_owned(), value);
}

/// A tool whose arguments decode into `A` (with the decoder's error naming
/// the offending path) before `f` runs.
pub(crate) fn typed_tool<A, F, Fut>(spec: ToolSpec, f: F) -> Arc<dyn Tool>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(CallContext, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    let tool = FnTool::new(
        spec,
        move |ctx, args| -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            match args.deserialize::<A>() {
                Ok(a) => f(ctx, a).boxed(),
                Err(e) => futures::future::ready(Err(e)).boxed(),
            }
        },
    );
    // Derived from `A` (the b1 test builds every one), so its validator
    // can wait for the first call instead of a server's start.
    Arc::new(tool.with_schema_built_on_first_use())
}

#[cfg(test)]
mod feature_tests {
    use super::*;

    #[test]
    fn b1_every_tool_names_the_feature_that_builds_it() {
        for tool in BuiltinTool::ALL {
            // Exactly the file tools are always built.
            assert_eq!(
                tool.feature().is_none(),
                tool.name().contains("file") || tool.name() == "list_dir"
            );
        }
    }

    #[cfg(not(feature = "shell"))]
    #[test]
    fn b1_a_tool_whose_family_is_not_built_is_refused_naming_the_feature() {
        let dir = tempfile::tempdir().unwrap();
        let config = BuiltinConfig::new(dir.path()).enable(BuiltinTool::Shell);
        let err = BuiltinTools::new(config).err().expect("refused");
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        assert!(
            err.to_string().contains("enable the `shell` feature"),
            "{err}"
        );
    }
}

#[cfg(test)]
mod schema_tests {
    use super::*;
    use toolhost_core::CompiledSchema;

    /// Every tool this build has, with local operations.
    fn all_tools() -> (tempfile::TempDir, Vec<Arc<dyn Tool>>) {
        let dir = tempfile::tempdir().unwrap();
        let mut config = BuiltinConfig::new(dir.path());
        for tool in BuiltinTool::ALL {
            if tool.is_built() && tool != BuiltinTool::RunCode {
                config = config.enable(tool);
            }
        }
        let tools = BuiltinTools::new(config).unwrap().tools();
        (dir, tools)
    }

    #[test]
    fn b1_schemas_derive_from_the_argument_types_and_are_closed_and_described() {
        let (_dir, tools) = all_tools();
        assert!(tools.len() >= 4);
        for tool in &tools {
            let spec = tool.spec();
            let schema = &spec.parameters;
            println!("{}: {schema}", spec.name);
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
            assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
            let properties = schema["properties"].as_object().unwrap();
            for (name, property) in properties {
                assert!(
                    property["description"]
                        .as_str()
                        .is_some_and(|d| !d.is_empty()),
                    "{}.{name} has no description",
                    spec.name
                );
            }
            CompiledSchema::compile(schema).unwrap();
            // Handed to the registry deferred, and it builds.
            let deferred = tool.compiled_schema().expect("a deferred schema");
            assert!(!deferred.is_built(), "{}", spec.name);
            deferred.prepare().unwrap();
        }
        // Bounds that come from the configuration are in the schema.
        #[cfg(feature = "search")]
        {
            let glob = tools.iter().find(|t| t.spec().name == "glob").unwrap();
            let limit = &glob.spec().parameters["properties"]["limit"];
            assert_eq!(limit["maximum"], SearchLimits::default().max_limit);
            assert_eq!(limit["minimum"], 1);
        }
    }
}
