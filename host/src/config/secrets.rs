//! `[secrets.NAME]`: values the host holds by name and never lets out in
//! the clear (rule O2). A plugin is granted secrets by name
//! (`[plugins.NAME] secrets = ["NAME"]`) and reads each through
//! `wasi:config/store` under its name; every result, error, progress
//! message and guest log of every tool is redacted of all of them, and an
//! outgoing request of a plugin that carries one to a destination it is
//! not bound to (`hosts`) is refused.
//!
//! Contract: a secret's value comes from exactly one of an environment
//! variable (`env`) or a file (`file`): a regular file (not a link), that
//! only its owner may read or write (mode 0600 or stricter), which no
//! plugin may be granted (it is a protected path). A value is at least
//! [`MIN_SECRET_BYTES`](toolhost_core::secret::MIN_SECRET_BYTES) long and
//! UTF-8; a file's one trailing newline is not part of it. Any other input
//! is a [`ConfigError::BadSecret`] naming the key.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

use serde::Deserialize;
use toolhost_core::{Secret, SecretSet};
use toolhost_net::NetPolicy;
use toolhost_sandbox::{ProtectedPath, SecretGuard};

use super::{Config, ConfigError};

/// A `[secrets.NAME]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSection {
    /// The environment variable holding the value.
    pub env: Option<String>,
    /// The file holding the value (mode 0600), relative to the file.
    pub file: Option<PathBuf>,
    /// Where a plugin may send the value (`[scheme://]host[:port]`, as a
    /// plugin's `hosts`); default: nowhere.
    #[serde(default)]
    pub hosts: Vec<String>,
}

impl Config {
    /// Every secret, its value read, in name order.
    pub fn secrets(&self) -> Result<Vec<Secret>, ConfigError> {
        self.secrets
            .iter()
            .map(|(name, section)| self.read_secret(name, section))
            .collect()
    }

    /// Every secret, as the pipeline redacts them.
    pub fn secret_set(&self) -> Result<SecretSet, ConfigError> {
        Ok(SecretSet::new(self.secrets()?))
    }

    /// Every secret and where each may be sent, as the sandbox guards them.
    pub fn secret_guard(&self) -> Result<SecretGuard, ConfigError> {
        let mut bound = Vec::new();
        for (name, section) in &self.secrets {
            let dest = NetPolicy::new(&section.hosts, &[] as &[&str]).map_err(|error| {
                ConfigError::BadGrant {
                    key: format!("secrets.{name}.hosts"),
                    error,
                }
            })?;
            bound.push((name.clone(), dest));
        }
        Ok(SecretGuard::new(self.secret_set()?, bound))
    }

    /// The secrets granted by name in `names`, whose keys start with
    /// `key` (`plugins.NAME.secrets`).
    pub(super) fn granted_secrets(
        &self,
        key: &str,
        names: &[String],
    ) -> Result<Vec<Secret>, ConfigError> {
        names
            .iter()
            .enumerate()
            .map(|(i, name)| match self.secrets.get(name) {
                Some(section) => self.read_secret(name, section),
                None => Err(ConfigError::BadSecret {
                    key: format!("{key}[{i}]"),
                    reason: format!("there is no [secrets.{name}]"),
                }),
            })
            .collect()
    }

    /// The secrets' files, which no plugin may be granted.
    pub(super) fn secret_files(&self) -> Vec<ProtectedPath> {
        self.secrets
            .iter()
            .filter_map(|(name, s)| {
                let file = s.file.as_ref()?;
                Some(ProtectedPath::new(
                    self.resolve(file),
                    format!("the file of secret `{name}`"),
                ))
            })
            .collect()
    }

