//! The compiled-code cache on disk.
//!
//! An entry is keyed by the wasm's sha256 under a directory named after the
//! engine (toolhost's version, wasmtime's version and a digest of every engine
//! setting that affects compiled code). Each file carries a BLAKE3 digest of
//! its own payload (BLAKE3 rather than sha256 because an entry is several
//! times the wasm's size and is checked on every load; it is four times
//! faster here): a corrupt or truncated entry fails that check and is recompiled,
//! and an entry for other engine settings fails wasmtime's own compatibility
//! check and is recompiled too. Nothing that fails a check is ever run.
//!
//! The checks protect against damage, not against someone who can write the
//! cache directory (they could write a matching digest): the directory is
//! created private to the user (mode 0700), and must stay so.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"THCWASM2";

/// Where a component's compiled code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Read from the cache.
    Cache,
    /// Compiled now (no cache, no entry, or an entry that failed a check).
    Compiled,
}

pub(crate) struct CodeCache {
    dir: Option<PathBuf>,
}

/// A sha256 digest in lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Feeds `Hash` data into sha256, so the engine's settings digest is stable
/// across runs (std's hashers promise no such thing).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        let d = self.0.clone().finalize();
        u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

fn engine_key(engine: &Engine) -> String {
    let mut h = ShaHasher(Sha256::new());
    env!("CARGO_PKG_VERSION").hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    hex(&h.0.finalize()[..16])
}

impl CodeCache {
    /// A cache in `dir` (created if missing), or none.
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        Self { dir }
    }

    /// The compiled component for `wasm` (whose sha256 is `digest`): from the
    /// cache when a valid entry exists, else compiled and stored.
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, CodeSource)> {
        let Some(dir) = &self.dir else {
            return Ok((Component::new(engine, wasm)?, CodeSource::Compiled));
        };
        let path = dir.join(engine_key(engine)).join(format!("{digest}.cwasm"));
        if let Some(component) = read_entry(engine, &path) {
            return Ok((component, CodeSource::Cache));
        }
        let component = Component::new(engine, wasm)?;
        if let Err(e) = write_entry(&path, &component.serialize()?) {
            tracing::warn!(path = %path.display(), error = %e, "could not store compiled code in the cache");
        }
        Ok((component, CodeSource::Compiled))
    }
}

fn read_entry(engine: &Engine, path: &Path) -> Option<Component> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unreadable cache entry; recompiling");
            return None;
        }
    };
    let header = MAGIC.len() + 32;
    let valid = bytes.len() > header
        && &bytes[..MAGIC.len()] == MAGIC
        && blake3::hash(&bytes[header..]).as_bytes() == &bytes[MAGIC.len()..header];
    if !valid {
        tracing::warn!(path = %path.display(), "corrupt cache entry; recompiling");
        return None;
    }
    // SAFETY: the payload is exactly what `Component::serialize` produced
    // for this engine configuration when the entry was written (its digest
    // matches), and `deserialize` re-checks engine compatibility.
    match unsafe { Component::deserialize(engine, &bytes[header..]) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "incompatible cache entry; recompiling");
            None
        }
    }
}

fn write_entry(path: &Path, payload: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("entries live in a directory");
    create_private_dir(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(MAGIC)?;
    tmp.write_all(blake3::hash(payload).as_bytes())?;
    tmp.write_all(payload)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}
