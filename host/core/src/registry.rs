//! The live tool registry (rule T3).
//!
//! Register, unregister, list sorted names and look up descriptors, safely
//! from many tasks at once. Registering a tool grants it nothing and makes no
//! argument trustworthy: every call still goes through the pipeline.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

use crate::error::RegistryError;
use crate::metrics::ToolMetrics;
use crate::schema::CompiledSchema;
use crate::secret::SecretSet;
use crate::tool::{Tool, ToolSpec};

/// A registered tool with its schema compiled once, at registration.
pub(crate) struct ToolEntry {
    pub(crate) tool: Arc<dyn Tool>,
    pub(crate) spec: Arc<ToolSpec>,
    schema: CompiledSchema,
    output_schema: Option<CompiledSchema>,
    pub(crate) owner: Option<Arc<str>>,
    /// The tool's name, shared with what a call records of it (its span).
    pub(crate) name: Arc<str>,
    /// The plugin, extension or server the tool belongs to; "" for the
    /// host's own.
    pub(crate) plugin: Arc<str>,
    /// The tool's metric series, found on its first call with metrics.
    pub(crate) metrics: OnceLock<ToolMetrics>,
}

impl ToolEntry {
    fn new(
        tool: Arc<dyn Tool>,
        owner: Option<Arc<str>>,
        secrets: &SecretSet,
    ) -> Result<Self, RegistryError> {
        let mut spec = tool.spec().clone();
        ToolSpec::validate_name(&spec.name)
            .map_err(|e| RegistryError::InvalidName { source: e })?;
        if !secrets.is_empty() {
            if let Some(secret) = secrets.find(spec.name.as_bytes()) {
                return Err(RegistryError::SecretInName {
                    secret: secret.name().to_owned(),
                    owner: owner.as_deref().map(str::to_owned),
                });
            }
            secrets.redact_string(&mut spec.description);
            secrets.redact_json(&mut spec.parameters);
            if let Some(output) = &mut spec.output_schema {
                secrets.redact_json(output);
            }
        }
        // Schemas the tool compiled already (a plugin's, while loading) are
        // used as they are; only the others are compiled here.
        let schema = match tool.compiled_schema() {
            Some(schema) => schema,
            None => CompiledSchema::compile(&spec.parameters).map_err(|e| {
                RegistryError::InvalidSchema {
                    tool: spec.name.clone(),
                    source: e,
                }
            })?,
        };
        let output_schema = match (&spec.output_schema, tool.compiled_output_schema()) {
            (None, _) => None,
            (Some(_), Some(schema)) => Some(schema),
            (Some(s), None) => Some(CompiledSchema::compile(s).map_err(|e| {
                RegistryError::InvalidOutputSchema {
                    tool: spec.name.clone(),
                    source: e,
                }
            })?),
        };
        let plugin: Arc<str> = match (tool.plugin(), &owner) {
            (Some(plugin), _) => plugin.into(),
            (None, Some(owner)) => owner.clone(),
            (None, None) => "".into(),
        };
        Ok(Self {
            name: spec.name.as_str().into(),
            tool,
            spec: Arc::new(spec),
            schema,
            output_schema,
            owner,
            plugin,
            metrics: OnceLock::new(),
        })
    }

    /// The compiled parameters schema (rule T2).
    pub(crate) fn schema(&self) -> &CompiledSchema {
        &self.schema
    }

    /// The compiled output schema, if the tool declares one (rule N2).
    pub(crate) fn output_schema(&self) -> Option<&CompiledSchema> {
        self.output_schema.as_ref()
    }
}

/// The set of registered tools, keyed and sorted by name.
///
/// Cheap to read from many tasks: a lookup takes a read lock for the time of a
/// map lookup and an `Arc` clone.
#[derive(Default)]
pub struct Registry {
    tools: RwLock<BTreeMap<String, Arc<ToolEntry>>>,
    /// Redacted from every description and schema registered.
    secrets: SecretSet,
    /// Bumped after every change, for [`Registry::changes`].
    generation: tokio::sync::watch::Sender<u64>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty registry that redacts `secrets` from the description and
    /// schemas of every tool registered (rule O2): a plugin may read a
    /// secret it is granted while it lists its tools, and what it lists
    /// goes to every caller. A tool whose name carries one is refused.
    pub fn redacting(secrets: SecretSet) -> Self {
        Self {
            secrets,
            ..Self::default()
        }
    }

