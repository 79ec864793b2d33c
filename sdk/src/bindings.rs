//! Bindings generated from the WIT package `toolhost:plugin@0.3.0` (in the
//! repository's `wit/` folder). Plugin authors rarely need them: the
//! [`tool_plugin!`](crate::tool_plugin) and [`extension!`](crate::extension)
//! macros do the exporting.

#![allow(missing_docs, clippy::all)]

/// Bindings of the `tool-plugin` world.
pub mod tool_world {
    wit_bindgen::generate!({
        path: "../wit",
        world: "toolhost:plugin/tool-plugin",
        pub_export_macro: true,
        export_macro_name: "__export_tool_plugin",
        default_bindings_module: "toolhost_sdk::bindings::tool_world",
    });
}

pub use tool_world::toolhost::plugin::host;
pub use tool_world::toolhost::plugin::types;

include!(concat!(env!("OUT_DIR"), "/extension_bindings.rs"));
