//! Support for tests of the sandbox and the crates above it.

use std::path::PathBuf;

/// The component built from the plugin crate `name` (of `plugins/` or
/// `tests/plugins/`), where `make plugins` puts it:
/// `target/wasm32-wasip2/release/NAME.wasm` under the workspace's root.
/// Panics, saying how to build it, when it is missing.
pub fn wasm(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/wasm32-wasip2/release")
        .join(format!("{name}.wasm"));
    assert!(
        path.exists(),
        "{} is missing: build the plugins first (`make plugins`)",
        path.display()
    );
    path
}
