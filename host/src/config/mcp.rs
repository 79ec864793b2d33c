//! A `[mcp.NAME]` table into a [`McpServerConfig`]: a remote MCP server
//! whose tools join the registry (rule E3).
//!
//! Contract: [`Config::mcp_server`] returns a configuration the MCP layer
//! has validated, built from exactly one of `command` (a server started
//! over stdio, with `env` and `cwd`) and `url` (streamable HTTP, with
//! `bearer_token_env`); a key of the other transport is refused, the
//! command's directory must exist and the token's variable must be set.
//! Nothing is started here. Errors name the `mcp.NAME.KEY` at fault.

use std::path::Path;
use std::time::Duration;

use toolhost_mcp::{McpField, McpProtocol, McpServerConfig, McpTransport};

use super::{Config, ConfigError};

impl Config {
    /// The remote MCP server `name`, checked: exactly one of `command` and
    /// `url`, keys that fit the transport, the directory and the token's
    /// variable present. Errors name the key.
    pub fn mcp_server(&self, name: &str) -> Result<McpServerConfig, ConfigError> {
        let table = format!("mcp.{name}");
        let s = self
            .mcp
            .get(name)
            .ok_or_else(|| ConfigError::NotConfigured {
                key: table.clone(),
                what: "MCP server",
            })?;
        let key = |k: &str| format!("mcp.{name}.{k}");
        let mut server = match (&s.command, &s.url) {
            (Some(argv), None) => {
                if s.bearer_token_env.is_some() {
                    return Err(ConfigError::NotApplicable {
                        key: key("bearer_token_env"),
                        applies_to: "to a `url`, not a `command`",
                    });
                }
                let cwd = self.resolve(s.cwd.as_deref().unwrap_or(Path::new("")));
                let cwd = if cwd.as_os_str().is_empty() {
                    None
                } else {
                    Some(cwd)
                };
                if let Some(dir) = cwd.as_ref().filter(|d| !d.is_dir()) {
                    return Err(ConfigError::MissingDirectory {
                        key: key("cwd"),
                        path: dir.clone(),
                    });
                }
                let transport = McpTransport::Command {
                    argv: argv.clone(),
                    env: s.env.clone(),
                    cwd,
                };
                McpServerConfig::new(name, transport)
            }
            (None, Some(url)) => {
                for (k, set) in [("env", !s.env.is_empty()), ("cwd", s.cwd.is_some())] {
                    if set {
                        return Err(ConfigError::NotApplicable {
                            key: key(k),
                            applies_to: "to a `command`, not a `url`",
                        });
                    }
                }
                let bearer_token = match &s.bearer_token_env {
                    None => None,
                    Some(var) => {
                        Some(std::env::var(var).map_err(|_| ConfigError::UnsetVariable {
                            key: key("bearer_token_env"),
                            var: var.clone(),
                        })?)
                    }
                };
                McpServerConfig::new(
                    name,
                    McpTransport::Http {
                        url: url.clone(),
                        bearer_token,
                    },
                )
            }
            (Some(_), Some(_)) => {
                return Err(ConfigError::Conflict {
                    key: table,
                    reason: "give either `command` or `url`, not both",
                });
            }
            (None, None) => {
                return Err(ConfigError::Required {
                    key: table,
                    reason: "give `command` (a server started over stdio) or `url` (streamable HTTP)",
                });
            }
        };
        if let Some(prefix) = &s.prefix {
            server = server.prefix(prefix.clone());
        }
        if let Some(ms) = s.timeout_ms {
            server = server.timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = s.connect_timeout_ms {
            server = server.connect_timeout(Duration::from_millis(ms));
        }
        if let Some(version) = &s.protocol {
            let protocol =
                McpProtocol::parse(version).ok_or_else(|| ConfigError::UnknownChoice {
                    key: key("protocol"),
                    value: version.clone(),
                    choices: "2025-11-25, 2026-07-28",
                })?;
            server = server.protocol(protocol);
        }
        server.validate().map_err(|e| {
            let at = match e.field {
                McpField::Name => table.clone(),
                McpField::Prefix => key("prefix"),
                McpField::Command => key("command"),
                McpField::Url => key("url"),
                McpField::Timeout => key("timeout_ms"),
                McpField::ConnectTimeout => key("connect_timeout_ms"),
            };
            ConfigError::Invalid {
                key: at,
                reason: e.reason,
                source: e.source,
            }
        })?;
        Ok(server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(text: &str) -> Result<McpServerConfig, ConfigError> {
        Config::parse(text, Path::new("/base"))
            .unwrap()
            .mcp_server("x")
    }

    #[test]
    fn e3_an_mcp_table_takes_a_command_or_a_url_and_only_its_keys() {
        let err =
            server("[mcp.x]\ncommand = [\"a\"]\nurl = \"http://127.0.0.1:1/mcp\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Conflict { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "mcp.x: give either `command` or `url`, not both"
        );
        let err = server("[mcp.x]\nprefix = \"x\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Required { .. }), "{err:?}");
        let err = server("[mcp.x]\nurl = \"http://127.0.0.1:1/mcp\"\ncwd = \".\"\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "mcp.x.cwd: applies to a `command`, not a `url`"
        );
        let err = server("[mcp.y]\ncommand = [\"a\"]\n").unwrap_err();
        assert_eq!(err.to_string(), "mcp.x: no such MCP server");
        let ok = server("[mcp.x]\nurl = \"http://127.0.0.1:1/mcp\"\nprefix = \"docs\"\n").unwrap();
        assert_eq!(ok.prefix, "docs");
        assert_eq!(ok.protocol, McpProtocol::V2025_11_25);
    }

    #[test]
    fn e3_an_mcp_table_names_a_protocol_version_toolhost_speaks() {
        let modern =
            server("[mcp.x]\nurl = \"http://127.0.0.1:1/mcp\"\nprotocol = \"2026-07-28\"\n")
                .unwrap();
        assert_eq!(modern.protocol, McpProtocol::V2026_07_28);
        let err = server("[mcp.x]\nurl = \"http://127.0.0.1:1/mcp\"\nprotocol = \"2024-01-01\"\n")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "mcp.x.protocol: `2024-01-01` is not one of 2025-11-25, 2026-07-28"
        );
    }
}
