//! Bindings generated from the WIT package `toolhost:plugin@0.3.0` (in the
//! repository's `wit/` folder). Plugin authors rarely need them: the
//! [`tool_plugin!`](crate::tool_plugin) and [`extension!`](crate::extension)
//! macros do the exporting.

#![allow(missing_docs, clippy::all)]

/// Bindings of the `tool-plugin` world (generated from `wit/plugin.wit`
/// into `src/generated/`, see `tests/generated_bindings.rs`).
pub mod tool_world {
    include!("generated/tool_plugin.rs");
}

pub use tool_world::toolhost::plugin::host;
pub use tool_world::toolhost::plugin::types;

include!(concat!(env!("OUT_DIR"), "/extension_bindings.rs"));
