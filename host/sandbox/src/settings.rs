//! A plugin's settings: what it reads through the standard
//! `wasi:config/store` interface, and the JSON Schema they must satisfy.
//!
//! The guest sees one string per key, as `wasi:config` defines it: a
//! string setting as written, any other value (number, boolean, array,
//! table) as its JSON text, so `precision = 4` reads `"4"` and
//! `tags = ["a"]` reads `["a"]`.
//!
//! The schema comes from the policy (the operator's
//! [`PluginPolicy::settings_schema`]) or, if none, from the component
//! itself: a custom section named [`SCHEMA_SECTION`] in the component or in
//! any of its core modules, which the Rust SDK's `settings_schema!` writes.
//! The settings are checked against it when the plugin loads, lazily or
//! not, before any of its code runs; an error names the key.

use serde_json::{Map, Value};
use wasmparser::{Parser, Payload};
use wasmtime_wasi_config::WasiConfigVariables;

use crate::{PluginPolicy, TenantOverlay};
use toolhost_core::{CompiledSchema, SchemaError, Secret};

/// The custom section in which a component declares its settings' schema,
/// as JSON text.
pub const SCHEMA_SECTION: &str = "toolhost:settings-schema";

/// Largest schema a component may declare, in bytes. A schema is a
/// document of a few kilobytes; this bound keeps a hostile component from
/// making the host parse megabytes of JSON at every load.
pub const MAX_SCHEMA_BYTES: usize = 64 << 10;

/// Why a plugin's settings are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// A setting does not satisfy the schema.
    #[error("setting `{key}`{}: {message}", of_tenant(.tenant.as_deref()))]
    Invalid {
        /// The setting, as a key of the plugin's settings table (a dotted
        /// path into nested values; empty for the table as a whole).
        key: String,
        /// What the schema says is wrong.
        message: String,
        /// The tenant whose settings (its own merged over the plugin's)
        /// are refused; `None` for the plugin's own (rule A2).
        tenant: Option<String>,
    },
    /// The schema itself is not a JSON Schema this host can apply.
    #[error("the settings schema {origin} is not a usable JSON Schema: {message}")]
    BadSchema {
        /// Where the schema came from.
        origin: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The component's schema section is not JSON, or too large.
    #[error("the component's `{SCHEMA_SECTION}` section {problem}")]
    BadSection {
        /// What is wrong with it.
        problem: String,
    },
}

fn of_tenant(tenant: Option<&str>) -> String {
    tenant.map_or_else(String::new, |t| format!(" of tenant `{t}`"))
}

/// The variables a plugin's instances read through `wasi:config/store`.
/// Its `Debug` shows the keys, never the values.
pub(crate) struct GuestConfig {
    keys: Vec<String>,
    vars: WasiConfigVariables,
}

impl GuestConfig {
    /// What `policy` lets the guest read.
    /// Its settings, and the secrets granted to it under their names.
    pub(crate) fn of(policy: &PluginPolicy) -> Self {
        Self::with(&policy.settings, &policy.secrets, &[])
    }

    /// What a call of the tenant with `overlay` reads (rule A2): its
    /// settings merged over the plugin's, and each granted secret, under
    /// its name, with the value of the tenant's secret in its place where
    /// the overlay gives one. Nothing else: no other tenant's value.
    pub(crate) fn of_tenant(policy: &PluginPolicy, overlay: &TenantOverlay) -> Self {
        Self::with(
            &tenant_settings(&policy.settings, overlay),
            &policy.secrets,
            &overlay.secrets,
        )
    }

    fn with(
        settings: &Map<String, Value>,
        secrets: &[Secret],
        replaced: &[(String, Secret)],
    ) -> Self {
        let settings = settings
            .iter()
            .map(|(k, v)| (k.clone(), as_config_string(v)));
        let secrets = secrets.iter().map(|s| {
            let value = replaced
                .iter()
                .find(|(granted, _)| granted == s.name())
                .map_or(s, |(_, theirs)| theirs);
            (s.name().to_owned(), value.expose().to_owned())
        });
        let vars: Vec<(String, String)> = settings.chain(secrets).collect();
        Self {
            keys: vars.iter().map(|(k, _)| k.clone()).collect(),
            vars: vars.into_iter().collect(),
        }
    }

