//! Generates the macro that expands the `extension-plugin` bindings inside a
//! plugin crate (the code in `src/generated/extension_plugin.rs`, included
//! by its absolute path), and the WIT text this SDK was built against, so
//! the SDK ships one WIT source of truth (the repository's `wit/` folder).
//!
//! Why in the plugin crate: a component's world is the union of the bindings
//! linked into it. The SDK itself binds only `tool-plugin`; an extension adds
//! the `extension-plugin` bindings in its own crate, so tool plugins never
//! carry an `extension` export they do not implement.

use std::path::Path;

fn main() {
    // Read at run time, not baked in with `env!`: a build script binary
    // reused from another checkout would otherwise read that checkout's WIT.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let wit_path = Path::new(&manifest_dir).join("../wit/plugin.wit");
    let bindings = Path::new(&manifest_dir).join("src/generated/extension_plugin.rs");
    println!("cargo:rerun-if-changed={}", wit_path.display());
    println!("cargo:rerun-if-changed={}", bindings.display());
    let bindings = bindings
        .to_str()
        .unwrap_or_else(|| panic!("{}: the SDK's path must be UTF-8", bindings.display()));
    let wit = std::fs::read_to_string(&wit_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", wit_path.display()));
    assert!(
        !wit.contains("\"###"),
        "the WIT text must not contain \"###"
    );
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"))
        .join("extension_bindings.rs");
    let code = format!(
        r####"/// Expands the `extension-plugin` bindings in the calling crate (used by
/// [`extension!`](crate::extension)).
#[doc(hidden)]
#[macro_export]
macro_rules! __extension_bindings {{
    () => {{
        include!({bindings:?});
    }};
}}

/// The WIT package this SDK was built against.
pub const WIT: &str = r###"{wit}"###;
"####
    );
    std::fs::write(&out, code).unwrap_or_else(|e| panic!("writing {}: {e}", out.display()));
}
