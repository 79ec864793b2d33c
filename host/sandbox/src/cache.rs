//! The compiled-code cache on disk.
//!
//! An entry is keyed by the wasm's sha256 under a directory named after the
//! engine (toolhost's version, wasmtime's version and a digest of every engine
//! setting that affects compiled code). Compiled code is machine code the
//! host runs, so an entry is only used if it is authenticated (rule C5):
//! each carries a keyed BLAKE3 MAC over the wasm's digest, the engine key and
//! the payload, with a 32-byte key kept *outside* the cache (a file beside
//! it, `<cache>.key`, created with mode 0600 on first use). Someone who can
//! write the cache but not read the key cannot forge an entry, nor move one
//! plugin's valid entry over another's (the MAC binds it to its wasm).
//! BLAKE3 rather than HMAC-SHA256 because an entry is several times the
//! wasm's size and is checked on every load; it is four times faster here.
//! An entry that fails the MAC (corrupt, truncated, foreign) is recompiled,
//! and one for other engine settings fails wasmtime's own compatibility
//! check and is recompiled too. Nothing that fails a check is ever run.
//!
//! The bytes checked are the bytes run: on Linux an entry's payload is
//! copied into a sealed memfd, checked on the way in, and wasmtime maps the
//! memfd (`cache/sealed.rs`; it keeps one descriptor per loaded component,
//! from the host's own reserve); elsewhere, or if that fails, the entry is
//! read into memory, checked there, and copied from there.
//!
//! A tool list is kept beside the compiled code, authenticated the same
//! way, and keyed by the wasm's digest and by everything else the list can
//! depend on (rule W6, `cache/listing.rs`): a plugin whose environment or
//! limits changed is listed again, and one that could base its list on a
//! granted directory's contents or a granted host's answers is never
//! served a cached list.
//!
//! A record that a plugin's settings passed their schema (rule O1) is kept
//! the same way, named by a keyed digest of everything that check reads
//! (`cache/checked_settings.rs`): a load with the same settings for the
//! same wasm reads it instead of checking them again. Only a pass is
//! recorded, and a record holds nothing but its MAC.
//!
//! A cache directory (or key) that another user can write is refused, and
//! the host's policies refuse any grant that overlaps the cache or its key.
//! Entries are written to a temporary file and renamed into place, so a
//! reader never sees a partial entry, and two processes compiling the same
//! plugin at once both succeed.

use std::fs;
use std::hash::{Hash, Hasher};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toolhost_core::{Cause, file};
use wasmtime::Engine;
use wasmtime::component::Component;

mod checked_settings;
mod functions;
mod listing;
#[cfg(target_os = "linux")]
mod sealed;

use checked_settings::SettingsKey;
pub(crate) use listing::ListingKey;

/// The most bytes a compiled-code entry may hold: far beyond any compiled
/// plugin, and a bound on what a planted entry can make the host read.
const MAX_ENTRY: u64 = 1 << 30;

/// The most bytes a tool-list entry may hold.
const MAX_TOOLS_ENTRY: u64 = 64 << 20;

/// Why an entry that is a regular file is not used.
const UNAUTHENTIC: &str =
    "fails its authentication (corrupt, or not written by this host for this plugin)";

const MAGIC: &[u8; 8] = b"THCWASM3";
/// The header of a tool-list entry (see [`CodeCache::read_tools`]).
const TOOLS_MAGIC: &[u8; 8] = b"THCTOOL1";
/// The first bytes of a record of settings that passed their check.
const SETTINGS_MAGIC: &[u8; 8] = b"THCSETS1";
const KEY_LEN: usize = 32;

/// Where a component's compiled code came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeSource {
    /// Read from the cache.
    Cache,
    /// Compiled now (no cache, no entry, or an entry that failed a check).
    Compiled,
    /// Not loaded yet: the tool list came from the cache, and the code is
    /// read (or compiled) by the first call that needs it.
    Deferred,
}

pub(crate) struct CodeCache {
    /// The directory and the MAC key, or no cache.
    store: Option<(PathBuf, [u8; KEY_LEN])>,
    /// [`engine_key`], computed once (the engine never changes).
    engine_key: std::sync::OnceLock<String>,
}

