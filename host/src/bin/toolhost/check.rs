//! `toolhost check`.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use toolhost::ToolHost;
use toolhost::builtin::BuiltinTool;
use toolhost::config::{BuildOptions, BuiltHost, Config, describe_policy};
use toolhost::mcp::McpTransport;
use toolhost::supply::{LockFile, OciPin, Origin, Registry, Sha256, SignatureError, Source};

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(path: &Path, as_json: bool, locked: bool) -> Result<(), Failure> {
    let config = crate::load_config(path)?;
    config.check()?;
    // Loading proves more than the file: the digest pins, the lock, the
    // signatures, the component's world and version, its imports, and its
    // tool descriptors.
    let BuiltHost {
        host,
        sandbox: _sandbox,
        ..
    } = config
        .build_host_with(BuildOptions::new().locked(locked))
        .await?;
    let supply = match supply_states(&config, locked).await {
        Ok(supply) => supply,
        Err(e) => {
            host.shutdown().await;
            return Err(e);
        }
    };
    let reported = if as_json {
        report_json(path, &config, &host, &supply)
    } else {
        report(path, &config, &host, &supply)
    };
    host.shutdown().await;
    reported?;
    if locked {
        let moved: Vec<String> = supply
            .iter()
            .filter_map(|(name, s)| match &s.registry {
                Some(RegistryState::Moved(now)) => Some(format!(
                    "plugin `{name}`: {} now resolves to manifest {now}, but toolhost.lock says {}; \
                     run `toolhost lock` to accept it",
                    s.source,
                    s.manifest.map_or_else(String::new, |m| m.to_string())
                )),
                _ => None,
            })
            .collect();
        if !moved.is_empty() {
            return Err(Failure(moved.join("; ")));
        }
    }
    Ok(())
}

/// Where a plugin's component came from and why it is trusted.
struct SupplyState {
    /// The `wasm` value as written.
    source: String,
    /// The component's digest.
    wasm: Sha256,
    /// The manifest, for a reference.
    manifest: Option<Sha256>,
    origin: Origin,
    lock: LockState,
    /// For a reference by tag: what the tag names now.
    registry: Option<RegistryState>,
    signature: String,
}

enum LockState {
    NoLockFile,
    NotInLock,
    OtherSource(String),
    Locked,
    Differs(Sha256),
}

enum RegistryState {
    Same,
    Moved(Sha256),
    Unreachable(String),
}

impl LockState {
    fn describe(&self) -> String {
        match self {
            Self::NoLockFile => "no toolhost.lock".into(),
            Self::NotInLock => "not in toolhost.lock".into(),
            Self::OtherSource(s) => format!("toolhost.lock's entry is for `{s}`"),
            Self::Locked => "locked".into(),
            Self::Differs(locked) => format!("differs from toolhost.lock ({locked})"),
        }
    }
}

impl RegistryState {
    fn describe(&self) -> String {
        match self {
            Self::Same => "the tag still names it".into(),
            Self::Moved(now) => format!("the tag now names manifest {now}"),
            Self::Unreachable(why) => format!("not asked: {why}"),
        }
    }
}

