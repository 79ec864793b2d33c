//! How to reach a remote MCP server and how its tools are named: the
//! configuration of an [`McpClient`](super::McpClient), checked when it is
//! built. A leaf: it uses nothing else of the MCP module, so the client and
//! its connection both depend on it and not on each other.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use toolhost_core::Cause;
use toolhost_core::tool::ToolSpec;

/// How to reach a remote MCP server.
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// Start `argv` and speak MCP over its stdin and stdout. The command
    /// inherits toolhost's environment plus `env`; its stderr goes to the
    /// log. A command that exits is started again by the next call.
    Command {
        /// The program and its arguments; never empty.
        argv: Vec<String>,
        /// Environment variables set for it, on top of toolhost's own.
        env: BTreeMap<String, String>,
        /// Its working directory (default: toolhost's).
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP at `url` (`http://` or `https://`, TLS through the
    /// host's one TLS configuration). Redirects are not followed.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:8000/mcp`.
        url: String,
        /// Sent as `Authorization: Bearer TOKEN` on every request.
        bearer_token: Option<String>,
    },
}

impl fmt::Debug for McpTransport {
    /// Never prints the bearer token or the environment's values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { argv, env, cwd } => f
                .debug_struct("Command")
                .field("argv", argv)
                .field("env", &env.keys().collect::<Vec<_>>())
                .field("cwd", cwd)
                .finish(),
            Self::Http { url, bearer_token } => f
                .debug_struct("Http")
                .field("url", url)
                .field("bearer_token", &bearer_token.as_ref().map(|_| "…"))
                .finish(),
        }
    }
}

impl fmt::Display for McpTransport {
    /// The command line, or the URL.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { argv, .. } => f.write_str(&argv.join(" ")),
            Self::Http { url, .. } => f.write_str(url),
        }
    }
}

/// One remote server: its name, how to reach it, how its tools are named,
/// and how long starting it and each request to it may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// The server's name, used in errors ("MCP server `docs` …") and in the
    /// extension's name (`mcp.NAME`).
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Its tools are registered as `prefix.tool`; an empty prefix keeps
    /// their own names.
    pub prefix: String,
    /// The longest a listing or a call may take (a call's own deadline
    /// applies too, whichever is earlier).
    pub timeout: Duration,
    /// The longest starting the server and completing the handshake may
    /// take (a command may have to start an interpreter, or fetch packages).
    pub connect_timeout: Duration,
    /// The protocol version toolhost offers it first.
    pub protocol: McpProtocol,
}

/// The MCP protocol version toolhost speaks to a remote server.
///
/// The two differ in how a server asks the person behind a call in the
/// middle of it: under 2025-11-25 it sends an `elicitation/create` request
/// in the session (which cannot say which of several calls in flight it
/// belongs to); under 2026-07-28 it answers the call `input_required`, and
/// toolhost calls again with the answer (each question belongs to its call).
/// A server that uses session requests in the middle of a call cannot send
/// them under 2026-07-28.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum McpProtocol {
    /// `initialize`, protocol 2025-11-25 (the default).
    #[default]
    V2025_11_25,
    /// `server/discover`, protocol 2026-07-28, falling back to
    /// `initialize` and 2025-11-25 when the server does not offer it.
    V2026_07_28,
}

impl McpProtocol {
    /// The version as written in `toolhost.toml` and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The version `text` names, if toolhost speaks it.
    pub fn parse(text: &str) -> Option<Self> {
        [Self::V2025_11_25, Self::V2026_07_28]
            .into_iter()
            .find(|p| p.as_str() == text)
    }
}

impl McpServerConfig {
    /// A server started as `argv`, with its tools under `prefix` = `name`
    /// and 30 s timeouts.
    pub fn command(name: impl Into<String>, argv: Vec<String>) -> Self {
        Self::new(
            name,
            McpTransport::Command {
                argv,
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server at `url`, with its tools under `prefix` = `name` and 30 s
    /// timeouts.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::new(
            name,
            McpTransport::Http {
                url: url.into(),
                bearer_token: None,
            },
        )
    }

    /// A server reached through `transport`, with its tools under `prefix`
    /// = `name` and 30 s timeouts.
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        let name = name.into();
        Self {
            prefix: name.clone(),
            name,
            transport,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_TIMEOUT,
            protocol: McpProtocol::default(),
        }
    }

    /// Offers the server protocol `protocol` first.
    pub fn protocol(mut self, protocol: McpProtocol) -> Self {
        self.protocol = protocol;
        self
    }