/// Why a cache directory cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The directory or key could not be created or read.
    #[error("compiled-code cache {path}")]
    Io {
        /// The directory or key file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: Cause,
    },
    /// Another user could replace compiled code the host would run.
    #[error(
        "compiled-code cache {path}: {reason}; the host runs what it finds there, so it must be private to this user (chmod go-w, or choose another cache_dir)"
    )]
    NotPrivate {
        /// The directory or key file.
        path: PathBuf,
        /// Who else can write it.
        reason: String,
    },
}

/// The key file of the cache in `dir`: beside it, never inside.
pub(crate) fn key_path(dir: &Path) -> PathBuf {
    let mut name = dir.file_name().unwrap_or_default().to_os_string();
    name.push(".key");
    dir.with_file_name(name)
}

/// A sha256 digest in lowercase hex.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
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
    hex::encode(&h.0.finalize()[..16])
}

impl CodeCache {
    /// Cranelift's per-function cache inside this cache (`cache/functions.rs`),
    /// or `None` if there is no cache.
    pub(crate) fn function_store(&self) -> Option<std::sync::Arc<dyn wasmtime::CacheStore>> {
        let (dir, key) = self.store.as_ref()?;
        Some(std::sync::Arc::new(functions::FunctionStore::new(
            dir, *key,
        )))
    }

    /// No cache: every load compiles.
    pub(crate) fn none() -> Self {
        Self {
            store: None,
            engine_key: std::sync::OnceLock::new(),
        }
    }

    /// The cache in `dir`, created private to the user if missing, with its
    /// key beside it (created on first use). Refused if another user can
    /// write either.
    pub(crate) fn open(dir: PathBuf) -> Result<Self, CacheError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |e: std::io::Error| CacheError::Io {
                path,
                source: Cause::new(e),
            }
        };
        create_private_dir(&dir).map_err(io(&dir))?;
        check_private(&dir)?;
        let key_file = key_path(&dir);
        let key = read_or_create_key(&key_file).map_err(io(&key_file))?;
        check_private(&key_file)?;
        Ok(Self {
            engine_key: std::sync::OnceLock::new(),
            store: Some((dir, key)),
        })
    }

    /// The compiled component for `wasm` (whose sha256 is `digest`): from the
    /// cache when a valid entry exists, else compiled and stored.
    #[cfg(test)]
    pub(crate) fn load_or_compile(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
    ) -> wasmtime::Result<(Component, CodeSource)> {
        self.load_or_compile_with(engine, wasm, digest, || {})
    }

    /// The compiled component for `wasm` (whose sha256 is `digest`): from the
    /// cache when a valid entry exists, else compiled (`compiling` is called
    /// just before) and stored.
    pub(crate) fn load_or_compile_with(
        &self,
        engine: &Engine,
        wasm: &[u8],
        digest: &str,
        compiling: impl FnOnce(),
    ) -> wasmtime::Result<(Component, CodeSource)> {
        let Some((dir, key)) = &self.store else {
            compiling();
            return Ok((Component::new(engine, wasm)?, CodeSource::Compiled));
        };
        let engine_key = self.engine_key.get_or_init(|| engine_key(engine));
        let path = dir.join(engine_key).join(format!("{digest}.cwasm"));
        let mac = EntryMac {
            key,
            digest,
            engine_key,
        };
        if let Some(component) = read_entry(engine, &path, &mac) {
            return Ok((component, CodeSource::Cache));
        }
        compiling();
        let component = Component::new(engine, wasm)?;
        let payload = component.serialize()?;
        if let Err(e) = write_entry(&path, &mac.of(&payload), &payload) {
            tracing::warn!(path = %path.display(), error = %e, "could not store compiled code in the cache");
        }
        Ok((component, CodeSource::Compiled))
    }
}

impl CodeCache {
    /// What a tool list listed under `policy` is keyed by besides the
    /// wasm (rule W6); `None` if there is no cache, or if the list may
    /// depend on something no key captures (a granted directory's
    /// contents, a granted host's answers) and so is never cached.
    pub(crate) fn listing_key(&self, policy: &crate::PluginPolicy) -> Option<ListingKey> {
        let (_, key) = self.store.as_ref()?;
        ListingKey::of(key, policy)
    }