/// Each plugin's supply state: its bytes as the run had them (from the
/// store or file; a locked run's lock held), compared with the lock file,
/// its signature, and, for a tag, the registry's answer now.
async fn supply_states(
    config: &Config,
    locked: bool,
) -> Result<BTreeMap<String, SupplyState>, Failure> {
    let lock = config.lock_file()?;
    let keys = config.trusted_keys()?;
    let mut states = BTreeMap::new();
    for plugin in config.each_plugin() {
        let name = plugin.name();
        let held = if locked { lock.as_ref() } else { None };
        let (fetched, _) = plugin.fetch(held, &keys).await?;
        let wasm = fetched.wasm.unwrap_or_else(|| Sha256::of(&fetched.bytes));
        let source = plugin.source_text();
        let lock_state = match lock.as_ref().map(|l: &LockFile| l.plugins.get(name)) {
            None => LockState::NoLockFile,
            Some(None) => LockState::NotInLock,
            Some(Some(e)) if e.source != source => LockState::OtherSource(e.source.clone()),
            Some(Some(e))
                if e.wasm == wasm && (e.manifest.is_none() || e.manifest == fetched.manifest) =>
            {
                LockState::Locked
            }
            Some(Some(e)) => LockState::Differs(e.wasm),
        };
        let registry = match plugin.source()? {
            Source::Oci(reference) if matches!(reference.pin(), OciPin::Tag(_)) => {
                let registry =
                    Registry::new(plugin.pull_options()?.timeout(Duration::from_secs(10)));
                Some(match registry.resolve(&reference).await {
                    Ok(now) if Some(now) == fetched.manifest => RegistryState::Same,
                    Ok(now) => RegistryState::Moved(now),
                    Err(e) => RegistryState::Unreachable(toolhost::error::report(&e)),
                })
            }
            _ => None,
        };
        let accepted = plugin.accepted_keys();
        let signature = if !accepted.is_empty() {
            let signer = keys.verify(name, &fetched.bytes, &accepted)?;
            format!("signed by `{signer}` (required)")
        } else {
            let all: Vec<String> = keys.names().map(str::to_owned).collect();
            if all.is_empty() {
                "not required".to_owned()
            } else {
                match keys.verify(name, &fetched.bytes, &all) {
                    Ok(signer) => format!("signed by `{signer}` (not required)"),
                    Err(SignatureError::Unsigned { .. }) => "unsigned (not required)".to_owned(),
                    Err(e) => format!("not verified (not required): {e}"),
                }
            }
        };
        states.insert(
            name.to_owned(),
            SupplyState {
                source,
                wasm,
                manifest: fetched.manifest,
                origin: fetched.origin,
                lock: lock_state,
                registry,
                signature,
            },
        );
    }
    Ok(states)
}

/// What [`report`] prints, as one JSON document.
fn report_json(
    path: &Path,
    config: &Config,
    host: &ToolHost,
    supply: &BTreeMap<String, SupplyState>,
) -> Result<(), Failure> {
    let mut plugins = Vec::new();
    for plugin in config.each_plugin() {
        let name = plugin.name();
        let s = &supply[name];
        plugins.push(json!({
            "name": name,
            "source": s.source,
            "wasm": match plugin.source()? {
                Source::File(p) => Some(p),
                _ => None,
            },
            "digest": s.wasm.to_string(),
            "manifest": s.manifest.map(|m| m.to_string()),
            "from": origin(&s.origin),
            "lock": s.lock.describe(),
            "locked": matches!(s.lock, LockState::Locked),
            "registry": s.registry.as_ref().map(RegistryState::describe),
            "signature": s.signature,
            "sha256_pinned": plugin.section().sha256.is_some(),
            "tools": host.extension_tools(name),
            "grants": describe_policy(&plugin.policy()?),
        }));
    }
    let mut interpreters = Vec::new();
    if let Some(builtin) = config.builtin_config()?
        && let Some(code) = builtin
            .run_code_config()
            .filter(|_| builtin.offers(BuiltinTool::RunCode))
    {
        for (language, wasm) in &code.interpreters {
            interpreters.push(json!({
                "language": language.to_string(),
                "wasm": wasm,
                "grants": describe_policy(&code.policy()),
            }));
        }
    }
    let never: Vec<String> = never_deciding(host)
        .iter()
        .map(ToString::to_string)
        .collect();
    let rules = json!({
        "count": host.rules().rules().len(),
        "default": config.host.rules_default,
        "from_annotations": config.host.rules_from_annotations,
        "never_deciding": never,
    });
    let mut servers = Vec::new();
    for name in config.mcp.keys() {
        let server = config.mcp_server(name)?;
        servers.push(json!({
            "name": name,
            "transport": server.transport.to_string(),
            "tools": host.extension_tools(&format!("mcp.{name}")),
            "timeout_ms": server.timeout.as_millis() as u64,
        }));
    }
    let doc = json!({
        "config": path,
        "ok": true,
        "host": {
            "validate_arguments": config.host.validate_arguments,
            "call_timeout_ms": config.host.call_timeout_ms,
            "cache_dir": config.cache_dir(),
        },
        "plugins": plugins,
        "run_code": interpreters,
        "mcp": servers,
        "rules": rules,
    });
    outln!("{}", serde_json::to_string_pretty(&doc)?)?;
    Ok(())
}

