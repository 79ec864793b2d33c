//! The CNCF wasm OCI artifact layout
//! (<https://tag-runtime.cncf.io/wgs/wasm/deliverables/wasm-oci-artifact/>),
//! as `wkg oci push` and the rest of the wasm ecosystem write it: an OCI
//! image manifest whose config is an [`CONFIG_MEDIA_TYPE`] blob
//! ([`WasmConfig`]) and whose one layer is the component
//! ([`LAYER_MEDIA_TYPE`]).
//!
//! The config says what the component imports and exports. Those are read
//! here from the component's own top-level import and export sections with
//! `wasmparser`, at the version wasmtime already compiles, so describing a
//! component costs no second copy of the wasm tooling.

use serde::{Deserialize, Serialize};
use wasmparser::{Encoding, Parser, Payload};

use crate::Sha256;

/// The manifest of a wasm artifact: a plain OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The config blob of a wasm artifact ([`WasmConfig`]).
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The one layer of a wasm artifact: the component's bytes.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The config's `architecture`, always this.
pub const ARCHITECTURE: &str = "wasm";
/// The config's `os` for a component (a core module would be `wasip1`).
pub const COMPONENT_OS: &str = "wasip2";
/// The layer annotation that names the file, so that OCI tools can save it
/// under that name.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// The config blob of a wasm artifact, field for field as the
/// specification (and `wkg`) writes it. Reading one checks that the
/// required fields are there and well typed; unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WasmConfig {
    /// When the artifact was made (RFC 3339).
    pub created: chrono::DateTime<chrono::Utc>,
    /// Who made it, if said (written as `null` otherwise, as `wkg` does).
    pub author: Option<String>,
    /// Always [`ARCHITECTURE`].
    pub architecture: String,
    /// [`COMPONENT_OS`] for a component.
    pub os: String,
    /// The digest of each layer, in the manifest's order (so that two
    /// artifacts' configs differ when their content does).
    pub layer_digests: Vec<String>,
    /// What the component imports and exports (required for `wasip2`).
    pub component: Option<ComponentWorld>,
}

/// What a component imports and exports, by the names in its top-level
/// import and export sections (`wasi:cli/environment@0.2.6`,
/// `toolhost:plugin/tool@0.2.0`, …), in the component's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ComponentWorld {
    /// The exports' names.
    pub exports: Vec<String>,
    /// The imports' names.
    pub imports: Vec<String>,
    /// The world the component targets, when known (an optional index
    /// hint; written as `null`).
    pub target: Option<String>,
}

/// Bytes that are not a wasm component.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum NotAComponent {
    /// A core wasm module: toolhost plugins are components.
    #[error("it is a core wasm module, not a component (build for wasm32-wasip2)")]
    CoreModule,
    /// Not wasm at all, or cut short or malformed where its imports and
    /// exports are.
    #[error("it is not a wasm component: {0}")]
    Malformed(String),
}

impl ComponentWorld {
    /// Reads a component's top-level imports and exports (those of nested
    /// modules and components are its own business). Only the header and
    /// the section framing are checked, not the whole component: the
    /// sandbox validates it before it runs.
    pub fn of(wasm: &[u8]) -> Result<Self, NotAComponent> {
        let malformed = |e: wasmparser::BinaryReaderError| NotAComponent::Malformed(e.to_string());
        let mut world = Self {
            exports: Vec::new(),
            imports: Vec::new(),
            target: None,
        };
        // How deep inside nested modules and components the parser is.
        let mut depth = 0usize;
        for payload in Parser::new(0).parse_all(wasm) {
            match payload.map_err(malformed)? {
                Payload::Version {
                    encoding: Encoding::Module,
                    ..
                } if depth == 0 => return Err(NotAComponent::CoreModule),
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => return Ok(world),
                },
                Payload::ComponentImportSection(reader) if depth == 0 => {
                    for import in reader {
                        world
                            .imports
                            .push(import.map_err(malformed)?.name.name.to_owned());
                    }
                }
                Payload::ComponentExportSection(reader) if depth == 0 => {
                    for export in reader {
                        world
                            .exports
                            .push(export.map_err(malformed)?.name.name.to_owned());
                    }
                }
                _ => {}
            }
        }
        Err(NotAComponent::Malformed("it ends early".into()))
    }
}