    /// Where the tool list of the wasm with `digest` listed under
    /// `listing` is kept, and the MAC that authenticates it: bound to both
    /// and to this host's version (whose checks and meaning the list was
    /// read under), not to the engine.
    fn tools_entry(&self, digest: &str, listing: &ListingKey) -> Option<(PathBuf, ToolsMac<'_>)> {
        let (dir, key) = self.store.as_ref()?;
        let path = dir
            .join(format!("tools-{}", env!("CARGO_PKG_VERSION")))
            .join(format!("{digest}-{}.json", listing.as_str()));
        Some((
            path,
            ToolsMac {
                key,
                digest: digest.to_owned(),
                listing: listing.as_str().to_owned(),
            },
        ))
    }

    /// The cached tool list of the wasm with `digest` listed under
    /// `listing`, if there is an authentic one. A list that fails its MAC
    /// is ignored (and the plugin is loaded to list its tools again).
    pub(crate) fn read_tools(&self, digest: &str, listing: &ListingKey) -> Option<Vec<u8>> {
        let (path, entry) = self.tools_entry(digest, listing)?;
        read_authentic(
            &path,
            MAX_TOOLS_ENTRY,
            TOOLS_MAGIC,
            |payload| entry.mac(payload).into(),
            ("cached tool list", "loading the plugin instead"),
        )
    }

    /// Keeps the tool list of the wasm with `digest` listed under
    /// `listing`; a failure to write is logged, not an error (the next run
    /// loads the plugin instead).
    pub(crate) fn write_tools(&self, digest: &str, listing: &ListingKey, payload: &[u8]) {
        let Some((path, entry)) = self.tools_entry(digest, listing) else {
            return;
        };
        if let Err(e) =
            write_entry_with(&path, TOOLS_MAGIC, &entry.mac(payload), payload, Flush::Yes)
        {
            tracing::warn!(path = %path.display(), error = %e, "could not store a tool list in the cache");
        }
    }
}

impl CodeCache {
    /// Where the record that `policy`'s settings passed their check for
    /// the wasm with `digest` is kept, and the MAC that authenticates it:
    /// bound to its key (`cache/checked_settings.rs`) and to this host's
    /// version, whose checks the verdict is.
    fn settings_record(
        &self,
        digest: &str,
        policy: &crate::PluginPolicy,
    ) -> Option<(PathBuf, [u8; 32])> {
        let (dir, key) = self.store.as_ref()?;
        let name = SettingsKey::of(key, digest, policy);
        let mut h = blake3::Hasher::new_keyed(key);
        h.update(SETTINGS_MAGIC);
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(name.as_str().as_bytes());
        let path = dir
            .join(format!("settings-{}", env!("CARGO_PKG_VERSION")))
            .join(name.as_str());
        Some((path, *h.finalize().as_bytes()))
    }

    /// Whether an authentic record says `policy`'s settings passed their
    /// check for the wasm with `digest` (rule O1). `false` without a cache.
    pub(crate) fn settings_passed(&self, digest: &str, policy: &crate::PluginPolicy) -> bool {
        let Some((path, mac)) = self.settings_record(digest, policy) else {
            return false;
        };
        read_authentic(
            &path,
            (SETTINGS_MAGIC.len() + 32) as u64,
            SETTINGS_MAGIC,
            |_| mac.into(),
            ("record of checked settings", "checking them"),
        )
        .is_some()
    }

    /// Records that `policy`'s settings passed their check for the wasm
    /// with `digest`; a failure to write is logged, not an error (the next
    /// load checks them again).
    pub(crate) fn remember_settings_passed(&self, digest: &str, policy: &crate::PluginPolicy) {
        let Some((path, mac)) = self.settings_record(digest, policy) else {
            return;
        };
        if let Err(e) = write_entry_with(&path, SETTINGS_MAGIC, &mac, &[], Flush::No) {
            tracing::warn!(path = %path.display(), error = %e, "could not record checked settings in the cache");
        }
    }
}

/// The MAC of a tool-list entry: keyed, over the wasm's digest, the
/// listing key and this host's version.
struct ToolsMac<'a> {
    key: &'a [u8; KEY_LEN],
    digest: String,
    listing: String,
}

impl ToolsMac<'_> {
    fn mac(&self, payload: &[u8]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(self.key);
        h.update(TOOLS_MAGIC);
        h.update(self.digest.as_bytes());
        h.update(self.listing.as_bytes());
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(payload);
        *h.finalize().as_bytes()
    }
}

