//! The `[builtin]` table into a [`BuiltinConfig`]: the built-in tools, their
//! working directory, their network grants, the shell's command lists and
//! `run_code`'s interpreters and limits (rules B1, B5–B7).
//!
//! Contract: [`Config::builtin_config`] returns `None` without the table,
//! and otherwise a configuration whose every setting has been checked: the
//! working directory and each interpreter file exist, each tool name is a
//! built-in tool, the search backend is one of its choices, network rules
//! parse, and `run_code`'s limits are in range. An offered `run_code` needs
//! at least one interpreter. Errors name the `builtin.KEY` at fault.

use std::path::PathBuf;
use std::time::Duration;

use toolhost_builtin::{
    BuiltinConfig, BuiltinTool, CodeConfig, CommandPolicy, Language, SearchBackend, ShellConfig,
};
use toolhost_net::NetPolicy;
use toolhost_sandbox::MAX_PLUGIN_MEMORY;

use super::{BuiltinSection, Config, ConfigError};

/// `builtin.KEY`, for errors.
fn key(k: &str) -> String {
    format!("builtin.{k}")
}

impl Config {
    /// The built-in tools' configuration, if `[builtin]` is present.
    pub fn builtin_config(&self) -> Result<Option<BuiltinConfig>, ConfigError> {
        let Some(b) = &self.builtin else {
            return Ok(None);
        };
        let workdir = self.resolve(&b.workdir);
        if !workdir.is_dir() {
            return Err(ConfigError::MissingDirectory {
                key: key("workdir"),
                path: workdir,
            });
        }
        let mut config = BuiltinConfig::new(workdir);
        if let Some(names) = &b.tools {
            let tools = names
                .iter()
                .map(|n| {
                    BuiltinTool::ALL
                        .into_iter()
                        .find(|t| t.name() == n)
                        .ok_or_else(|| ConfigError::UnknownTool {
                            key: key("tools"),
                            name: n.clone(),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            config = config.tools(tools);
        }
        if let Some(backend) = &b.search_backend {
            config = config.search_backend(match backend.as_str() {
                "native" => SearchBackend::Native,
                "ripgrep" => SearchBackend::Ripgrep,
                "fd" => SearchBackend::Fd,
                other => {
                    return Err(ConfigError::UnknownChoice {
                        key: key("search_backend"),
                        value: other.to_owned(),
                        choices: "native, ripgrep, fd",
                    });
                }
            });
        }
        let net =
            NetPolicy::new(&b.hosts, &b.deny_hosts).map_err(|error| ConfigError::BadGrant {
                key: key("hosts"),
                error,
            })?;
        let mut policy = CommandPolicy::open().block(b.shell_block.iter().cloned());
        if let Some(allow) = &b.shell_allow {
            policy = policy.allow(allow.iter().cloned());
        }
        let shell = ShellConfig {
            policy,
            grant_env: b.shell_env.clone(),
            ..ShellConfig::default()
        };
        match self.code_config(b)? {
            Some(code) => config = config.run_code(code),
            None if config.offers(BuiltinTool::RunCode) => {
                return Err(ConfigError::Required {
                    key: key("run_code_wasm"),
                    reason: "required when `run_code` is offered (or `run_code_python_wasm`): the \
                             interpreter component, e.g. \"target/wasm32-wasip2/release/run_js.wasm\"",
                });
            }
            None => {}
        }
        Ok(Some(config.net_policy(net).shell(shell)))
    }

    /// `run_code`'s interpreters and limits, if `run_code_wasm` or
    /// `run_code_python_wasm` is set: each file must exist and the limits
    /// be in range.
    fn code_config(&self, b: &BuiltinSection) -> Result<Option<CodeConfig>, ConfigError> {
        let mut code = CodeConfig::new();
        for language in Language::ALL {
            let Some(wasm) = interpreter_path(b, language) else {
                continue;
            };
            let wasm = self.resolve(wasm);
            if !wasm.is_file() {
                return Err(ConfigError::MissingFile {
                    key: key(interpreter_key(language)),
                    path: wasm,
                });
            }
            code = code.interpreter(language, wasm);
        }
        if code.interpreters.is_empty() {
            return Ok(None);
        }
        if let Some(mb) = b.run_code_memory_mb {
            let max = MAX_PLUGIN_MEMORY >> 20;
            if mb == 0 || mb > max {
                return Err(ConfigError::OutOfRange {
                    key: key("run_code_memory_mb"),
                    reason: format!("must be between 1 and {max}, not {mb}"),
                });
            }
            code.memory_bytes = mb << 20;
        }
        if let Some(ms) = b.run_code_timeout_ms {
            if ms == 0 {
                return Err(ConfigError::OutOfRange {
                    key: key("run_code_timeout_ms"),
                    reason: "must be more than zero".into(),
                });
            }
            code.timeout = Duration::from_millis(ms);
        }
        Ok(Some(code))
    }
}

/// The `[builtin]` key naming `language`'s interpreter.
pub(super) fn interpreter_key(language: Language) -> &'static str {
    match language {
        Language::JavaScript => "run_code_wasm",
        Language::Python => "run_code_python_wasm",
    }
}

/// The path `[builtin]` gives for `language`'s interpreter, if any.
pub(super) fn interpreter_path(b: &BuiltinSection, language: Language) -> Option<&PathBuf> {
    match language {
        Language::JavaScript => b.run_code_wasm.as_ref(),
        Language::Python => b.run_code_python_wasm.as_ref(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b1_the_builtin_table_configures_the_tools_extension() {
        let dir = tempfile::tempdir().unwrap();
        let ok = "[builtin]\nworkdir = \".\"\ntools = [\"read_file\", \"grep\", \"shell\"]\nsearch_backend = \"ripgrep\"\nshell_allow = [\"ls\"]\n";
        let config = Config::parse(ok, dir.path()).unwrap();
        assert!(config.builtin_config().unwrap().is_some());
        let err = Config::parse(
            "[builtin]\nworkdir = \".\"\ntools = [\"rm_rf\"]\n",
            dir.path(),
        )
        .unwrap()
        .check()
        .unwrap_err();
        assert_eq!(err.key(), "builtin.tools");
        assert!(
            err.to_string()
                .starts_with("builtin.tools: unknown tool `rm_rf` (known: read_file,"),
            "{err}"
        );
        let err = Config::parse("[builtin]\nworkdir = \"nope\"\n", dir.path())
            .unwrap()
            .check()
            .unwrap_err();
        assert_eq!(err.key(), "builtin.workdir");
        assert!(
            matches!(err, ConfigError::MissingDirectory { .. }),
            "{err:?}"
        );
        let err = Config::parse(
            "[builtin]\nworkdir = \".\"\nsearch_backend = \"grep\"\n",
            dir.path(),
        )
        .unwrap()
        .check()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "builtin.search_backend: `grep` is not one of native, ripgrep, fd"
        );
    }

    #[test]
    fn b7_run_code_keys_are_checked_and_errors_name_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("js.wasm"), b"").unwrap();
        std::fs::write(dir.path().join("py.wasm"), b"").unwrap();
        let check = |extra: &str| {
            Config::parse(
                &format!("[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\n{extra}"),
                dir.path(),
            )
            .unwrap()
            .check()
            .unwrap_err()
        };
        let err = check("");
        assert_eq!(err.key(), "builtin.run_code_wasm");
        assert!(
            err.to_string()
                .starts_with("builtin.run_code_wasm: required when `run_code` is offered"),
            "{err}"
        );
        let err = check("run_code_wasm = \"nope.wasm\"\n");
        assert_eq!(err.key(), "builtin.run_code_wasm");
        assert_eq!(
            err.to_string(),
            format!(
                "builtin.run_code_wasm: {} does not exist (build the plugins first, e.g. `make plugins`)",
                dir.path().join("nope.wasm").display()
            )
        );
        let err = check("run_code_wasm = \"js.wasm\"\nrun_code_python_wasm = \"nope.wasm\"\n");
        assert_eq!(err.key(), "builtin.run_code_python_wasm");
        assert!(
            err.to_string()
                .ends_with("does not exist (build the plugins first, e.g. `make plugins`)")
        );
        let err = check("run_code_wasm = \"js.wasm\"\nrun_code_memory_mb = 0\n");
        assert_eq!(
            err.to_string(),
            "builtin.run_code_memory_mb: must be between 1 and 1024, not 0"
        );
        let err = check("run_code_wasm = \"js.wasm\"\nrun_code_timeout_ms = 0\n");
        assert_eq!(
            err.to_string(),
            "builtin.run_code_timeout_ms: must be more than zero"
        );
        let text = "[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\nrun_code_wasm = \"js.wasm\"\nrun_code_memory_mb = 16\nrun_code_timeout_ms = 750\n";
        let builtin = Config::parse(text, dir.path())
            .unwrap()
            .builtin_config()
            .unwrap()
            .unwrap();
        assert!(builtin.offers(BuiltinTool::RunCode));
        let code = builtin.run_code_config().unwrap();
        assert_eq!(
            code.interpreters,
            [(Language::JavaScript, dir.path().join("js.wasm"))].into()
        );
        assert_eq!(code.memory_bytes, 16 << 20);
        assert_eq!(code.timeout, Duration::from_millis(750));
        let text = "[builtin]\nworkdir = \".\"\ntools = [\"run_code\"]\nrun_code_python_wasm = \"py.wasm\"\n";
        let builtin = Config::parse(text, dir.path())
            .unwrap()
            .builtin_config()
            .unwrap()
            .unwrap();
        assert_eq!(
            builtin.run_code_config().unwrap().interpreters,
            [(Language::Python, dir.path().join("py.wasm"))].into()
        );
    }
}
