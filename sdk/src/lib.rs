//! Write toolhost plugins in a few lines.
//!
//! A plugin is a WebAssembly component that offers tools (and, for an
//! extension, a system-prompt text and hooks). With this crate, a tool is a
//! function from a typed argument struct to a `Result`:
//!
//! ```
//! use toolhost_sdk::prelude::*;
//!
//! /// Arguments of `add`. The doc comments become the schema's descriptions.
//! #[derive(Deserialize, JsonSchema)]
//! struct AddArgs {
//!     /// The first number.
//!     a: f64,
//!     /// The second number.
//!     b: f64,
//! }
//!
//! fn add(args: AddArgs, _call: &CallInfo) -> Result<Output, ToolError> {
//!     Ok(Output::text((args.a + args.b).to_string()))
//! }
//!
//! fn register(tools: &mut Tools) {
//!     tools.add("add", "Adds two numbers", add).safe().idempotent();
//! }
//!
//! toolhost_sdk::tool_plugin!(register);
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`; the
//! component is `target/wasm32-wasip2/release/<crate>.wasm`. See the crate's
//! README for the whole walk from an empty folder to a loaded plugin.
//!
//! The schema of each tool comes from its argument type (`schemars`); the
//! host validates arguments against it before the call, and the SDK decodes
//! them into the type, reporting the JSON path of any mismatch.

#![warn(missing_docs)]

// The README's Rust blocks, compiled and run as doctests, so the first code a
// plugin author copies cannot go stale.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod bindings;
mod extension;
#[cfg(feature = "http")]
pub mod http;
pub mod log;
mod output;
pub mod progress;
pub mod settings;
mod tools;

#[doc(hidden)]
pub mod __private;

pub use extension::{AfterDecision, CallOutcome, Decision, Extension, HookCall};
pub use output::{
    Annotations, Audience, ContentBlock, EmbeddedResource, Output, ResourceContents, ResourceLink,
};
pub use tools::{CallInfo, ToolBuilder, ToolError, Tools};

/// What a plugin usually needs, in one import.
pub mod prelude {
    pub use crate::{
        AfterDecision, CallInfo, CallOutcome, ContentBlock, Decision, Extension, HookCall, Output,
        ToolError, Tools,
    };
    pub use schemars::JsonSchema;
    pub use serde::{Deserialize, Serialize};
}

pub use schemars;
pub use serde;
pub use serde_json;
#[doc(hidden)]
pub use wit_bindgen;

/// Exports a tool plugin (world `toolhost:plugin/tool-plugin`). Give it a
/// function `fn(&mut Tools)` that adds the plugin's tools.
#[macro_export]
macro_rules! tool_plugin {
    ($register:path) => {
        struct __ToolhostToolPlugin;

        impl $crate::bindings::tool_world::exports::toolhost::plugin::tool::Guest for __ToolhostToolPlugin {
            fn list_tools() -> ::std::vec::Vec<$crate::bindings::types::ToolDescriptor> {
                $crate::__private::list_tools($register)
            }

            fn call_tool(
                name: ::std::string::String,
                arguments: ::std::string::String,
                info: $crate::bindings::types::CallInfo,
            ) -> ::std::result::Result<$crate::bindings::types::ToolOutput, $crate::bindings::types::ToolError> {
                $crate::__private::call_tool($register, &name, &arguments, info)
            }
        }

        $crate::bindings::tool_world::__export_tool_plugin!(__ToolhostToolPlugin with_types_in $crate::bindings::tool_world);
    };
}

/// Exports an extension (world `toolhost:plugin/extension-plugin`): a type that
/// implements [`Extension`], and optionally a `fn(&mut Tools)` for the tools
/// it offers too.
#[macro_export]
macro_rules! extension {
    ($ext:ident) => {
        $crate::extension!($ext, tools = $crate::__private::no_tools);
    };
    ($ext:ident, tools = $register:path) => {
        mod __toolhost_extension_bindings {
            $crate::__extension_bindings!();
        }

        impl __toolhost_extension_bindings::exports::toolhost::plugin::tool::Guest for $ext {
            fn list_tools() -> ::std::vec::Vec<$crate::bindings::types::ToolDescriptor> {
                $crate::__private::list_tools($register)
            }

            fn call_tool(
                name: ::std::string::String,
                arguments: ::std::string::String,
                info: $crate::bindings::types::CallInfo,
            ) -> ::std::result::Result<$crate::bindings::types::ToolOutput, $crate::bindings::types::ToolError> {
                $crate::__private::call_tool($register, &name, &arguments, info)
            }
        }

        impl __toolhost_extension_bindings::exports::toolhost::plugin::extension::Guest for $ext {
            fn system_prompt() -> ::std::option::Option<::std::string::String> {
                <$ext as $crate::Extension>::system_prompt()
            }

            fn before_call(call: $crate::bindings::types::HookCall) -> $crate::bindings::types::BeforeDecision {
                <$ext as $crate::Extension>::decide_before(&$crate::HookCall::from(call)).into()
            }

            fn after_call(
                call: $crate::bindings::types::HookCall,
                outcome: $crate::bindings::types::CallOutcome,
            ) -> $crate::bindings::types::AfterDecision {
                <$ext as $crate::Extension>::decide_after(
                    &$crate::HookCall::from(call),
                    &$crate::CallOutcome::from(outcome),
                )
                .into()
            }
        }

        __toolhost_extension_bindings::export!($ext with_types_in __toolhost_extension_bindings);
    };
}