/// The MAC of a compiled-code entry: keyed, over the wasm's digest, the
/// engine key and the payload.
struct EntryMac<'a> {
    key: &'a [u8; KEY_LEN],
    digest: &'a str,
    engine_key: &'a str,
}

impl EntryMac<'_> {
    /// A hasher fed everything the MAC covers before the payload.
    fn primed(&self) -> blake3::Hasher {
        let mut h = blake3::Hasher::new_keyed(self.key);
        h.update(self.digest.as_bytes());
        h.update(self.engine_key.as_bytes());
        h
    }

    fn of(&self, payload: &[u8]) -> [u8; 32] {
        *self.primed().update(payload).finalize().as_bytes()
    }
}

/// The component in the entry at `path`, if the entry is authentic and fits
/// this engine. On Linux the payload goes through a sealed memfd that
/// wasmtime maps (see `sealed`); where that route fails, it is read into
/// memory and copied from there.
fn read_entry(engine: &Engine, path: &Path, mac: &EntryMac<'_>) -> Option<Component> {
    #[cfg(target_os = "linux")]
    match sealed::copy_checked(path, MAGIC, mac.primed()) {
        Ok(sealed::Entry::Missing) => return None,
        Ok(sealed::Entry::Invalid(why)) => {
            refused(path, &why);
            return None;
        }
        Ok(sealed::Entry::Sealed(memfd)) => {
            if let Some(component) = deserialize_sealed(engine, path, &memfd) {
                return Some(component);
            }
        }
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "cache entry not read through a memfd; reading it into memory");
        }
    }
    // Read, not mapped: the bytes the MAC checks are the bytes that are
    // deserialized, whatever happens to the file meanwhile.
    match file::read_regular(path, MAX_ENTRY) {
        Ok(Some(bytes)) => check_and_deserialize(engine, path, &bytes, mac),
        Ok(None) => None,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            refused(path, &e.to_string());
            None
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unreadable cache entry; recompiling");
            None
        }
    }
}

/// The payload of the small entry at `path` (at most `max` bytes, read
/// into memory: the bytes checked are the bytes used), if it begins with
/// `magic` and a MAC that `mac` of the payload matches. Anything else is
/// `None`, logged as an unusable or unauthentic `what` (the host then
/// does `instead`).
pub(crate) fn read_authentic(
    path: &Path,
    max: u64,
    magic: &[u8],
    mac: impl FnOnce(&[u8]) -> blake3::Hash,
    (what, instead): (&str, &str),
) -> Option<Vec<u8>> {
    let mut bytes = match file::read_regular(path, max) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "unusable {what}; {instead}");
            return None;
        }
    };
    // `blake3::Hash` compares in constant time: the MAC is a secret's
    // function.
    match split_entry(&bytes, magic) {
        Some((stored, payload)) if mac(payload) == stored => {
            bytes.drain(..magic.len() + 32);
            Some(bytes)
        }
        _ => {
            tracing::warn!(path = %path.display(), "{what} fails its authentication; {instead}");
            None
        }
    }
}

/// The MAC an entry stores and the payload after it, if `bytes` begin with
/// `magic` and a whole 32-byte MAC.
fn split_entry<'b>(bytes: &'b [u8], magic: &[u8]) -> Option<(blake3::Hash, &'b [u8])> {
    let (stored, payload) = bytes.strip_prefix(magic)?.split_first_chunk::<32>()?;
    Some((blake3::Hash::from_bytes(*stored), payload))
}

/// Logs why the entry at `path` is not used (it is recompiled and
/// replaced).
fn refused(path: &Path, why: &str) {
    tracing::warn!(path = %path.display(), "cache entry {why}; recompiling");
}

// The `unsafe` of the sandbox: loading precompiled code (see SAFETY below).
#[allow(unsafe_code)]
fn check_and_deserialize(
    engine: &Engine,
    path: &Path,
    bytes: &[u8],
    mac: &EntryMac<'_>,
) -> Option<Component> {
    // Compared in constant time: the MAC is a secret's function.
    let payload = match split_entry(bytes, MAGIC) {
        Some((stored, payload))
            if !payload.is_empty() && blake3::Hash::from(mac.of(payload)) == stored =>
        {
            payload
        }
        _ => {
            refused(path, UNAUTHENTIC);
            return None;
        }
    };
    // SAFETY: the payload is exactly what `Component::serialize` produced
    // for this plugin's wasm and this engine configuration when the entry
    // was written: its MAC, under a key only this user can read, binds it
    // to both. `deserialize` re-checks engine compatibility.
    match unsafe { Component::deserialize(engine, payload) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "incompatible cache entry; recompiling");
            None
        }
    }
}

