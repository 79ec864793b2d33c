//! The MCP layer's typed errors: serving, options, converting a remote
//! tool's descriptor, and reaching and listing a remote server.

use toolhost_core::{NameError, SchemaError};

#[cfg(feature = "client")]
use crate::rmcp_error_text::RemoteError;

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
    /// Both a static bearer token and an OAuth resource server were given:
    /// a request could be let in by either, so one must be chosen.
    #[error("a static bearer token and OAuth ([auth]) exclude each other; choose one")]
    TokenAndOAuth,
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
    /// The output schema does not compile as a JSON Schema.
    #[error("tool `{tool}` has an output schema that does not compile")]
    OutputSchema {
        /// The remote tool's own name.
        tool: String,
        /// The schema compiler's complaint.
        #[source]
        source: SchemaError,
    },
}

/// Why a remote MCP server could not be started or connected to. Each
/// variant names the server; the cause is the source.
#[cfg(feature = "client")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ConnectError {
    /// The server's command could not be started.
    #[error("cannot start MCP server `{server}` (`{command}`)")]
    Spawn {
        /// The server's name.
        server: String,
        /// The command line, joined with spaces.
        command: String,
        /// Why the process could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The command started but the MCP handshake with it failed.
    #[error("MCP server `{server}` (`{command}`) failed the MCP handshake")]
    Handshake {
        /// The server's name.
        server: String,
        /// The command line, joined with spaces.
        command: String,
        /// rmcp's error, in words.
        #[source]
        source: RemoteError,
    },
    /// The HTTP client for a URL could not be set up (TLS configuration,
    /// client options).
    #[cfg(feature = "http")]
    #[error("MCP server `{server}`: cannot set up HTTP")]
    HttpSetup {
        /// The server's name.
        server: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The server's URL could not be reached, or the handshake over HTTP
    /// failed.
    #[cfg(feature = "http")]
    #[error("cannot connect to MCP server `{server}` at {url}")]
    Http {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
        /// rmcp's error, in words.
        #[source]
        source: RemoteError,
    },
    /// The server has a URL, but this build has no HTTP transport.
    #[cfg(not(feature = "http"))]
    #[error(
        "cannot connect to MCP server `{server}` at {url}: the HTTP transport is not built \
         in; enable the `http` feature of toolhost-mcp"
    )]
    NoHttp {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
    },
    /// The handshake did not finish within the connect timeout.
    #[error(
        "MCP server `{server}` did not complete the MCP handshake within {} ms",
        after.as_millis()
    )]
    HandshakeTimeout {
        /// The server's name.
        server: String,
        /// The connect timeout.
        after: std::time::Duration,
    },
}

/// Why a connected MCP server's tools could not be listed. Each variant
/// names the server; the cause is the source.
#[cfg(feature = "client")]
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ListError {
    /// The server answered `tools/list` with an error, or the request
    /// failed on the way.
    #[error("MCP server `{server}`: tools/list failed")]
    Request {
        /// The server's name.
        server: String,
        /// rmcp's error, in words.
        #[source]
        source: RemoteError,
    },
    /// The server did not answer `tools/list` within its timeout.
    #[error(
        "MCP server `{server}`: tools/list did not answer within {} ms",
        after.as_millis()
    )]
    Timeout {
        /// The server's name.
        server: String,
        /// The server's timeout.
        after: std::time::Duration,
    },
}

#[cfg(all(test, feature = "client"))]
mod tests {
    use std::error::Error as _;
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_failed_start_keeps_the_os_error_as_its_source() {
        let err = ConnectError::Spawn {
            server: "ghost".into(),
            command: "/nonexistent/mcp-server".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let source = err.source().expect("a source");
        assert_eq!(
            source.downcast_ref::<std::io::Error>().map(|e| e.kind()),
            Some(std::io::ErrorKind::NotFound)
        );
        assert!(
            toolhost_core::report(&err)
                .starts_with("cannot start MCP server `ghost` (`/nonexistent/mcp-server`): "),
            "{}",
            toolhost_core::report(&err)
        );
        let init = toolhost_core::InitError::from_error(err);
        assert!(init.source().is_some());
        assert!(
            toolhost_core::report(&init).starts_with("cannot start MCP server `ghost`"),
            "{}",
            toolhost_core::report(&init)
        );
    }

    #[test]
    fn a_failed_listing_keeps_rmcps_error_as_its_source() {
        let err = ListError::Request {
            server: "docs".into(),
            source: RemoteError::service(rmcp::ServiceError::TransportClosed),
        };
        let source = err.source().expect("a source");
        assert_eq!(source.to_string(), "its connection closed");
        let remote = source.downcast_ref::<RemoteError>().expect("rmcp's error");
        assert!(matches!(
            remote.get_ref().downcast_ref::<rmcp::ServiceError>(),
            Some(rmcp::ServiceError::TransportClosed)
        ));
        assert_eq!(
            toolhost_core::report(&err),
            "MCP server `docs`: tools/list failed: its connection closed"
        );
        let timeout = ListError::Timeout {
            server: "docs".into(),
            after: Duration::from_millis(1500),
        };
        assert_eq!(
            timeout.to_string(),
            "MCP server `docs`: tools/list did not answer within 1500 ms"
        );
    }
}