    /// Registers one tool. Fails, changing nothing, if the name is taken or
    /// invalid, or the schema does not compile.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        self.register_all(vec![tool], None)
    }

    /// Registers several tools for `owner`, all or none.
    pub(crate) fn register_all(
        &self,
        tools: Vec<Arc<dyn Tool>>,
        owner: Option<Arc<str>>,
    ) -> Result<(), RegistryError> {
        let entries = compile(tools, &owner, &self.secrets)?;
        let mut map = self.write();
        check_free(&map, &entries, None)?;
        for entry in entries {
            map.insert(entry.spec.name.clone(), Arc::new(entry));
        }
        drop(map);
        self.changed();
        Ok(())
    }

    /// Replaces every tool owned by `owner` with `tools`, atomically: readers
    /// see the old set or the new one, never a mixture. Fails, changing
    /// nothing, if a new name clashes with a tool of another owner.
    pub(crate) fn replace_owned(
        &self,
        owner: &Arc<str>,
        tools: Vec<Arc<dyn Tool>>,
    ) -> Result<(), RegistryError> {
        let entries = compile(tools, &Some(owner.clone()), &self.secrets)?;
        let mut map = self.write();
        check_free(&map, &entries, Some(owner))?;
        map.retain(|_, e| e.owner.as_deref() != Some(&**owner));
        for entry in entries {
            map.insert(entry.spec.name.clone(), Arc::new(entry));
        }
        drop(map);
        self.changed();
        Ok(())
    }

    /// Removes every tool owned by `owner`.
    pub(crate) fn remove_owned(&self, owner: &str) {
        let mut map = self.write();
        let before = map.len();
        map.retain(|_, e| e.owner.as_deref() != Some(owner));
        let removed = map.len() != before;
        drop(map);
        if removed {
            self.changed();
        }
    }

    /// Removes the tool called `name`; returns whether there was one.
    pub fn unregister(&self, name: &str) -> bool {
        let removed = self.write().remove(name).is_some();
        if removed {
            self.changed();
        }
        removed
    }

    /// Watches the registry: the value is a generation counter, bumped after
    /// every change (register, unregister, an extension's tools replaced or
    /// removed), and the receiver wakes when it moves. Changes in quick
    /// succession may be seen as one; re-read the registry when woken. This is
    /// how an MCP server learns to send `notifications/tools/list_changed`.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    fn changed(&self) {
        self.generation.send_modify(|g| *g += 1);
    }

    /// The registered names, in lexical order.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// The descriptor of `name`, if registered. There is deliberately no way
    /// to get the tool's function: calls go through the pipeline.
    pub fn get(&self, name: &str) -> Option<Arc<ToolSpec>> {
        self.read().get(name).map(|e| e.spec.clone())
    }

    /// Every descriptor, sorted by name (a stable order for prompts).
    pub fn specs(&self) -> Vec<Arc<ToolSpec>> {
        self.read().values().map(|e| e.spec.clone()).collect()
    }

    /// Names of the tools `owner` registered, sorted.
    pub(crate) fn names_owned_by(&self, owner: &str) -> Vec<String> {
        self.read()
            .iter()
            .filter(|(_, e)| e.owner.as_deref() == Some(owner))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    pub(crate) fn entry(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.read().get(name).cloned()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<ToolEntry>>> {
        // A panic while holding the lock cannot leave the map half-updated
        // (every update is a single insert/retain), so poisoning is ignored.
        self.tools.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<ToolEntry>>> {
        self.tools.write().unwrap_or_else(|e| e.into_inner())
    }
}

fn compile(
    tools: Vec<Arc<dyn Tool>>,
    owner: &Option<Arc<str>>,
    secrets: &SecretSet,
) -> Result<Vec<ToolEntry>, RegistryError> {
    let entries = tools
        .into_iter()
        .map(|t| ToolEntry::new(t, owner.clone(), secrets))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names: Vec<&str> = entries.iter().map(|e| e.spec.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(RegistryError::DuplicateTool {
            name: w[0].to_owned(),
            owner: owner.as_deref().map(str::to_owned),
        });
    }
    Ok(entries)
}

/// Fails if a new entry's name is taken by a tool not owned by `replacing`.
fn check_free(
    map: &BTreeMap<String, Arc<ToolEntry>>,
    entries: &[ToolEntry],
    replacing: Option<&Arc<str>>,
) -> Result<(), RegistryError> {
    for entry in entries {
        if let Some(existing) = map.get(&entry.spec.name) {
            let same_owner = replacing.is_some() && existing.owner.as_ref() == replacing;
            if !same_owner {
                return Err(RegistryError::DuplicateTool {
                    name: entry.spec.name.clone(),
                    owner: existing.owner.as_deref().map(str::to_owned),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ToolError;
    use crate::output::ToolOutput;
    use crate::tool::FnTool;
    use serde_json::json;

    fn tool(name: &str) -> Arc<dyn Tool> {
        FnTool::arc(
            ToolSpec::new(name, "test tool", json!({"type": "object"})),
            |_, _| async { Ok(ToolOutput::text("ok")) },
        )
    }

    #[test]
    fn t3_names_are_sorted() {
        let r = Registry::new();
        for n in ["zeta", "alpha", "mid"] {
            r.register(tool(n)).unwrap();
        }
        assert_eq!(r.names(), ["alpha", "mid", "zeta"]);
        assert_eq!(r.get("mid").unwrap().name, "mid");
        assert!(r.get("nope").is_none());
    }

    #[test]
    fn t3_duplicate_name_is_an_error_that_names_it() {
        let r = Registry::new();
        r.register(tool("echo")).unwrap();
        let err = r.register(tool("echo")).unwrap_err();
        assert_eq!(err.to_string(), "a tool named `echo` is already registered");
    }

    #[test]
    fn t3_unregister_removes_the_tool() {
        let r = Registry::new();
        r.register(tool("a")).unwrap();
        assert!(r.unregister("a"));
        assert!(!r.unregister("a"));
        assert!(r.is_empty());
    }

    #[test]
    fn t3_registering_several_is_all_or_none() {
        let r = Registry::new();
        r.register(tool("b")).unwrap();
        let err = r
            .register_all(vec![tool("a"), tool("b")], Some("ext".into()))
            .unwrap_err();
        assert!(matches!(err, RegistryError::DuplicateTool { ref name, .. } if name == "b"));
        assert_eq!(r.names(), ["b"]);
    }

    #[test]
    fn t3_replacing_an_owners_tools_is_atomic() {
        let r = Registry::new();
        let owner: Arc<str> = "mcp".into();
        r.register_all(vec![tool("x"), tool("y")], Some(owner.clone()))
            .unwrap();
        r.register(tool("other")).unwrap();
        r.replace_owned(&owner, vec![tool("y"), tool("z")]).unwrap();
        assert_eq!(r.names(), ["other", "y", "z"]);
        let err = r.replace_owned(&owner, vec![tool("other")]).unwrap_err();
        assert!(matches!(err, RegistryError::DuplicateTool { .. }));
        assert_eq!(r.names(), ["other", "y", "z"]);
    }

    #[test]
    fn t3_every_change_moves_the_generation() {
        let r = Registry::new();
        let rx = r.changes();
        r.register(tool("a")).unwrap();
        assert_eq!(*rx.borrow(), 1);
        assert!(r.register(tool("a")).is_err());
        assert!(!r.unregister("nope"));
        assert_eq!(*rx.borrow(), 1, "failed changes are not changes");
        let owner: Arc<str> = "ext".into();
        r.replace_owned(&owner, vec![tool("b")]).unwrap();
        r.remove_owned("ext");
        r.remove_owned("ext");
        assert!(r.unregister("a"));
        assert_eq!(*rx.borrow(), 4);
        assert!(rx.has_changed().unwrap());
    }

    #[test]
    fn t2_schema_that_does_not_compile_is_a_registration_error() {
        let r = Registry::new();
        let bad = FnTool::arc(
            ToolSpec::new("bad", "d", json!({"type": "no-such-type"})),
            |_, _| async { Ok(ToolOutput::text("")) },
        );
        let err = r.register(bad).unwrap_err();
        assert!(
            matches!(err, RegistryError::InvalidSchema { ref tool, .. } if tool == "bad"),
            "{err}"
        );
        assert!(r.is_empty());
    }

    #[test]
    fn t2_a_schema_built_on_first_use_is_still_bounded_and_still_judges() {
        let r = Registry::new();
        let own = |name: &str, schema: serde_json::Value| -> Arc<dyn Tool> {
            Arc::new(
                FnTool::new(ToolSpec::new(name, "d", schema), |_, _| async {
                    Ok(ToolOutput::text(""))
                })
                .with_schema_built_on_first_use(),
            )
        };
        r.register(own(
            "typed",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        ))
        .unwrap();
        let entry = r.entry("typed").unwrap();
        assert!(!entry.schema().is_built(), "built at registration");
        assert!(entry.schema().validate(&json!({"n": "x"})).is_err());
        assert!(entry.schema().validate(&json!({"n": 1})).is_ok());
        assert!(entry.schema().is_built());
        // The program vouched for it: registered, and then nothing passes.
        r.register(own("broken", json!({"type": "no-such-type"})))
            .unwrap();
        let err = r.entry("broken").unwrap().schema().validate(&json!({}));
        assert!(
            matches!(&err, Err(ToolError::InvalidArguments { message, .. }) if message.contains("does not compile")),
            "{err:?}"
        );
        // A cost that cannot be bounded is refused at registration all the
        // same (rule C9).
        let err = r
            .register(own(
                "deep",
                crate::schema::cost::tests_support::doubling(40),
            ))
            .unwrap_err();
        assert!(
            matches!(err, RegistryError::InvalidSchema { ref tool, .. } if tool == "deep"),
            "{err}"
        );
    }

    #[test]
    fn t2_remote_references_are_not_fetched() {
        let r = Registry::new();
        let remote = FnTool::arc(
            ToolSpec::new(
                "remote",
                "d",
                json!({"$ref": "http://127.0.0.1:9/schema.json"}),
            ),
            |_, _| async { Ok(ToolOutput::text("")) },
        );
        assert!(matches!(
            r.register(remote),
            Err(RegistryError::InvalidSchema { .. })
        ));
    }

    #[test]
    fn t3_registry_is_safe_to_use_from_many_threads() {
        let r = Arc::new(Registry::new());
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let r = r.clone();
                std::thread::spawn(move || {
                    for j in 0..50 {
                        let name = format!("t{i}_{j}");
                        r.register(tool(&name)).unwrap();
                        assert!(r.get(&name).is_some());
                        if j % 2 == 0 {
                            assert!(r.unregister(&name));
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(r.len(), 8 * 25);
        let names = r.names();
        assert!(names.windows(2).all(|w| w[0] < w[1]));
    }
}
