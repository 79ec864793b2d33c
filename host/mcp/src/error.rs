//! The MCP layer's typed errors: serving, options and converting a remote
//! tool's descriptor.

use toolhost_core::{NameError, SchemaError};

/// Why serving over stdio or HTTP stopped with an error.
#[cfg(feature = "server")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The options were refused before anything was served.
    #[error("the HTTP options are invalid")]
    Options(#[from] OptionsError),
    /// The client's `initialize` did not arrive or was malformed.
    #[error("the MCP handshake on stdio failed")]
    Handshake(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The session's task ended abnormally.
    #[error("the MCP session ended abnormally")]
    Session(#[source] tokio::task::JoinError),
    /// Reading or writing the socket or the streams failed.
    #[error("serving failed")]
    Io(#[from] std::io::Error),
}

/// A value of `HttpOptions` that is refused.
#[cfg(feature = "server")]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OptionsError {
    /// The bearer token is empty or only whitespace.
    #[error("the bearer token is empty")]
    EmptyToken,
    /// An allowed origin is not `scheme://host[:port]` or `scheme://host:*`.
    #[error("allowed origin `{origin}` {why}; write scheme://host[:port] or scheme://host:*")]
    BadOrigin {
        /// The origin as given.
        origin: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The request size cap is zero.
    #[error("the request size cap must be above zero")]
    ZeroRequestCap,
    /// The session cap is zero.
    #[error("the session cap must be above zero")]
    ZeroSessionCap,
}

/// Why a remote tool's descriptor cannot become a host tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The prefixed name is not a valid tool name.
    #[error("tool name `{name}` is not acceptable")]
    InvalidName {
        /// The prefixed name.
        name: String,
        /// What is wrong with it.
        #[source]
        source: NameError,
    },
    /// The input schema does not compile as a JSON Schema.
    #[error("tool `{tool}` has a schema that does not compile")]
    Schema {
        /// The remote tool's own name.
        tool: String,
        /// The schema compiler's complaint.
        #[source]
        source: SchemaError,
    },
}