    /// The variables, for `wasi:config/store`.
    pub(crate) fn vars(&self) -> &WasiConfigVariables {
        &self.vars
    }
}

impl std::fmt::Debug for GuestConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuestConfig")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// A setting's value as the guest reads it.
pub(crate) fn as_config_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The settings a tenant's calls read: `overlay`'s over `base`, key by key
/// (a key the overlay sets replaces the plugin's value whole, nested
/// tables included; the plugin's other keys stay).
pub fn tenant_settings(base: &Map<String, Value>, overlay: &TenantOverlay) -> Map<String, Value> {
    let mut merged = base.clone();
    for (key, value) in &overlay.settings {
        merged.insert(key.clone(), value.clone());
    }
    merged
}

/// Checks `policy`'s settings, and each tenant's merged over them (rule
/// A2), against its schema, or else the one the component `bytes`
/// declares. Settings without any schema are taken as they are.
pub fn check(bytes: &[u8], policy: &PluginPolicy) -> Result<(), SettingsError> {
    match schema_for(bytes, policy)? {
        Some(schema) => check_against(&schema, policy),
        None => Ok(()),
    }
}

/// The schema `policy`'s settings are checked against, if there is one:
/// the configuration's, or else the one the component `bytes` declares.
pub(crate) fn schema_for(
    bytes: &[u8],
    policy: &PluginPolicy,
) -> Result<Option<SettingsSchema>, SettingsError> {
    Ok(match &policy.settings_schema {
        Some(schema) => Some(SettingsSchema {
            schema: schema.clone(),
            origin: "given in the configuration",
        }),
        None => declared_schema(bytes)?.map(|schema| SettingsSchema {
            schema,
            origin: "the component declares",
        }),
    })
}

/// A settings schema and where it came from, for messages.
pub(crate) struct SettingsSchema {
    schema: Value,
    origin: &'static str,
}

/// [`check`] against `schema`, found by [`schema_for`].
pub(crate) fn check_against(
    schema: &SettingsSchema,
    policy: &PluginPolicy,
) -> Result<(), SettingsError> {
    let schema = compile(&schema.schema, schema.origin)?;
    validate(&schema, &policy.settings)?;
    for (tenant, overlay) in &policy.tenants {
        let merged = tenant_settings(&policy.settings, overlay);
        validate(&schema, &merged).map_err(|e| match e {
            SettingsError::Invalid { key, message, .. } => SettingsError::Invalid {
                key,
                message,
                tenant: Some(tenant.clone()),
            },
            other => other,
        })?;
    }
    Ok(())
}

/// Compiles a settings schema; `origin` says where it came from, for
/// messages. A component's schema is hostile input: bounded like a tool's
/// parameters (rule C9), its patterns on a backtracking budget.
fn compile(schema: &Value, origin: &'static str) -> Result<CompiledSchema, SettingsError> {
    CompiledSchema::compile(schema).map_err(|e| SettingsError::BadSchema {
        origin,
        message: match e {
            SchemaError::Unbounded(cost) => cost.to_string(),
            other => other.to_string(),
        },
    })
}

/// Checks `settings` against `schema`, naming the first offending key.
fn validate(schema: &CompiledSchema, settings: &Map<String, Value>) -> Result<(), SettingsError> {
    let instance = Value::Object(settings.clone());
    let Some(violation) = schema.first_violation(&instance) else {
        return Ok(());
    };
    // A missing required key is reported at the table: name it.
    let key = match violation.missing {
        Some(property) if violation.path.is_empty() => property,
        _ => violation.path.join("."),
    };
    Err(SettingsError::Invalid {
        key,
        message: violation.message,
        tenant: None,
    })
}