impl WasmConfig {
    /// The config of an artifact whose one layer is `wasm`, made now.
    pub fn for_component(wasm: &[u8], author: Option<String>) -> Result<Self, NotAComponent> {
        let component = ComponentWorld::of(wasm)?;
        Ok(Self {
            created: chrono::Utc::now(),
            author,
            architecture: ARCHITECTURE.to_owned(),
            os: COMPONENT_OS.to_owned(),
            layer_digests: vec![Sha256::of(wasm).to_string()],
            component: Some(component),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component with one import and one export, nested around a core
    /// module and a component that import and export names of their own,
    /// in the binary format (the names must not leak to the top level).
    fn component() -> Vec<u8> {
        fn section(id: u8, body: &[u8]) -> Vec<u8> {
            let mut out = vec![id, u8::try_from(body.len()).unwrap()];
            out.extend(body);
            out
        }
        fn name(text: &str) -> Vec<u8> {
            let mut out = vec![0x00, u8::try_from(text.len()).unwrap()];
            out.extend(text.as_bytes());
            out
        }
        let header_c = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let header_m = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
        // A core module: an empty one will do.
        let module = header_m.to_vec();
        // A nested component importing `inner:x/y`, a type-only import.
        let mut inner = header_c.to_vec();
        let mut import = vec![0x01];
        import.extend(name("inner:x/y"));
        import.extend([0x03, 0x01]); // a type (a resource)
        inner.extend(section(10, &import));
        let mut out = header_c.to_vec();
        out.extend(section(1, &module));
        out.extend(section(4, &inner));
        let mut import = vec![0x01];
        import.extend(name("wasi:cli/environment@0.2.6"));
        import.extend([0x03, 0x01]);
        out.extend(section(10, &import));
        let mut export = vec![0x01];
        export.extend(name("toolhost:plugin/tool@0.2.0"));
        // Export type 0 (the import), no ascribed type.
        export.extend([0x03, 0x00, 0x00]);
        out.extend(section(11, &export));
        out
    }

    #[test]
    fn s1_the_config_names_only_the_components_own_imports_and_exports() {
        let world = ComponentWorld::of(&component()).unwrap();
        assert_eq!(world.imports, ["wasi:cli/environment@0.2.6"]);
        assert_eq!(world.exports, ["toolhost:plugin/tool@0.2.0"]);
        let config = WasmConfig::for_component(&component(), None).unwrap();
        let json: serde_json::Value = serde_json::to_value(&config).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "created",
            "author",
            "architecture",
            "os",
            "layerDigests",
            "component",
        ] {
            assert!(keys.contains(&key), "no `{key}` in {json}");
        }
        assert_eq!(json["architecture"], "wasm");
        assert_eq!(json["os"], "wasip2");
        assert_eq!(
            json["layerDigests"][0],
            Sha256::of(&component()).to_string()
        );
        let back: WasmConfig = serde_json::from_value(json).unwrap();
        assert_eq!(back, config);
    }

    #[test]
    fn s1_what_is_not_a_component_is_refused_without_a_panic() {
        let module = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
        assert!(matches!(
            ComponentWorld::of(&module),
            Err(NotAComponent::CoreModule)
        ));
        let whole = component();
        // A truncation is an error, or, cut at a section boundary, a
        // shorter component that cannot claim the export it lost; never a
        // panic. So is every single-byte corruption.
        for len in 0..whole.len() {
            if let Ok(world) = ComponentWorld::of(&whole[..len]) {
                assert!(world.exports.is_empty(), "{len}: {world:?}");
            }
        }
        assert!(ComponentWorld::of(&whole[..whole.len() - 1]).is_err());
        for i in 0..whole.len() {
            for byte in [0x00, 0x7f, 0x80, 0xff] {
                let mut bad = whole.clone();
                bad[i] = byte;
                let _ = ComponentWorld::of(&bad);
            }
        }
        assert!(ComponentWorld::of(b"not wasm at all").is_err());
    }

    #[test]
    fn s1_a_config_without_its_required_fields_is_refused() {
        let ok = r#"{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip2","layerDigests":[]}"#;
        serde_json::from_str::<WasmConfig>(ok).unwrap();
        for bad in [
            r#"{"architecture":"wasm","os":"wasip2","layerDigests":[]}"#,
            r#"{"created":"yesterday","architecture":"wasm","os":"wasip2","layerDigests":[]}"#,
            r#"{"created":"2026-01-01T00:00:00Z","os":"wasip2","layerDigests":[]}"#,
            r#"{"created":"2026-01-01T00:00:00Z","architecture":"wasm","os":"wasip2"}"#,
            r#"[]"#,
        ] {
            assert!(serde_json::from_str::<WasmConfig>(bad).is_err(), "{bad}");
        }
    }
}
