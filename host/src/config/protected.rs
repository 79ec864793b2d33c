//! The host's own paths, which no plugin may be granted (rule C5).
//!
//! Contract: [`Config::protected_paths`] lists every path of the host's
//! state the configuration knows of — this file, the compiled-code cache
//! and its key, every plugin's wasm file, the lock file, the trusted keys
//! and `run_code`'s interpreters — each with a description for errors. A
//! plugin's policy is refused when one of its directory grants is, contains
//! or lies inside one of them ([`PluginConfig::policy`](super::PluginConfig::policy)),
//! and the built host's sandbox refuses the same for plugins loaded later.

use toolhost_builtin::Language;
use toolhost_sandbox::{ProtectedPath, Sandbox};
use toolhost_supply::Source;

use super::Config;
use super::builtin::interpreter_path;

impl Config {
    /// The host's own paths that no plugin may be granted (rule C5): this
    /// file, the compiled-code cache and its key, every plugin's and
    /// interpreter's wasm, the lock file and the trusted keys.
    pub fn protected_paths(&self) -> Vec<ProtectedPath> {
        let mut paths = Vec::new();
        if let Some(file) = &self.file {
            paths.push(ProtectedPath::new(file, "the configuration file"));
        }
        if let Some(dir) = self.cache_dir() {
            paths.push(ProtectedPath::new(
                Sandbox::cache_key_path(&dir),
                "the compiled-code cache's key",
            ));
            paths.push(ProtectedPath::new(dir, "the compiled-code cache"));
        }
        for plugin in self.each_plugin() {
            if let Ok(Source::File(path)) = plugin.source() {
                paths.push(ProtectedPath::new(
                    path,
                    format!("the wasm of plugin `{}`", plugin.name()),
                ));
            }
        }
        paths.push(ProtectedPath::new(self.lock_path(), "the lock file"));
        if let Some(trust) = &self.trust {
            for (name, key) in &trust.keys {
                paths.push(ProtectedPath::new(
                    self.resolve(key),
                    format!("the trusted key `{name}`"),
                ));
            }
        }
        paths.extend(self.secret_files());
        if let Some(b) = &self.builtin {
            for language in Language::ALL {
                if let Some(p) = interpreter_path(b, language) {
                    paths.push(ProtectedPath::new(
                        self.resolve(p),
                        format!("run_code's {language} interpreter"),
                    ));
                }
            }
        }
        paths
    }
}

#[cfg(test)]
mod tests {
    use crate::config::ConfigError;

    use super::*;

    #[test]
    fn c5_a_grant_over_the_configuration_or_a_plugins_wasm_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("plugins")).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        let file = root.join("toolhost.toml");
        std::fs::write(
            &file,
            r#"
            [host]
            cache_dir = "cache"

            [plugins.greedy]
            wasm = "plugins/g.wasm"
            dirs = [{ host = ".", guest = "/all", mode = "rw" }]

            [plugins.neighbour]
            wasm = "plugins/n.wasm"
            dirs = [{ host = "plugins", guest = "/p", mode = "rw" }]

            [plugins.cache_thief]
            wasm = "plugins/c.wasm"
            dirs = [{ host = "cache", guest = "/c", mode = "rw" }]

            [plugins.fine]
            wasm = "plugins/f.wasm"
            dirs = [{ host = "data", guest = "/d", mode = "rw" }]
            "#,
        )
        .unwrap();
        std::fs::create_dir_all(root.join("cache")).unwrap();
        let config = Config::load(&file).unwrap();
        let policy = |name: &str| config.plugin(name).unwrap().policy();
        let err = policy("greedy").unwrap_err();
        assert_eq!(err.key(), "plugins.greedy.dirs");
        assert!(matches!(err, ConfigError::ProtectedPath { .. }), "{err:?}");
        assert!(err.to_string().contains("the configuration file"), "{err}");
        assert!(
            err.to_string().contains(&file.display().to_string()),
            "{err}"
        );
        let err = policy("neighbour").unwrap_err();
        assert!(err.to_string().contains("the wasm of plugin `"), "{err}");
        let err = policy("cache_thief").unwrap_err();
        assert!(err.to_string().contains("the compiled-code cache"), "{err}");
        policy("fine").unwrap();
    }
}