    /// Uses `prefix` for the tools' names (`""` for none).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Sets the time limit of each listing and call.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the time limit of starting the server and the handshake.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Checks the configuration; the error names the field and says what is
    /// wrong: a name or prefix that cannot start a tool name, an empty
    /// command, a URL that is not http(s), a zero timeout.
    pub fn validate(&self) -> Result<(), McpConfigError> {
        let bad = |field, reason: String| {
            Err(McpConfigError {
                field,
                reason,
                source: None,
            })
        };
        if let Err(e) = ToolSpec::validate_name(&self.name) {
            return Err(McpConfigError {
                field: McpField::Name,
                reason: "invalid server name".into(),
                source: Some(Cause::new(e)),
            });
        }
        if !self.prefix.is_empty()
            && let Err(e) = ToolSpec::validate_name(&self.prefix)
        {
            return Err(McpConfigError {
                field: McpField::Prefix,
                reason: "invalid prefix".into(),
                source: Some(Cause::new(e)),
            });
        }
        match &self.transport {
            McpTransport::Command { argv, .. } => {
                if argv.first().is_none_or(|p| p.is_empty()) {
                    return bad(
                        McpField::Command,
                        "the command is empty; give the program and its arguments".into(),
                    );
                }
            }
            McpTransport::Http { url, .. } => match url.parse::<http::Uri>() {
                Err(e) => {
                    return Err(McpConfigError {
                        field: McpField::Url,
                        reason: format!("`{url}` is not a URL"),
                        source: Some(Cause::new(e)),
                    });
                }
                Ok(uri) => {
                    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
                        return bad(
                            McpField::Url,
                            format!("`{url}` is not an http:// or https:// URL"),
                        );
                    }
                }
            },
        }
        if self.timeout.is_zero() {
            return bad(McpField::Timeout, "the timeout must be above zero".into());
        }
        if self.connect_timeout.is_zero() {
            return bad(
                McpField::ConnectTimeout,
                "the connect timeout must be above zero".into(),
            );
        }
        Ok(())
    }
}

/// The part of an [`McpServerConfig`] that is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpField {
    /// [`McpServerConfig::name`].
    Name,
    /// [`McpServerConfig::prefix`].
    Prefix,
    /// The command of [`McpTransport::Command`].
    Command,
    /// The URL of [`McpTransport::Http`].
    Url,
    /// [`McpServerConfig::timeout`].
    Timeout,
    /// [`McpServerConfig::connect_timeout`].
    ConnectTimeout,
}

/// Why an [`McpServerConfig`] is refused: the field, what is wrong with
/// it, and the underlying error when there is one (its
/// [`source`](std::error::Error::source)).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
#[non_exhaustive]
pub struct McpConfigError {
    /// What is wrong.
    pub field: McpField,
    /// Why.
    pub reason: String,
    /// The underlying error, if any.
    #[source]
    pub source: Option<Cause>,
}

/// The default time limits of starting a remote server and of each request
/// to it: 30 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e3_bad_configurations_say_what_is_wrong() {
        let ok = McpServerConfig::command("docs", vec!["python3".into(), "s.py".into()]);
        ok.validate().unwrap();
        assert_eq!(ok.prefix, "docs");
        let cases = [
            (
                McpServerConfig::command("docs", vec![]),
                "the command is empty",
            ),
            (
                McpServerConfig::command("bad name", vec!["x".into()]),
                "invalid server name: `bad name` contains ' '",
            ),
            (
                McpServerConfig::command("docs", vec!["x".into()]).prefix("a/b"),
                "invalid prefix: `a/b` contains '/'",
            ),
            (
                McpServerConfig::http("web", "ftp://example.com/mcp"),
                "not an http:// or https:// URL",
            ),
            (McpServerConfig::http("web", "http://"), "is not a URL"),
            (
                McpServerConfig::http("web", "http://127.0.0.1:1/mcp").timeout(Duration::ZERO),
                "the timeout must be above zero",
            ),
        ];
        for (config, expected) in cases {
            let err = toolhost_core::report(&config.validate().unwrap_err());
            assert!(err.contains(expected), "{config:?}: {err}");
        }
        assert!(
            McpServerConfig::http("web", "http://x")
                .prefix("")
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn e3_debug_never_shows_secrets() {
        let http = McpTransport::Http {
            url: "https://x/mcp".into(),
            bearer_token: Some("s3cret".into()),
        };
        let command = McpTransport::Command {
            argv: vec!["srv".into()],
            env: BTreeMap::from([("API_KEY".into(), "s3cret".into())]),
            cwd: None,
        };
        for t in [http, command] {
            let shown = format!("{t:?}");
            assert!(!shown.contains("s3cret"), "{shown}");
        }
    }
}
