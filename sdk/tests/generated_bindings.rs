//! The SDK's WIT bindings are generated once and kept in `src/generated/`,
//! so that building a plugin does not build wit-bindgen's code generator
//! (a WIT parser, a component encoder and a Rust formatter: about half of a
//! fresh plugin build). This test generates them again, with the options
//! the `generate!` macro would be given, and fails when a file differs from
//! what the WIT in `../wit` gives now.
//!
//! After changing the WIT, write them again with:
//!
//! ```text
//! TOOLHOST_SDK_REGENERATE=1 cargo test --release -p toolhost-sdk --test generated_bindings
//! ```

use std::path::{Path, PathBuf};

use wit_bindgen_core::wit_parser::Resolve;
use wit_bindgen_core::{Files, WorldGenerator};
use wit_bindgen_rust::{Opts, WithOption};

/// The standard `wasi:config/store` interface that `settings` reads.
const CONFIG_STORE_WIT: &str = include_str!("../src/generated/config_store.wit");

fn sdk_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The bindings of `world` in `resolve`, formatted, as `generate!` writes
/// them.
fn generate(
    mut resolve: Resolve,
    package: wit_bindgen_core::wit_parser::PackageId,
    world: &str,
    opts: Opts,
) -> String {
    let world = resolve.select_world(&[package], Some(world)).unwrap();
    let mut files = Files::default();
    opts.build()
        .generate(&mut resolve, world, &mut files)
        .unwrap();
    let (_, source) = files.iter().next().unwrap();
    String::from_utf8(source.to_vec()).unwrap()
}

fn formatted() -> Opts {
    Opts {
        format: true,
        ..Opts::default()
    }
}

/// The `tool-plugin` world, which the SDK itself exports (`bindings.rs`).
fn tool_plugin() -> String {
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_path(sdk_dir().join("../wit")).unwrap();
    generate(
        resolve,
        package,
        "toolhost:plugin/tool-plugin",
        Opts {
            pub_export_macro: true,
            export_macro_name: Some("__export_tool_plugin".into()),
            default_bindings_module: Some("toolhost_sdk::bindings::tool_world".into()),
            ..formatted()
        },
    )
}

/// The `extension-plugin` world, expanded inside an extension's own crate
/// by `extension!`, its shared types and host functions taken from the
/// SDK's `tool-plugin` bindings.
fn extension_plugin() -> String {
    let wit = std::fs::read_to_string(sdk_dir().join("../wit/plugin.wit")).unwrap();
    let mut resolve = Resolve::default();
    let package = resolve.push_str("plugin.wit", &wit).unwrap();
    generate(
        resolve,
        package,
        "toolhost:plugin/extension-plugin",
        Opts {
            runtime_path: Some("toolhost_sdk::wit_bindgen::rt".into()),
            with: vec![
                (
                    "toolhost:plugin/types@0.3.0".into(),
                    WithOption::Path("toolhost_sdk::bindings::types".into()),
                ),
                (
                    "toolhost:plugin/host@0.3.0".into(),
                    WithOption::Path("toolhost_sdk::bindings::host".into()),
                ),
            ],
            ..formatted()
        },
    )
}

/// `wasi:config/store`'s `imports` world (`settings.rs`).
fn config_store() -> String {
    let mut resolve = Resolve::default();
    let package = resolve
        .push_str("config_store.wit", CONFIG_STORE_WIT)
        .unwrap();
    generate(resolve, package, "imports", formatted())
}

#[test]
fn generated_bindings_match_the_wit() {
    let regenerate = std::env::var_os("TOOLHOST_SDK_REGENERATE").is_some();
    let mut stale = Vec::new();
    for (file, code) in [
        ("tool_plugin.rs", tool_plugin()),
        ("extension_plugin.rs", extension_plugin()),
        ("config_store.rs", config_store()),
    ] {
        let path = sdk_dir().join("src/generated").join(file);
        if regenerate {
            std::fs::write(&path, &code).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(code.as_str()) {
            stale.push(
                Path::new("sdk/src/generated")
                    .join(file)
                    .display()
                    .to_string(),
            );
        }
    }
    assert!(
        stale.is_empty(),
        "{} no longer match the WIT; write them again with \
         `TOOLHOST_SDK_REGENERATE=1 cargo test --release -p toolhost-sdk --test generated_bindings`",
        stale.join(", ")
    );
}