/// The component in a sealed memfd that [`sealed::copy_checked`] filled and
/// authenticated; `None` if wasmtime cannot map it (no `/proc`) or the
/// entry is for other engine settings, and the caller reads it plainly.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn deserialize_sealed(engine: &Engine, path: &Path, memfd: &fs::File) -> Option<Component> {
    use std::os::fd::AsRawFd as _;
    // wasmtime maps a file by path: this process's own descriptor of the
    // memfd, opened again. The seals are the memfd's, whoever opens it.
    let fd_path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
    // SAFETY: as in `check_and_deserialize`: the memfd holds exactly the
    // payload whose MAC was just checked, and its seals forbid any change
    // to it from now on, by this process or any other.
    match unsafe { Component::deserialize_file(engine, &fd_path) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "sealed cache entry not mapped; reading it into memory");
            None
        }
    }
}

fn write_entry(path: &Path, mac: &[u8; 32], payload: &[u8]) -> std::io::Result<()> {
    write_entry_with(path, MAGIC, mac, payload, Flush::Yes)
}

/// Whether an entry is flushed to disk before it is renamed into place.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flush {
    /// Yes: a whole component, costly to compile again.
    Yes,
    /// No: one of many small entries, where an `fsync` each would cost more
    /// than compiling again the few a crash could tear (a torn entry fails
    /// its MAC).
    No,
}

/// Writes `magic`, `mac` and `payload` to a temporary file beside `path`
/// and renames it into place, so that no reader sees a partial entry. The
/// directory is created (private) only when missing.
pub(crate) fn write_entry_with(
    path: &Path,
    magic: &[u8],
    mac: &[u8; 32],
    payload: &[u8],
    flush: Flush,
) -> std::io::Result<()> {
    let dir = path.parent().expect("entries live in a directory");
    let mut tmp = match tempfile::NamedTempFile::new_in(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_private_dir(dir)?;
            tempfile::NamedTempFile::new_in(dir)?
        }
        other => other?,
    };
    tmp.write_all(magic)?;
    tmp.write_all(mac)?;
    tmp.write_all(payload)?;
    if flush == Flush::Yes {
        tmp.as_file().sync_all()?;
    }
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

/// Reads the key at `path`, or creates it (random, mode 0600). Two processes
/// creating it at once agree: each writes a temporary file and links it into
/// place only if no key is there yet, then reads whichever won.
fn read_or_create_key(path: &Path) -> std::io::Result<[u8; KEY_LEN]> {
    if let Some(bytes) = read_key_file(path)? {
        return key_from(&bytes, path);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600));
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(&rand::random::<[u8; KEY_LEN]>())?;
    tmp.as_file().sync_all()?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {}
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e.error),
    }
    let bytes = read_key_file(path)?.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "the key vanished as it was made",
        )
    })?;
    key_from(&bytes, path)
}

/// The key file's bytes, if it exists: a regular file, read within a small
/// bound (its length is checked by [`key_from`]).
fn read_key_file(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    file::read_regular(path, 4096)
}

fn key_from(bytes: &[u8], path: &Path) -> std::io::Result<[u8; KEY_LEN]> {
    bytes.try_into().map_err(|_| {
        std::io::Error::other(format!(
            "the key file {} holds {} bytes, not {KEY_LEN}; delete it (and the cache) to start afresh",
            path.display(),
            bytes.len()
        ))
    })
}