/// The schema the component declares in its [`SCHEMA_SECTION`], if any:
/// the first such section found, at the top or in a nested module.
pub fn declared_schema(bytes: &[u8]) -> Result<Option<Value>, SettingsError> {
    for payload in Parser::new(0).parse_all(bytes) {
        // A component this parser cannot read is refused by the compiler
        // with a better message; here it simply declares nothing.
        let Ok(payload) = payload else {
            return Ok(None);
        };
        if let Payload::CustomSection(section) = payload
            && section.name() == SCHEMA_SECTION
        {
            let data = section.data();
            if data.len() > MAX_SCHEMA_BYTES {
                return Err(SettingsError::BadSection {
                    problem: format!(
                        "holds {} bytes, more than the {MAX_SCHEMA_BYTES} a schema may have",
                        data.len()
                    ),
                });
            }
            return serde_json::from_slice(data)
                .map(Some)
                .map_err(|e| SettingsError::BadSection {
                    problem: format!("is not JSON: {e}"),
                });
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    /// A core module holding one custom section (a component's nested
    /// modules are read the same way).
    fn module_with_section(name: &str, data: &[u8]) -> Vec<u8> {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        let mut body = Vec::new();
        body.push(u8::try_from(name.len()).unwrap());
        body.extend_from_slice(name.as_bytes());
        body.extend_from_slice(data);
        m.push(0);
        leb(&mut m, body.len());
        m.extend(body);
        m
    }

    fn leb(out: &mut Vec<u8>, mut n: usize) {
        loop {
            let byte = u8::try_from(n & 0x7f).unwrap();
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    #[test]
    fn o1_settings_reach_the_guest_as_strings_and_json() {
        let policy = PluginPolicy {
            settings: settings(
                json!({"greeting": "hi", "precision": 4, "tags": ["a"], "on": true}),
            ),
            ..PluginPolicy::default()
        };
        let vars: Vec<(String, String)> = policy
            .settings
            .iter()
            .map(|(k, v)| (k.clone(), as_config_string(v)))
            .collect();
        assert!(vars.contains(&("greeting".into(), "hi".into())));
        assert!(vars.contains(&("precision".into(), "4".into())));
        assert!(vars.contains(&("tags".into(), r#"["a"]"#.into())));
        assert!(vars.contains(&("on".into(), "true".into())));
    }

    #[test]
    fn o1_a_bad_value_names_its_key() {
        let schema = json!({
            "type": "object",
            "properties": {"precision": {"type": "integer", "maximum": 10}, "mode": {"enum": ["a", "b"]}},
            "required": ["mode"],
        });
        let schema = compile(&schema, "given").unwrap();
        let bad = settings(json!({"precision": 40, "mode": "a"}));
        let err = validate(&schema, &bad).unwrap_err();
        assert!(
            matches!(&err, SettingsError::Invalid { key, .. } if key == "precision"),
            "{err}"
        );
        let missing = settings(json!({"precision": 4}));
        let err = validate(&schema, &missing).unwrap_err();
        assert!(
            matches!(&err, SettingsError::Invalid { key, .. } if key == "mode"),
            "{err}"
        );
        assert!(validate(&schema, &settings(json!({"mode": "b"}))).is_ok());
    }

    #[test]
    fn a2_a_tenants_settings_merge_over_the_plugins_and_are_checked_naming_the_tenant() {
        let schema = json!({
            "type": "object",
            "properties": {"prefix": {"type": "string"}, "n": {"type": "integer"}},
            "additionalProperties": false,
        });
        let base = settings(json!({"prefix": "> ", "n": 1}));
        let overlay = TenantOverlay::new(settings(json!({"prefix": "acme: "})), Vec::new());
        assert_eq!(
            tenant_settings(&base, &overlay),
            settings(json!({"prefix": "acme: ", "n": 1}))
        );
        let policy = PluginPolicy {
            settings: base,
            settings_schema: Some(schema),
            tenants: [
                ("acme".to_owned(), overlay),
                (
                    "beta".to_owned(),
                    TenantOverlay::new(settings(json!({"n": "many"})), Vec::new()),
                ),
            ]
            .into(),
            ..PluginPolicy::default()
        };
        let err = check(b"", &policy).unwrap_err();
        assert!(
            matches!(&err, SettingsError::Invalid { key, tenant: Some(t), .. } if key == "n" && t == "beta"),
            "{err}"
        );
        assert!(err.to_string().contains("of tenant `beta`"), "{err}");
    }

    #[test]
    fn o1_the_component_declares_its_schema_in_a_custom_section() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let wasm = module_with_section(SCHEMA_SECTION, schema.to_string().as_bytes());
        assert_eq!(declared_schema(&wasm).unwrap(), Some(schema));
        let policy = PluginPolicy {
            settings: settings(json!({"n": "x"})),
            ..PluginPolicy::default()
        };
        let err = check(&wasm, &policy).unwrap_err();
        assert!(err.to_string().contains("setting `n`"), "{err}");
        // The operator's schema wins over the component's.
        let policy = PluginPolicy {
            settings_schema: Some(json!({"type": "object"})),
            ..policy
        };
        assert!(check(&wasm, &policy).is_ok());
    }

    #[tokio::test]
    async fn o1_a_load_refuses_settings_its_schema_refuses_lazily_or_not() {
        use crate::{LoadError, Sandbox, testing::wasm};
        let cache = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(Some(cache.path().join("code"))).unwrap();
        let load = |policy: PluginPolicy, lazy: bool| {
            sandbox
                .plugin_file("template", wasm("template"))
                .policy(policy)
                .lazy(lazy)
                .load()
        };
        let bad = PluginPolicy {
            settings: settings(json!({"prefix": 5})),
            ..PluginPolicy::default()
        };
        for lazy in [false, true] {
            let Err(err) = load(bad.clone(), lazy).await else {
                panic!("loaded with settings its schema refuses")
            };
            assert!(
                matches!(&err, LoadError::Settings { source: SettingsError::Invalid { key, .. }, .. } if key == "prefix"),
                "{err}"
            );
        }
        // A lazy load whose tool list the cache holds is checked all the
        // same: here the operator's schema is what changed.
        let good = PluginPolicy {
            settings: settings(json!({"prefix": "> "})),
            ..PluginPolicy::default()
        };
        // The first lazy load reads the list and keeps it.
        load(good.clone(), true).await.unwrap();
        let cached = load(good.clone(), true).await.unwrap();
        assert_eq!(cached.code_source(), crate::CodeSource::Deferred);
        let stricter = PluginPolicy {
            settings_schema: Some(json!({"properties": {"prefix": {"maxLength": 1}}})),
            ..good
        };
        let Err(err) = load(stricter, true).await else {
            panic!("loaded with settings the operator's schema refuses")
        };
        assert!(matches!(err, LoadError::Settings { .. }), "{err}");
        // The good settings' record in the cache passes them alone: the
        // bad ones are refused as before, eagerly or from the cached list.
        let records = || {
            let dir = cache.path().join("code");
            let dir = dir.join(format!("settings-{}", env!("CARGO_PKG_VERSION")));
            std::fs::read_dir(dir).unwrap().count()
        };
        assert_eq!(records(), 1, "only the settings that passed are recorded");
        // A plugin with no schema for its settings has nothing to record.
        assert_eq!(
            declared_schema(&std::fs::read(wasm("calc")).unwrap()).unwrap(),
            None
        );
        sandbox
            .plugin_file("calc", wasm("calc"))
            .policy(PluginPolicy {
                settings: settings(json!({"prefix": "> "})),
                ..PluginPolicy::default()
            })
            .load()
            .await
            .unwrap();
        assert_eq!(
            records(),
            1,
            "a plugin without a settings schema is not recorded"
        );
        for lazy in [false, true] {
            let Err(err) = load(bad.clone(), lazy).await else {
                panic!("a record of other settings let these through")
            };
            assert!(matches!(err, LoadError::Settings { .. }), "{err}");
        }
    }

    #[test]
    fn o1_a_hostile_schema_section_is_refused_by_name() {
        let wasm = module_with_section(SCHEMA_SECTION, b"{not json");
        let err = declared_schema(&wasm).unwrap_err();
        assert!(err.to_string().contains("is not JSON"), "{err}");
        let huge = vec![b' '; MAX_SCHEMA_BYTES + 1];
        let err = declared_schema(&module_with_section(SCHEMA_SECTION, &huge)).unwrap_err();
        assert!(err.to_string().contains("more than"), "{err}");
        let not_a_schema = module_with_section(SCHEMA_SECTION, br#"{"type": 12}"#);
        let err = check(&not_a_schema, &PluginPolicy::default()).unwrap_err();
        assert!(matches!(err, SettingsError::BadSchema { .. }), "{err}");
        // Other sections and other bytes declare nothing.
        assert_eq!(
            declared_schema(&module_with_section("name", b"")).unwrap(),
            None
        );
        assert_eq!(declared_schema(b"garbage").unwrap(), None);
    }
}
