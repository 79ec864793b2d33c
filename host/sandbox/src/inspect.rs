//! What a component is, without running it: its world, the version of the
//! toolhost interfaces it was built for, and the capabilities it imports.

use std::fmt;

use wasmtime::Engine;
use wasmtime::component::Component;

/// The package version this host speaks.
pub const WIT_VERSION: &str = "0.1.0";
const PACKAGE: &str = "toolhost:plugin/";

/// Which world a component was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginWorld {
    /// `toolhost:plugin/tool-plugin`: tools only.
    ToolPlugin,
    /// `toolhost:plugin/extension-plugin`: hooks and a prompt, maybe tools.
    ExtensionPlugin,
}

impl fmt::Display for PluginWorld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ToolPlugin => "tool-plugin",
            Self::ExtensionPlugin => "extension-plugin",
        })
    }
}

/// A capability a component imports: what it would ask to be granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capability {
    /// The import, as the component names it.
    pub import: String,
    /// What it is for and how the host treats it.
    pub meaning: &'static str,
}

/// What [`super::Sandbox::inspect`] finds in a component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentInfo {
    /// The world.
    pub world: PluginWorld,
    /// The `toolhost:plugin` version it was built for.
    pub version: String,
    /// Every import, with its meaning.
    pub capabilities: Vec<Capability>,
    /// Every export's name.
    pub exports: Vec<String>,
}

/// Why a component is not a plugin this host can run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorldError {
    /// It exports nothing from `toolhost:plugin`.
    #[error("not a toolhost plugin: it exports nothing from toolhost:plugin (its exports: {})", list(.exports))]
    NotAPlugin {
        /// What it does export.
        exports: Vec<String>,
    },
    /// It was built for an incompatible version of the interfaces.
    #[error(
        "built for toolhost:plugin@{found} (`{item}`); this host supports {}",
        supported()
    )]
    UnsupportedVersion {
        /// The version found.
        found: String,
        /// The import or export that carries it.
        item: String,
    },
    /// It exports the extension interface but not the tool interface.
    #[error(
        "exports toolhost:plugin/extension without toolhost:plugin/tool; an extension-plugin exports both"
    )]
    MissingToolExport,
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

fn supported() -> String {
    let (major, minor) = major_minor(WIT_VERSION);
    format!("toolhost:plugin@{major}.{minor}.x")
}

fn major_minor(v: &str) -> (&str, &str) {
    let mut parts = v.split('.');
    (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
}

/// Whether `found` is compatible with [`WIT_VERSION`] under semver: same
/// major, and for 0.x the same minor.
fn compatible(found: &str) -> bool {
    let (want_major, want_minor) = major_minor(WIT_VERSION);
    let (major, minor) = major_minor(found);
    major == want_major && (major != "0" || minor == want_minor)
}

/// Splits `toolhost:plugin/tool@0.1.0` into (`tool`, `0.1.0`).
fn toolhost_item(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(PACKAGE)?;
    Some(rest.split_once('@').unwrap_or((rest, "")))
}

/// Reads a compiled component's world, version and imports.
pub(crate) fn inspect(engine: &Engine, component: &Component) -> Result<ComponentInfo, WorldError> {
    let ty = component.component_type();
    let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
    let imports: Vec<String> = ty.imports(engine).map(|(n, _)| n.to_string()).collect();
    let mut version = None;
    let (mut tool, mut extension) = (false, false);
    for name in exports.iter().chain(&imports) {
        if let Some((item, v)) = toolhost_item(name) {
            if !compatible(v) {
                return Err(WorldError::UnsupportedVersion {
                    found: if v.is_empty() {
                        "(unversioned)".into()
                    } else {
                        v.into()
                    },
                    item: name.clone(),
                });
            }
            version.get_or_insert_with(|| v.to_owned());
            if exports.contains(name) {
                tool |= item == "tool";
                extension |= item == "extension";
            }
        }
    }
    let world = match (tool, extension) {
        (true, false) => PluginWorld::ToolPlugin,
        (true, true) => PluginWorld::ExtensionPlugin,
        (false, true) => return Err(WorldError::MissingToolExport),
        (false, false) => return Err(WorldError::NotAPlugin { exports }),
    };
    Ok(ComponentInfo {
        world,
        version: version.unwrap_or_default(),
        capabilities: imports.into_iter().map(capability).collect(),
        exports,
    })
}

fn capability(import: String) -> Capability {
    let base = import.split('@').next().unwrap_or(&import);
    let meaning = match base {
        "wasi:http/outgoing-handler" => "outgoing HTTP: only to hosts the policy grants",
        "wasi:http/types" => "HTTP types (used with outgoing HTTP)",
        "wasi:filesystem/preopens" | "wasi:filesystem/types" => {
            "files: only in directories the policy grants"
        }
        "wasi:cli/environment" => "environment variables: only those the policy grants",
        "wasi:cli/stdout" | "wasi:cli/stderr" => {
            "standard output: captured, capped, sent to the host's log"
        }
        "wasi:cli/stdin" => "standard input: always empty",
        "wasi:cli/exit" => "exit: ends the call",
        b if b.starts_with("wasi:sockets/") => "sockets: always denied",
        b if b.starts_with("wasi:clocks/") => "clocks: always available",
        b if b.starts_with("wasi:random/") => "random numbers: always available",
        b if b.starts_with("wasi:io/") => "streams and polling: used by the other interfaces",
        b if b.starts_with("wasi:cli/terminal") => "terminal queries: never a terminal",
        "toolhost:plugin/host" => "the host's log and the call's deadline",
        "toolhost:plugin/types" => "toolhost's shared types",
        _ => "not provided by this host: the plugin will not link",
    };
    Capability { import, meaning }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w1_versions_compatible_within_the_same_minor_for_zero_majors() {
        assert!(compatible("0.1.0"));
        assert!(compatible("0.1.7"));
        assert!(!compatible("0.2.0"));
        assert!(!compatible("1.0.0"));
        assert!(!compatible(""));
    }

    #[test]
    fn w1_version_errors_say_what_was_found_and_what_is_supported() {
        let e = WorldError::UnsupportedVersion {
            found: "1.0.0".into(),
            item: "toolhost:plugin/tool@1.0.0".into(),
        };
        assert_eq!(
            e.to_string(),
            "built for toolhost:plugin@1.0.0 (`toolhost:plugin/tool@1.0.0`); this host supports toolhost:plugin@0.1.x"
        );
    }
}
