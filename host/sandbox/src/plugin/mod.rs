//! A loaded plugin: its pre-linked component, its policy, and the tools,
//! hooks and prompt it contributes. Every call runs in a fresh instance in a
//! fresh store (rule W4), so no state survives between calls.
//!
//! | module | job |
//! |---|---|
//! | `runtime` | [`PluginRuntime`]: deadlines, stores; runs the guest's exports |
//! | `slots` | `Slots`: a plugin's instance slots, shared fairly among tenants |
//! | `tool` | `WasmTool`: one of the plugin's tools |
//! | `extension` | [`WasmExtension`]: the plugin as an extension, its prompt and hooks |
//! | `hook` | `WasmHook`: the extension's hooks and the checks of what its guest decides |
//! | `descriptor` | [`specs_from_descriptors`]: the checks of the tools a guest lists |
//!
//! Which interface version a guest was built for is told apart in the
//! bindings alone (`crate::bindings::exports`): everything here sees the
//! 0.2 types.

mod descriptor;
mod extension;
mod hook;
mod runtime;
mod slots;
mod tool;

pub(crate) use descriptor::{Checked, Schemas, specs_from_descriptors};
pub(crate) use extension::WasmExtension;
pub(crate) use runtime::PluginRuntime;
pub(crate) use slots::Slots;