    fn read_secret(&self, name: &str, s: &SecretSection) -> Result<Secret, ConfigError> {
        let bad = |key: &str, reason: String| ConfigError::BadSecret {
            key: format!("secrets.{name}{key}"),
            reason,
        };
        let value = match (&s.env, &s.file) {
            (Some(var), None) => std::env::var(var).map_err(|_| ConfigError::UnsetVariable {
                key: format!("secrets.{name}.env"),
                var: var.clone(),
            })?,
            (None, Some(file)) => {
                let path = self.resolve(file);
                let shown = path.display();
                let meta = std::fs::symlink_metadata(&path)
                    .map_err(|e| bad(".file", format!("cannot read {shown}: {e}")))?;
                if !meta.file_type().is_file() {
                    return Err(bad(".file", format!("{shown} is not a regular file")));
                }
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 != 0 {
                    return Err(bad(
                        ".file",
                        format!(
                            "{shown} has mode {mode:04o}: others may read it; make it 0600 (chmod 600)"
                        ),
                    ));
                }
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| bad(".file", format!("cannot read {shown} as text: {e}")))?;
                let text = text.strip_suffix('\n').unwrap_or(&text);
                text.strip_suffix('\r').unwrap_or(text).to_owned()
            }
            _ => {
                return Err(bad(
                    "",
                    "give exactly one of `env` (a variable) or `file` (a file of mode 0600)".into(),
                ));
            }
        };
        Secret::new(name, value).map_err(|e| bad("", e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str, dir: &Path) -> Config {
        Config::parse(text, dir).unwrap()
    }

    fn secret_file(dir: &Path, mode: u32) -> PathBuf {
        let path = dir.join("token");
        std::fs::write(&path, "file-secret-value\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn o2_a_secret_comes_from_a_private_file_or_a_variable() {
        let dir = tempfile::tempdir().unwrap();
        secret_file(dir.path(), 0o600);
        let c = config(
            "[secrets.tok]\nfile = \"token\"\nhosts = [\"api.example.com\"]\n",
            dir.path(),
        );
        let secrets = c.secrets().unwrap();
        assert_eq!(secrets[0].expose(), "file-secret-value");
        assert!(c.secret_guard().is_ok());
        // A variable every test process has (setting one needs `unsafe`).
        let path = std::env::var("PATH").unwrap();
        let c = config("[secrets.v]\nenv = \"PATH\"\n", dir.path());
        assert_eq!(c.secrets().unwrap()[0].expose(), path);
    }

    #[test]
    fn o2_bad_secrets_are_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        secret_file(dir.path(), 0o644);
        std::os::unix::fs::symlink("token", dir.path().join("link")).unwrap();
        std::fs::write(dir.path().join("short"), "abc").unwrap();
        std::fs::set_permissions(
            dir.path().join("short"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        for (text, key, words) in [
            (
                "[secrets.t]\nfile = \"token\"\n",
                "secrets.t.file",
                "mode 0644",
            ),
            (
                "[secrets.t]\nfile = \"link\"\n",
                "secrets.t.file",
                "not a regular file",
            ),
            (
                "[secrets.t]\nfile = \"missing\"\n",
                "secrets.t.file",
                "cannot read",
            ),
            (
                "[secrets.t]\nfile = \"short\"\n",
                "secrets.t",
                "shorter than 8 bytes",
            ),
            ("[secrets.t]\n", "secrets.t", "exactly one of"),
            (
                "[secrets.t]\nenv = \"A\"\nfile = \"token\"\n",
                "secrets.t",
                "exactly one of",
            ),
            (
                "[secrets.t]\nenv = \"TOOLHOST_TEST_O2_UNSET\"\n",
                "secrets.t.env",
                "not set",
            ),
        ] {
            let err = config(text, dir.path()).secrets().unwrap_err();
            assert_eq!(err.key(), key, "{text}: {err}");
            assert!(err.to_string().contains(words), "{text}: {err}");
        }
        // A plugin may not be granted the directory of a secret's file, nor
        // a secret that does not exist, nor one named like a setting.
        std::fs::create_dir(dir.path().join("s")).unwrap();
        secret_file(&dir.path().join("s"), 0o600);
        let base = "[secrets.t]\nfile = \"s/token\"\n[plugins.p]\nwasm = \"/nonexistent/p.wasm\"\n";
        for (extra, key, words) in [
            (
                "dirs = [{ host = \"s\", guest = \"/d\" }]",
                "plugins.p.dirs",
                "secret `t`",
            ),
            (
                "secrets = [\"nope\"]",
                "plugins.p.secrets[0]",
                "no [secrets.nope]",
            ),
            (
                "secrets = [\"t\"]\n[plugins.p.settings]\nt = 1",
                "plugins.p",
                "name of a setting",
            ),
        ] {
            let c = config(&format!("{base}{extra}\n"), dir.path());
            let err = c.plugin("p").unwrap().policy().unwrap_err();
            assert_eq!(err.key(), key, "{extra}: {err}");
            assert!(
                toolhost_core::report(&err).contains(words),
                "{extra}: {err}"
            );
        }
        let err = Config::parse("[secrets.t]\nvalue = \"x\"\n", dir.path()).unwrap_err();
        assert!(err.to_string().contains("value"), "{err}");
    }
}
