//! [`LoadError`]: why a plugin could not be loaded, with the cause of each
//! failure kept as its [`source`](std::error::Error::source) (print the
//! chain with [`toolhost_core::report`]).

use std::path::PathBuf;

use toolhost_core::error::ToolError;
use toolhost_core::{Cause, NameError, SchemaError};

use crate::budget::OverBudget;
use crate::cache::CacheError;
use crate::inspect::WorldError;
use crate::policy::PolicyError;
use crate::protect::GrantOverlap;

/// Why a plugin could not be loaded. Every variant names the plugin; its
/// text says what failed, and the [`source`](std::error::Error::source)
/// says why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The wasm file could not be read.
    #[error("plugin `{plugin}`: cannot read {path}")]
    Read {
        /// The plugin.
        plugin: String,
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: Cause,
    },
    /// The file's digest is not the pinned one.
    #[error("plugin `{plugin}`: sha256 mismatch: the policy pins {expected}, the file is {actual}")]
    DigestMismatch {
        /// The plugin.
        plugin: String,
        /// The pinned digest.
        expected: String,
        /// The file's digest.
        actual: String,
    },
    /// The bytes are not a valid component.
    #[error("plugin `{plugin}`: not a valid WebAssembly component")]
    Compile {
        /// The plugin.
        plugin: String,
        /// wasmtime's complaint.
        #[source]
        source: Cause,
    },
    /// The component is not a toolhost plugin of a supported version.
    #[error("plugin `{plugin}`")]
    World {
        /// The plugin.
        plugin: String,
        /// What is wrong.
        #[source]
        source: WorldError,
    },
    /// The component imports something the host does not provide.
    #[error("plugin `{plugin}`: cannot link")]
    Link {
        /// The plugin.
        plugin: String,
        /// The linker's complaint.
        #[source]
        source: Cause,
    },
    /// The policy is not acceptable.
    #[error("plugin `{plugin}`: invalid policy")]
    Policy {
        /// The plugin.
        plugin: String,
        /// What is wrong.
        #[source]
        source: PolicyRefusal,
    },
    /// The plugin's settings do not satisfy their schema, or the schema is
    /// unusable (rule O1).
    #[error("plugin `{plugin}`: bad settings")]
    Settings {
        /// The plugin.
        plugin: String,
        /// What is wrong, naming the setting.
        #[source]
        source: crate::settings::SettingsError,
    },
    /// Listing the tools failed, or a descriptor is unacceptable.
    #[error("plugin `{plugin}`: bad tool list")]
    Tools {
        /// The plugin.
        plugin: String,
        /// What is wrong.
        #[source]
        source: ToolListError,
    },
    /// The engine could not be created.
    #[error("cannot start the sandbox: {what}")]
    Engine {
        /// What was being started.
        what: &'static str,
        /// Why it failed.
        #[source]
        source: Cause,
    },
    /// The compiled-code cache cannot be used.
    #[error("cannot start the sandbox")]
    Cache(#[from] CacheError),
}

/// Why a plugin's policy is refused at load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyRefusal {
    /// The policy contradicts itself or exceeds a bound.
    #[error(transparent)]
    Invalid(#[from] PolicyError),
    /// It grants a directory that overlaps a protected path.
    #[error(transparent)]
    Overlap(#[from] GrantOverlap),
    /// Its worst case does not fit in what the host has left for plugins.
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
}

/// Why a plugin's tool list is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolListError {
    /// Calling its `list-tools` export failed.
    #[error("list-tools failed")]
    Call(#[source] ToolError),
    /// It lists more tools than its bounds allow.
    #[error("it lists {count} tools; the limit is {limit} (max_tools)")]
    TooMany {
        /// How many it listed.
        count: usize,
        /// `max_tools`.
        limit: usize,
    },
    /// A tool's name is not acceptable.
    #[error("invalid tool name")]
    Name(#[source] NameError),
    /// A description is longer than its bounds allow.
    #[error(
        "the description of `{tool}` is {len} bytes; the limit is {limit} (max_description_bytes)"
    )]
    DescriptionTooLong {
        /// The tool.
        tool: String,
        /// Its length in bytes.
        len: usize,
        /// `max_description_bytes`.
        limit: usize,
    },
    /// A schema is longer than its bounds allow.
    #[error(
        "the {schema} schema of `{tool}` is {len} bytes; the limit is {limit} (max_schema_bytes)"
    )]
    SchemaTooLong {
        /// The tool.
        tool: String,
        /// Which of its schemas.
        schema: SchemaKind,
        /// Its length in bytes.
        len: usize,
        /// `max_schema_bytes`.
        limit: usize,
    },
    /// Two tools have the same name.
    #[error("the tool `{tool}` is declared twice")]
    Duplicate {
        /// The name.
        tool: String,
    },
    /// A schema is not JSON.
    #[error("the {schema} schema of `{tool}` is not valid JSON")]
    SchemaNotJson {
        /// The tool.
        tool: String,
        /// Which of its schemas.
        schema: SchemaKind,
        /// The parser's complaint.
        #[source]
        source: Cause,
    },
    /// A schema is not a valid JSON Schema.
    #[error("the {schema} schema of `{tool}` does not compile")]
    SchemaInvalid {
        /// The tool.
        tool: String,
        /// Which of its schemas.
        schema: SchemaKind,
        /// The schema compiler's complaint.
        #[source]
        source: SchemaError,
    },
}

/// Which of a tool's schemas an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaKind {
    /// The schema of its arguments.
    Parameters,
    /// The schema of its structured output.
    Output,
}

impl std::fmt::Display for SchemaKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Parameters => "parameters",
            Self::Output => "output",
        })
    }
}
