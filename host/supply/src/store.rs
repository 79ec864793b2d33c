//! The content-addressed store: pulled components under their sha256,
//! beside the compiled-code cache, and what each reference last resolved
//! to.
//!
//! ```text
//! STORE/blobs/sha256/<64 hex>        a component's bytes
//! STORE/refs/<sha256 of the ref>.json {"reference", "manifest", "wasm"}
//! ```
//!
//! Every write goes to a temporary file in the same directory and is
//! renamed into place, so a reader sees a whole entry or none. Every read of
//! a blob is hashed against its name: a blob changed on disk is refused,
//! never run.

use std::io;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{OciRef, Sha256};

/// The largest blob the store reads back: beyond any pull's bound (256 MiB
/// by default), and a bound on what a file planted in the store can make
/// the host read.
const MAX_BLOB: u64 = 1 << 30;

/// The largest reference record the store reads back.
const MAX_REF: u64 = 64 << 10;

/// The store in a directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// What a reference resolved to when it was last pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Resolved {
    /// The OCI manifest's digest.
    pub manifest: Sha256,
    /// The component's digest (its one layer).
    pub wasm: Sha256,
}

impl Resolved {
    /// A resolution of a manifest to its component.
    pub fn new(manifest: Sha256, wasm: Sha256) -> Self {
        Self { manifest, wasm }
    }
}

#[derive(Serialize, Deserialize)]
struct RefEntry {
    reference: String,
    #[serde(flatten)]
    resolved: Resolved,
}

/// A store that cannot be read or written, or holds a changed blob.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or directory of the store could not be read or written.
    #[error("the plugin store: cannot {what} {}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A blob's bytes no longer hash to its name: changed on disk since it
    /// was stored.
    #[error(
        "the plugin store's blob {} has changed on disk: it hashes to {actual}; \
         it is refused (pull it again with `toolhost pull`)",
        path.display()
    )]
    Corrupt {
        /// The blob's file.
        path: PathBuf,
        /// The digest its bytes have now.
        actual: Sha256,
    },
}

impl Store {
    /// The store in `dir` (created on the first write, private to the
    /// user).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn blob_path(&self, digest: &Sha256) -> PathBuf {
        self.dir.join("blobs").join("sha256").join(digest.hex())
    }

    fn ref_path(&self, reference: &OciRef) -> PathBuf {
        let key = Sha256::of(reference.to_string().as_bytes()).hex();
        self.dir.join("refs").join(format!("{key}.json"))
    }

    /// Whether the store holds a blob named `digest` (unverified: reading
    /// it checks it).
    pub fn has(&self, digest: &Sha256) -> bool {
        self.blob_path(digest).is_file()
    }

    /// The bytes stored under `digest`, checked to hash to it; `None` when
    /// there is no such blob.
    pub fn read(&self, digest: &Sha256) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.blob_path(digest);
        // A regular file within the largest pull: a FIFO or a link to an
        // endless device planted in the store cannot stall the host.
        let bytes = match toolhost_core::file::read_regular(&path, MAX_BLOB) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(source) => {
                return Err(StoreError::Io {
                    what: "read",
                    path,
                    source,
                });
            }
        };
        let actual = Sha256::of(&bytes);
        if actual != *digest {
            return Err(StoreError::Corrupt { path, actual });
        }
        Ok(Some(bytes))
    }

    /// Stores `bytes` under their digest, which it returns.
    pub fn write(&self, bytes: &[u8]) -> Result<Sha256, StoreError> {
        let digest = Sha256::of(bytes);
        self.write_file(&self.blob_path(&digest), bytes)?;
        Ok(digest)
    }

    /// What `reference` resolved to when it was last pulled, if the store
    /// remembers (and still holds the blob).
    pub fn lookup(&self, reference: &OciRef) -> Option<Resolved> {
        let text = toolhost_core::file::read_regular(&self.ref_path(reference), MAX_REF)
            .ok()
            .flatten()?;
        let entry: RefEntry = serde_json::from_slice(&text).ok()?;
        (entry.reference == reference.to_string() && self.has(&entry.resolved.wasm))
            .then_some(entry.resolved)
    }

    /// Remembers that `reference` resolved to `resolved`.
    pub fn remember(&self, reference: &OciRef, resolved: Resolved) -> Result<(), StoreError> {
        let entry = RefEntry {
            reference: reference.to_string(),
            resolved,
        };
        let text = serde_json::to_vec_pretty(&entry).unwrap_or_default();
        self.write_file(&self.ref_path(reference), &text)
    }

    fn write_file(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let dir = path.parent().unwrap_or(&self.dir);
        let io = |what, path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Io { what, path, source }
        };
        create_private_dir(dir).map_err(io("create", dir))?;
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io("write in", dir))?;
        file.write_all(bytes).map_err(io("write in", dir))?;
        file.as_file().sync_all().map_err(io("write in", dir))?;
        file.persist(path).map_err(|e| io("write", path)(e.error))?;
        Ok(())
    }
}

/// Creates `dir` and its parents, readable by this user alone.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s1_the_store_returns_what_it_stored_and_refuses_a_changed_blob() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("store"));
        let digest = store.write(b"component").unwrap();
        assert_eq!(digest, Sha256::of(b"component"));
        assert_eq!(store.read(&digest).unwrap().unwrap(), b"component");
        assert!(store.read(&Sha256::of(b"other")).unwrap().is_none());

        let r = OciRef::parse("oci://127.0.0.1:5000/calc:1").unwrap();
        assert_eq!(store.lookup(&r), None);
        let resolved = Resolved::new(Sha256::of(b"manifest"), digest);
        store.remember(&r, resolved).unwrap();
        assert_eq!(store.lookup(&r), Some(resolved));
        let other = OciRef::parse("oci://127.0.0.1:5000/calc:2").unwrap();
        assert_eq!(store.lookup(&other), None);

        let path = store.blob_path(&digest);
        std::fs::write(&path, b"c0mponent").unwrap();
        let e = store.read(&digest).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("changed on disk"), "{e}");
    }

    /// A file planted in the store where a blob belongs, which no digest
    /// check could catch before reading it, is refused at once instead of
    /// stalling the host: a link to an endless device, or a FIFO.
    #[cfg(unix)]
    #[test]
    fn s1_a_planted_endless_link_or_fifo_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("store"));
        let digest = store.write(b"component").unwrap();
        let path = store.blob_path(&digest);
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let why = |e: StoreError| std::error::Error::source(&e).unwrap().to_string();
        assert!(why(store.read(&digest).unwrap_err()).contains("symbolic link"));
        std::fs::remove_file(&path).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(why(store.read(&digest).unwrap_err()).contains("not a regular file"));
    }
}
