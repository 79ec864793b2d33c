//! Cranelift's per-function cache, on disk inside the compiled-code cache.
//!
//! A component's compiled-code entry is keyed by the whole wasm: change one
//! line of a plugin and all of it is compiled again. Yet a Python plugin is
//! mostly CPython and a JavaScript one mostly SpiderMonkey, the very same
//! functions in every build and every plugin of that language. Cranelift can
//! reuse the machine code of a function whose body (callees and all)
//! hashes the same as one it compiled before (wasmtime's "incremental
//! compilation"): it still translates each function, but skips optimising
//! and lowering the ones it has seen. This store keeps those results, so
//! that after the first plugin in a language, the next one, or the next
//! build of the same one, compiles only what is its own.
//!
//! An entry is machine code the host will run, so it is authenticated like
//! every other entry of the cache (rule C5): a keyed BLAKE3 MAC, under the
//! cache's key, over the function's cache key, this host's version and the
//! payload. An entry that fails it is ignored and the function compiled.
//! Entries are named by Cranelift's key (a sha256 of the function and the
//! compiler's settings) and spread over 256 directories by its first byte.
//! They are written without `fsync`: one lost or torn by a crash fails its
//! MAC, or is missing, and is compiled again.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};

use super::{Flush, KEY_LEN, read_authentic, write_entry_with};

/// The header of a function entry.
const MAGIC: &[u8; 8] = b"THCFUNC1";

/// The most bytes a function entry may hold: far beyond any one function's
/// code, and a bound on what a planted entry can make the host read.
const MAX_FUNCTION_ENTRY: u64 = 64 << 20;

/// Cranelift's results for single functions, kept in `<cache>/functions-<version>`.
pub(crate) struct FunctionStore {
    dir: PathBuf,
    key: [u8; KEY_LEN],
}

impl fmt::Debug for FunctionStore {
    // Never the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionStore")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl FunctionStore {
    /// The store inside the cache directory `cache_dir`, whose entries are
    /// authenticated with `key`. Nothing is created until the first entry
    /// is written.
    pub(super) fn new(cache_dir: &Path, key: [u8; KEY_LEN]) -> Self {
        Self {
            dir: cache_dir.join(format!("functions-{}", env!("CARGO_PKG_VERSION"))),
            key,
        }
    }

    /// Where the entry for Cranelift's `key` lives; `None` for a key that is
    /// not the 32-byte digest Cranelift hands out.
    fn path(&self, key: &[u8]) -> Option<PathBuf> {
        let digest: &[u8; 32] = key.try_into().ok()?;
        let name = hex::encode(digest);
        Some(self.dir.join(&name[..2]).join(name))
    }

    fn mac(&self, key: &[u8], payload: &[u8]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(MAGIC);
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        h.update(key);
        h.update(payload);
        h.finalize()
    }
}

impl wasmtime::CacheStore for FunctionStore {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let path = self.path(key)?;
        read_authentic(
            &path,
            MAX_FUNCTION_ENTRY,
            MAGIC,
            |payload| self.mac(key, payload),
            ("cached function", "compiling it"),
        )
        .map(Cow::Owned)
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let Some(path) = self.path(key) else {
            return false;
        };
        let mac = self.mac(key, &value);
        match write_entry_with(&path, MAGIC, mac.as_bytes(), &value, Flush::No) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "could not keep a compiled function");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::CacheStore as _;

    fn store(dir: &Path, key: u8) -> FunctionStore {
        FunctionStore::new(dir, [key; KEY_LEN])
    }

    #[test]
    fn c5_a_function_entry_is_read_back_only_where_and_how_it_was_written() {
        let tmp = tempfile::tempdir().unwrap();
        let ours = store(tmp.path(), 1);
        let (k1, k2) = ([1u8; 32], [2u8; 32]);
        assert!(ours.get(&k1).is_none());
        assert!(ours.insert(&k1, b"code of one".to_vec()));
        assert_eq!(ours.get(&k1).as_deref(), Some(&b"code of one"[..]));

        // Moved over another function's entry: bound to its own key.
        std::fs::copy(ours.path(&k1).unwrap(), {
            let p = ours.path(&k2).unwrap();
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            p
        })
        .unwrap();
        assert!(ours.get(&k2).is_none());
        // Read under another cache key: refused.
        assert!(store(tmp.path(), 9).get(&k1).is_none());
        // Truncated, or one byte changed: refused.
        let path = ours.path(&k1).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(ours.get(&k1).is_none());
        let mut changed = bytes.clone();
        *changed.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &changed).unwrap();
        assert!(ours.get(&k1).is_none());
        // A key that is not a 32-byte digest names no file.
        assert!(!ours.insert(b"../../escape", b"x".to_vec()));
        assert!(ours.get(b"../../escape").is_none());
    }

    /// A planted FIFO (whose open waits for a writer) or link to
    /// `/dev/zero` (whose read never ends) is refused at once.
    #[cfg(unix)]
    #[test]
    fn c5_a_planted_fifo_or_endless_link_does_not_stall_a_compilation() {
        let tmp = tempfile::tempdir().unwrap();
        let ours = store(tmp.path(), 1);
        let (fifo, link) = ([3u8; 32], [4u8; 32]);
        let fifo_path = ours.path(&fifo).unwrap();
        let link_path = ours.path(&link).unwrap();
        for p in [&fifo_path, &link_path] {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        }
        super::super::tests::plant_fifo(&fifo_path);
        std::os::unix::fs::symlink("/dev/zero", &link_path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send((ours.get(&fifo).is_none(), ours.get(&link).is_none()));
        });
        // A bound far above a read's time: reaching it means stalled.
        let refused = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a planted entry stalled the read");
        assert_eq!(refused, (true, true));
    }
}