/// Refuses a directory or key that a user other than this one can write.
#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), CacheError> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::metadata(path).map_err(|e| CacheError::Io {
        path: path.to_owned(),
        source: Cause::new(e),
    })?;
    let me = rustix::process::geteuid().as_raw();
    let reason = if m.uid() != me {
        Some(format!(
            "it belongs to user {}, not to this user ({me})",
            m.uid()
        ))
    } else if m.mode() & 0o022 != 0 {
        Some(format!(
            "its mode {:o} lets other users write it",
            m.mode() & 0o7777
        ))
    } else {
        None
    };
    match reason {
        Some(reason) => Err(CacheError::NotPrivate {
            path: path.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), CacheError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine() -> Engine {
        Engine::default()
    }

    #[test]
    fn c5_the_key_lives_beside_the_cache_not_inside() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        let _cache = CodeCache::open(dir.clone()).unwrap();
        let key = key_path(&dir);
        assert_eq!(key, root.path().join("cache.key"));
        assert_eq!(fs::read(&key).unwrap().len(), KEY_LEN);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&key).unwrap().permissions().mode() & 0o777,
                0o600
            );
            assert_eq!(
                fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
        // Opening again reads the same key.
        let again = CodeCache::open(dir.clone()).unwrap();
        assert_eq!(again.store.unwrap().1.to_vec(), fs::read(&key).unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn c5_a_cache_others_can_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        let err = CodeCache::open(dir.clone()).err().unwrap();
        assert!(matches!(err, CacheError::NotPrivate { .. }), "{err}");
        assert!(err.to_string().contains("mode 777"), "{err}");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        CodeCache::open(dir.clone()).unwrap();
        let key = key_path(&dir);
        fs::set_permissions(&key, fs::Permissions::from_mode(0o666)).unwrap();
        let err = CodeCache::open(dir).err().unwrap();
        assert!(err.to_string().contains("cache.key"), "{err}");
    }

    #[test]
    fn o1_a_record_of_settings_that_passed_passes_only_the_same_check() {
        use serde_json::json;
        let root = tempfile::tempdir().unwrap();
        let cache = CodeCache::open(root.path().join("cache")).unwrap();
        let policy = |settings: serde_json::Value| crate::PluginPolicy {
            settings: settings.as_object().unwrap().clone(),
            ..crate::PluginPolicy::default()
        };
        let good = policy(json!({"prefix": "> "}));
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        assert!(!cache.settings_passed(&a, &good));
        cache.remember_settings_passed(&a, &good);
        assert!(cache.settings_passed(&a, &good));
        // Another wasm, other settings, another schema: checked afresh.
        assert!(!cache.settings_passed(&b, &good));
        assert!(!cache.settings_passed(&a, &policy(json!({"prefix": 5}))));
        let with_schema = crate::PluginPolicy {
            settings_schema: Some(json!({"type": "object"})),
            ..good.clone()
        };
        assert!(!cache.settings_passed(&a, &with_schema));
        // A record copied over another's name, planted, or made under
        // another cache's key is not believed.
        let (path, _) = cache.settings_record(&a, &good).unwrap();
        let (other_path, _) = cache.settings_record(&b, &good).unwrap();
        fs::copy(&path, &other_path).unwrap();
        assert!(!cache.settings_passed(&b, &good));
        let mut planted = SETTINGS_MAGIC.to_vec();
        planted.extend([0; 32]);
        fs::write(&other_path, &planted).unwrap();
        assert!(!cache.settings_passed(&b, &good));
        let foreign = CodeCache::open(root.path().join("other")).unwrap();
        let (foreign_path, _) = foreign.settings_record(&a, &good).unwrap();
        fs::create_dir_all(foreign_path.parent().unwrap()).unwrap();
        fs::copy(&path, &foreign_path).unwrap();
        assert!(!foreign.settings_passed(&a, &good));
        // A record with more in it than a MAC is refused unread.
        let mut longer = fs::read(&path).unwrap();
        longer.push(0);
        fs::write(&path, &longer).unwrap();
        assert!(!cache.settings_passed(&a, &good));
        // Without a cache nothing is remembered.
        let none = CodeCache::none();
        none.remember_settings_passed(&a, &good);
        assert!(!none.settings_passed(&a, &good));
    }

    #[test]
    fn c5_an_entry_moved_over_another_plugins_is_not_run() {
        let engine = engine();
        let root = tempfile::tempdir().unwrap();
        let cache = CodeCache::open(root.path().join("cache")).unwrap();
        let a = wat_component("a");
        let b = wat_component("b");
        let (da, db) = (sha256_hex(&a), sha256_hex(&b));
        cache.load_or_compile(&engine, &a, &da).unwrap();
        let (_, source) = cache.load_or_compile(&engine, &b, &db).unwrap();
        assert_eq!(source, CodeSource::Compiled);
        assert_eq!(
            cache.load_or_compile(&engine, &b, &db).unwrap().1,
            CodeSource::Cache
        );
        // The attacker copies a's valid entry over b's.
        let entries = root.path().join("cache").join(engine_key(&engine));
        fs::copy(
            entries.join(format!("{da}.cwasm")),
            entries.join(format!("{db}.cwasm")),
        )
        .unwrap();
        // b's load does not run a's code: the entry fails its MAC and b is
        // compiled from its own wasm.
        let (_, source) = cache.load_or_compile(&engine, &b, &db).unwrap();
        assert_eq!(source, CodeSource::Compiled);
    }

    #[test]
    fn c5_an_entry_made_under_another_key_is_not_run() {
        let engine = engine();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("cache");
        let wasm = wat_component("x");
        let digest = sha256_hex(&wasm);
        CodeCache::open(dir.clone())
            .unwrap()
            .load_or_compile(&engine, &wasm, &digest)
            .unwrap();
        // A new key (as if an attacker wrote entries without it).
        fs::remove_file(key_path(&dir)).unwrap();
        let cache = CodeCache::open(dir).unwrap();
        assert_eq!(
            cache.load_or_compile(&engine, &wasm, &digest).unwrap().1,
            CodeSource::Compiled
        );
    }

    /// The fast route is the one taken: an entry this host wrote is
    /// deserialized from its sealed memfd, not from the fallback read.
    #[cfg(target_os = "linux")]
    #[test]
    fn c5_an_entry_is_loaded_from_its_sealed_copy() {
        let engine = engine();
        let root = tempfile::tempdir().unwrap();
        let cache = CodeCache::open(root.path().join("cache")).unwrap();
        let wasm = wat_component("sealed");
        let digest = sha256_hex(&wasm);
        cache.load_or_compile(&engine, &wasm, &digest).unwrap();
        let (dir, key) = cache.store.as_ref().unwrap();
        let engine_key = engine_key(&engine);
        let path = dir.join(&engine_key).join(format!("{digest}.cwasm"));
        let mac = EntryMac {
            key,
            digest: &digest,
            engine_key: &engine_key,
        };
        let sealed::Entry::Sealed(memfd) =
            sealed::copy_checked(&path, MAGIC, mac.primed()).unwrap()
        else {
            panic!("the entry this host wrote is authentic");
        };
        assert!(deserialize_sealed(&engine, &path, &memfd).is_some());
    }

    /// A cache writer who cannot forge an entry cannot stall a load either:
    /// a FIFO (whose open would wait for a writer) or a link to
    /// `/dev/zero` (whose read would never end) planted where an entry
    /// belongs is refused at once, compiled over and replaced.
    #[cfg(unix)]
    #[test]
    fn c5_a_planted_fifo_or_endless_link_does_not_stall_a_load() {
        for plant in ["fifo", "link to /dev/zero"] {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join("cache");
            let wasm = wat_component(plant);
            let digest = sha256_hex(&wasm);
            let entries = dir.join(engine_key(&engine()));
            create_private_dir(&entries).unwrap();
            let entry = entries.join(format!("{digest}.cwasm"));
            if plant == "fifo" {
                plant_fifo(&entry);
            } else {
                std::os::unix::fs::symlink("/dev/zero", &entry).unwrap();
            }
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let cache = CodeCache::open(dir).unwrap();
                let engine = engine();
                let first = cache.load_or_compile(&engine, &wasm, &digest).unwrap().1;
                let second = cache.load_or_compile(&engine, &wasm, &digest).unwrap().1;
                let _ = tx.send((first, second));
            });
            // A bound far above a load's time: reaching it means stalled.
            let (first, second) = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("a planted {plant} stalled the load"));
            assert_eq!(first, CodeSource::Compiled, "{plant}");
            assert_eq!(
                second,
                CodeSource::Cache,
                "{plant}: replaced by a real entry"
            );
        }
    }

    /// A FIFO at `path`, whose open would wait for a writer.
    #[cfg(unix)]
    pub(super) fn plant_fifo(path: &Path) {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    /// Distinct small components: an empty component with a custom name.
    fn wat_component(name: &str) -> Vec<u8> {
        // The binary encoding of `(component)`: magic, version 0x0d, layer 1.
        let mut bytes = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        // A custom section makes the bytes (and digest) differ.
        let mut section = vec![0u8];
        let payload: Vec<u8> = [&[name.len() as u8], name.as_bytes()].concat();
        section.push(payload.len() as u8);
        section.extend_from_slice(&payload);
        bytes.extend_from_slice(&section);
        bytes
    }
}
