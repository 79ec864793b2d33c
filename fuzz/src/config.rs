//! `toolhost.toml`: parsing and resolving each table into what the host
//! would run with.

use std::path::Path;

use toolhost::config::Config;

/// A configuration file's text through [`Config::parse`], then every
/// plugin's policy, the built-in tools' settings and every MCP server's
/// table resolved on their own.
///
/// Must hold: no panic; every error after parsing names the key it
/// concerns; a resolved policy never holds more instances, memory or time
/// than the file's text allows (each bound is the file's or the default).
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // A base directory that does not exist: nothing fuzzed can touch the
    // machine's files, and every granted directory is refused as missing.
    let base = Path::new("/nonexistent/toolhost-fuzz");
    let Ok(config) = Config::parse(text, base) else {
        return;
    };
    let named = |e: toolhost::config::ConfigError| {
        assert!(!e.key().is_empty(), "an error without a key: {e}");
    };
    for plugin in config.each_plugin() {
        let section = plugin.section();
        match plugin.policy() {
            Ok(policy) => {
                if let Some(n) = section.max_instances {
                    assert_eq!(policy.max_instances, n);
                }
                if let Some(ms) = section.timeout_ms {
                    assert_eq!(policy.timeout.as_millis(), u128::from(ms));
                }
            }
            Err(e) => named(e),
        }
        if let Err(e) = plugin.wasm_path() {
            named(e);
        }
    }
    if let Err(e) = config.builtin_config() {
        named(e);
    }
    for name in config.mcp.keys() {
        if let Err(e) = config.mcp_server(name) {
            named(e);
        }
    }
}