/// The rules that can never decide a call to the tools registered now
/// (rule O4).
fn never_deciding(host: &ToolHost) -> Vec<toolhost::rules::Unreachable> {
    let names = host.tool_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    host.rules().never_deciding(&names)
}

fn origin(origin: &Origin) -> &'static str {
    match origin {
        Origin::File => "file",
        Origin::Store => "store",
        Origin::Pulled => "pulled",
        _ => "other",
    }
}

/// Prints what the loaded configuration grants.
fn report(
    path: &Path,
    config: &Config,
    host: &ToolHost,
    supply: &BTreeMap<String, SupplyState>,
) -> Result<(), Failure> {
    outln!("{}: ok", path.display())?;
    outln!(
        "host: arguments {}validated, {} ms per call, compiled code cached in {}",
        if config.host.validate_arguments {
            ""
        } else {
            "not "
        },
        config.host.call_timeout_ms,
        config
            .cache_dir()
            .map_or_else(|| "(nowhere)".into(), |d| d.display().to_string())
    )?;
    for plugin in config.each_plugin() {
        let name = plugin.name();
        let policy = plugin.policy()?;
        let pinned = if plugin.section().sha256.is_some() {
            ", sha256 pinned"
        } else {
            ""
        };
        let s = &supply[name];
        let shown = match plugin.source()? {
            Source::File(p) => p.display().to_string(),
            _ => s.source.clone(),
        };
        outln!("\nplugin {name} ({shown}{pinned})")?;
        outln!("  digest: {}", s.wasm)?;
        if let Some(m) = s.manifest {
            let how = match s.origin {
                Origin::Pulled => "pulled now",
                _ => "read from the plugin store",
            };
            outln!("  manifest: {m} ({how})")?;
        }
        outln!("  lock: {}", s.lock.describe())?;
        if let Some(r) = &s.registry {
            outln!("  registry: {}", r.describe())?;
        }
        outln!("  signature: {}", s.signature)?;
        let tools = host.extension_tools(name);
        if tools.is_empty() {
            outln!("  tools: none (hooks and prompt only)")?;
        } else {
            outln!("  tools: {}", tools.join(", "))?;
        }
        for line in describe_policy(&policy) {
            outln!("  {line}")?;
        }
    }
    if let Some(builtin) = config.builtin_config()?
        && let Some(code) = builtin
            .run_code_config()
            .filter(|_| builtin.offers(BuiltinTool::RunCode))
    {
        for (language, wasm) in &code.interpreters {
            outln!("\nrun_code {language} interpreter ({})", wasm.display())?;
            for line in describe_policy(&code.policy()) {
                outln!("  {line}")?;
            }
        }
    }
    for name in config.mcp.keys() {
        let server = config.mcp_server(name)?;
        let tools = host.extension_tools(&format!("mcp.{name}"));
        outln!("\nmcp {name} ({})", server.transport)?;
        outln!(
            "  tools: {}",
            if tools.is_empty() {
                "none".to_owned()
            } else {
                tools.join(", ")
            }
        )?;
        outln!(
            "  runs outside the sandbox: it has what its {} has; {} ms per request",
            match server.transport {
                McpTransport::Command { .. } => "process (toolhost's user and environment)",
                McpTransport::Http { .. } => "host",
            },
            server.timeout.as_millis()
        )?;
    }
    let count = host.rules().rules().len();
    if count > 0 || config.host.rules_from_annotations || config.host.rules_default != "allow" {
        outln!(
            "\nrules: {count}; when none matches: {}{}",
            config.host.rules_default,
            if config.host.rules_from_annotations {
                ", unless the tool's readOnlyHint allows or destructiveHint asks"
            } else {
                ""
            }
        )?;
        for never in never_deciding(host) {
            outln!("  warning: {never}")?;
        }
    }
    Ok(())
}
