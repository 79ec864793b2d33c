//! What a component is, without running it: its world, the version of the
//! toolhost interfaces it was built for, and the capabilities it imports.

use std::fmt;

use wasmtime::Engine;
use wasmtime::component::Component;

/// The newest package version this host speaks, which the SDK targets.
pub const WIT_VERSION: &str = "0.3.0";
const PACKAGE: &str = "toolhost:plugin/";

/// The versions of `toolhost:plugin` this host loads: a component built for
/// any `0.1.x`, `0.2.x` or `0.3.x` runs with the bindings of its own
/// version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum WitVersion {
    /// `toolhost:plugin@0.1.x`: hooks allow or reject; text, image and media
    /// blocks.
    V0_1,
    /// `toolhost:plugin@0.2.x`: hooks decide (rewrite, replace, ask);
    /// resources, annotations, structured output, progress.
    V0_2,
    /// `toolhost:plugin@0.3.x`: tools declare hints about their effects.
    V0_3,
}

impl WitVersion {
    /// Every version this host loads, oldest first.
    pub const ALL: [Self; 3] = [Self::V0_1, Self::V0_2, Self::V0_3];

    /// `0.1`, `0.2` or `0.3`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1 => "0.1",
            Self::V0_2 => "0.2",
            Self::V0_3 => "0.3",
        }
    }

    /// The version a `toolhost:plugin` item's version text belongs to, if
    /// this host loads it.
    fn of(found: &str) -> Option<Self> {
        match major_minor(found) {
            ("0", "1") => Some(Self::V0_1),
            ("0", "2") => Some(Self::V0_2),
            ("0", "3") => Some(Self::V0_3),
            _ => None,
        }
    }
}

impl fmt::Display for WitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    /// The `toolhost:plugin` version it was built for, as the component
    /// names it (`0.3.0`).
    pub version: String,
    /// The interface version the host runs it with.
    pub wit: WitVersion,
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
    /// It uses two versions of the interfaces at once.
    #[error(
        "uses toolhost:plugin@{first} (`{first_item}`) and toolhost:plugin@{second} (`{second_item}`); a plugin is built for one version"
    )]
    MixedVersions {
        /// The first version found.
        first: String,
        /// The import or export that carries it.
        first_item: String,
        /// The other version.
        second: String,
        /// The import or export that carries it.
        second_item: String,
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
    let all: Vec<String> = WitVersion::ALL
        .iter()
        .map(|v| format!("toolhost:plugin@{v}.x"))
        .collect();
    match all.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

fn major_minor(v: &str) -> (&str, &str) {
    let mut parts = v.split('.');
    (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
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
    let mut version: Option<(String, WitVersion, &str)> = None;
    let (mut tool, mut extension) = (false, false);
    for name in exports.iter().chain(&imports) {
        if let Some((item, v)) = toolhost_item(name) {
            let Some(wit) = WitVersion::of(v) else {
                return Err(WorldError::UnsupportedVersion {
                    found: if v.is_empty() {
                        "(unversioned)".into()
                    } else {
                        v.into()
                    },
                    item: name.clone(),
                });
            };
            match &version {
                None => version = Some((v.to_owned(), wit, name)),
                Some((first, first_wit, first_item)) if *first_wit != wit => {
                    return Err(WorldError::MixedVersions {
                        first: first.clone(),
                        first_item: (*first_item).to_owned(),
                        second: v.to_owned(),
                        second_item: name.clone(),
                    });
                }
                Some(_) => {}
            }
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
    // A plugin has a toolhost export, so a version; the check keeps that
    // without a panic.
    let Some((version, wit, _)) = version else {
        return Err(WorldError::NotAPlugin { exports });
    };
    Ok(ComponentInfo {
        world,
        version,
        wit,
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
        "wasi:cli/stdout" => "standard output: captured, capped, sent to the host's log",
        "wasi:cli/stderr" => {
            "standard error: captured, capped, sent to the host's log and quoted when a call fails"
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
    fn w1_versions_0_1_and_0_2_load_and_no_other() {
        assert_eq!(WitVersion::of("0.1.0"), Some(WitVersion::V0_1));
        assert_eq!(WitVersion::of("0.1.7"), Some(WitVersion::V0_1));
        assert_eq!(WitVersion::of("0.2.0"), Some(WitVersion::V0_2));
        assert_eq!(WitVersion::of("0.2.3"), Some(WitVersion::V0_2));
        assert_eq!(WitVersion::of("0.3.0"), Some(WitVersion::V0_3));
        assert_eq!(WitVersion::of("0.4.0"), None);
        assert_eq!(WitVersion::of("1.0.0"), None);
        assert_eq!(WitVersion::of(""), None);
    }

    #[test]
    fn w1_version_errors_say_what_was_found_and_what_is_supported() {
        let e = WorldError::UnsupportedVersion {
            found: "1.0.0".into(),
            item: "toolhost:plugin/tool@1.0.0".into(),
        };
        assert_eq!(
            e.to_string(),
            "built for toolhost:plugin@1.0.0 (`toolhost:plugin/tool@1.0.0`); this host supports toolhost:plugin@0.1.x, toolhost:plugin@0.2.x and toolhost:plugin@0.3.x"
        );
    }
}
