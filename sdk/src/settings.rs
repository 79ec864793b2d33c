//! The plugin's settings, as the host's configuration gives them
//! (`[plugins.NAME.settings]` in `toolhost.toml`), read through the
//! standard `wasi:config/store` interface: a component that reads them this
//! way reads them unchanged on any other host of that interface.
//!
//! A string setting reads as written; any other value (a number, a
//! boolean, an array, a table) reads as its JSON text, which [`get_as`]
//! decodes.
//!
//! ```no_run
//! let greeting = toolhost_sdk::settings::get("greeting").unwrap_or_else(|| "Hello".into());
//! let precision: u32 = toolhost_sdk::settings::get_as("precision").ok().flatten().unwrap_or(2);
//! ```
//!
//! A plugin may declare the JSON Schema its settings must satisfy with
//! [`settings_schema!`](crate::settings_schema): the host checks the
//! settings against it when it loads the plugin, and `toolhost check`
//! before that, naming the setting that is wrong.

use serde::de::DeserializeOwned;

use crate::ToolError;

/// The `wasi:config/store` interface (`src/generated/config_store.wit`),
/// its bindings generated into `src/generated/` (see
/// `tests/generated_bindings.rs`).
#[allow(missing_docs)]
mod wit {
    include!("generated/config_store.rs");
}

use wit::wasi::config::store;

/// The setting `key`, if the host gives it (an error of the host's store
/// reads as absent).
pub fn get(key: &str) -> Option<String> {
    store::get(key).ok().flatten()
}

/// Every setting, as key and value.
pub fn all() -> Vec<(String, String)> {
    store::get_all().unwrap_or_default()
}

/// The setting `key` decoded as `T`: from its JSON text, or, for a string
/// setting, from the string itself. `Ok(None)` when the host gives no such
/// setting; an error names the key.
pub fn get_as<T: DeserializeOwned>(key: &str) -> Result<Option<T>, ToolError> {
    let Some(raw) = get(key) else {
        return Ok(None);
    };
    serde_json::from_str(&raw)
        .or_else(|_| serde_json::from_value(serde_json::Value::String(raw)))
        .map(Some)
        .map_err(|e| ToolError::failed(format!("setting `{key}`: {e}")))
}

/// Declares the JSON Schema of the plugin's settings, as a string literal
/// of JSON. The host checks the settings against it when it loads the
/// plugin (and `toolhost check` before that) and refuses settings that do
/// not satisfy it, naming the setting. Use it once per plugin, at the top
/// level of the crate:
///
/// ```
/// toolhost_sdk::settings_schema!(r#"{
///     "type": "object",
///     "properties": {"greeting": {"type": "string"}},
///     "additionalProperties": false
/// }"#);
/// # fn main() {}
/// ```
///
/// The schema travels in the component, in a custom section named
/// `toolhost:settings-schema`.
#[macro_export]
macro_rules! settings_schema {
    ($json:literal) => {
        const _: () = {
            const TEXT: &str = $json;
            #[cfg_attr(
                target_family = "wasm",
                unsafe(link_section = "toolhost:settings-schema")
            )]
            #[used]
            static SCHEMA: [u8; TEXT.len()] = {
                let bytes = TEXT.as_bytes();
                let mut out = [0u8; TEXT.len()];
                let mut i = 0;
                while i < bytes.len() {
                    out[i] = bytes[i];
                    i += 1;
                }
                out
            };
        };
    };
}
