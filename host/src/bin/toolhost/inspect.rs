//! `toolhost inspect`.

use std::path::Path;

use serde_json::json;
use toolhost::sandbox::Sandbox;

use crate::Failure;
use crate::output::outln;

pub(crate) async fn run(path: &Path, as_json: bool) -> Result<(), Failure> {
    let bytes =
        std::fs::read(path).map_err(|e| Failure(format!("cannot read {}: {e}", path.display())))?;
    // Every WebAssembly binary starts with `\0asm`; anything else is not
    // worth handing to the compiler, whose complaint would be a byte dump.
    if !bytes.starts_with(b"\0asm") {
        return Err(Failure(format!(
            "{} is not a WebAssembly component (it does not start with \\0asm)",
            path.display()
        )));
    }
    let sandbox = Sandbox::new(Sandbox::default_cache_dir())?;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("plugin");
    // Listing the tools runs the plugin, with nothing granted. Loaded
    // first, so that the compile (which a terminal shows) bears its name,
    // and the reading of its world finds the code compiled.
    let plugin = sandbox.plugin_bytes(name, bytes.clone()).load().await?;
    let info = sandbox.inspect(bytes).await?;
    if as_json {
        let doc = json!({
            "world": info.world.to_string(),
            "version": info.version,
            "sha256": plugin.digest(),
            "tools": plugin.tools().iter().map(|t| json!({
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "concurrency_safe": t.concurrency_safe,
                "idempotent": t.idempotent,
            })).collect::<Vec<_>>(),
            "capabilities": info.capabilities.iter().map(|c| json!({
                "import": c.import,
                "meaning": c.meaning,
            })).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(());
    }
    outln!("{}", path.display())?;
    outln!("  world:   toolhost:plugin/{}@{}", info.world, info.version)?;
    outln!("  sha256:  {}", plugin.digest())?;
    outln!("  tools:")?;
    for t in plugin.tools() {
        let safety = match t.concurrency_safe {
            Some(true) => "concurrency-safe",
            Some(false) => "exclusive",
            None => "concurrency undeclared",
        };
        let idem = if t.idempotent { ", idempotent" } else { "" };
        outln!("    {} — {} ({safety}{idem})", t.name, t.description)?;
        outln!("      schema: {}", serde_json::to_string(&t.parameters)?)?;
    }
    outln!("  imports (what it may ask to be granted):")?;
    for c in &info.capabilities {
        outln!("    {} — {}", c.import, c.meaning)?;
    }
    Ok(())
}
