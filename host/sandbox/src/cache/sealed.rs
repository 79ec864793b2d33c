//! Linux: a cache entry's payload copied into a sealed memfd, checked on the
//! way in, for wasmtime to map.
//!
//! Reading an entry into a buffer and handing the buffer to
//! `Component::deserialize` costs two copies: the read, then wasmtime's copy
//! into fresh memory it can make executable, with a page fault for every
//! page of each, and a memfd of its own for each linear memory's initial
//! image. Mapping the entry's file instead (`deserialize_file`) would let a
//! writer of the cache change the bytes between the MAC check and their use.
//! So the payload is copied once, in chunks, into an anonymous memfd that
//! only this process holds; each chunk is fed to the MAC as it passes; then
//! the memfd is sealed against any write, growth or shrinking, and wasmtime
//! maps it like a file. What the MAC checked is what runs, and nothing can
//! change it afterwards. Measured in BENCHMARKS.md.

use std::fs::File;
use std::io::{ErrorKind, Read as _, Write as _};
use std::path::Path;

use rustix::fs::{MemfdFlags, SealFlags};

use super::MAX_ENTRY;
use toolhost_core::file::open_regular;

/// How much is copied (and hashed) at a time.
const CHUNK: usize = 128 << 10;

/// What [`copy_checked`] found at an entry's path.
pub(super) enum Entry {
    /// No entry.
    Missing,
    /// An entry that is not one this host wrote for this plugin: not a
    /// regular file, oversized, wrong header, wrong MAC, empty payload. The
    /// reason is for the log.
    Invalid(String),
    /// The payload, authenticated, in a sealed memfd.
    Sealed(File),
}

/// Copies the payload of the entry at `path` into a sealed memfd. The entry
/// is `magic`, a 32-byte MAC, then the payload; `mac` is primed with
/// everything the MAC covers before the payload. An error means the memfd
/// route is unavailable or the entry unreadable: the caller reads it the
/// plain way instead.
pub(super) fn copy_checked(
    path: &Path,
    magic: &[u8],
    mut mac: blake3::Hasher,
) -> std::io::Result<Entry> {
    let mut file = match open_regular(path, MAX_ENTRY) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(Entry::Missing),
        Err(e) if e.kind() == ErrorKind::InvalidData => return Ok(Entry::Invalid(e.to_string())),
        Err(e) => return Err(e),
    };
    let unauthentic = || Entry::Invalid(super::UNAUTHENTIC.to_owned());
    let mut head = vec![0u8; magic.len() + 32];
    match file.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(unauthentic()),
        Err(e) => return Err(e),
    }
    let Some((stored, _)) = super::split_entry(&head, magic) else {
        return Ok(unauthentic());
    };
    let mut memfd = File::from(rustix::fs::memfd_create(
        "toolhost-cache-entry",
        MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
    )?);
    let mut chunk = vec![0u8; CHUNK];
    let mut copied: u64 = 0;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        copied += n as u64;
        // The file may have grown since it was measured at the open.
        if copied > MAX_ENTRY {
            return Ok(Entry::Invalid(format!(
                "grew past the {MAX_ENTRY} bytes an entry may hold"
            )));
        }
        mac.update(&chunk[..n]);
        memfd.write_all(&chunk[..n])?;
    }
    // Compared in constant time: the MAC is a secret's function.
    if copied == 0 || mac.finalize() != stored {
        return Ok(unauthentic());
    }
    rustix::fs::fcntl_add_seals(
        &memfd,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL,
    )?;
    Ok(Entry::Sealed(memfd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(dir: &Path, bytes: &[u8]) -> std::path::PathBuf {
        let path = dir.join("e.cwasm");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn mac_of(payload: &[u8]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&[7; 32]);
        h.update(payload);
        *h.finalize().as_bytes()
    }

    fn primed() -> blake3::Hasher {
        blake3::Hasher::new_keyed(&[7; 32])
    }

    #[test]
    fn c5_a_sealed_entry_holds_the_checked_payload_and_refuses_writes() {
        let dir = tempfile::tempdir().unwrap();
        let payload = vec![0xabu8; 3 * CHUNK + 17];
        let path = entry(
            dir.path(),
            &[b"MAGIC".as_slice(), &mac_of(&payload), &payload].concat(),
        );
        let Entry::Sealed(mut memfd) = copy_checked(&path, b"MAGIC", primed()).unwrap() else {
            panic!("a valid entry is sealed");
        };
        use std::io::{Seek as _, SeekFrom};
        memfd.seek(SeekFrom::Start(0)).unwrap();
        let mut back = Vec::new();
        memfd.read_to_end(&mut back).unwrap();
        assert_eq!(back, payload);
        // Nothing can change the bytes once checked: not a write, not a
        // truncation, not a growth.
        assert!(memfd.write_all(b"x").is_err());
        assert!(memfd.set_len(1).is_err());
        assert!(memfd.set_len(1 << 30).is_err());
        // Nor a second open of it, as wasmtime's is.
        let proc_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&memfd));
        if let Ok(mut again) = std::fs::OpenOptions::new().write(true).open(&proc_path) {
            assert!(again.write_all(b"x").is_err());
        }
    }

    #[test]
    fn c5_entries_that_fail_a_check_are_invalid() {
        let dir = tempfile::tempdir().unwrap();
        let payload = b"compiled code".to_vec();
        let good = [b"MAGIC".as_slice(), &mac_of(&payload), &payload].concat();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut wrong_magic = good.clone();
        wrong_magic[0] = b'X';
        for (what, bytes) in [
            ("a flipped payload byte", flipped),
            ("another magic", wrong_magic),
            ("a truncated header", good[..20].to_vec()),
            ("no payload", [b"MAGIC".as_slice(), &mac_of(b"")].concat()),
        ] {
            let path = entry(dir.path(), &bytes);
            assert!(
                matches!(
                    copy_checked(&path, b"MAGIC", primed()).unwrap(),
                    Entry::Invalid(_)
                ),
                "{what}"
            );
        }
        assert!(matches!(
            copy_checked(&dir.path().join("none"), b"MAGIC", primed()).unwrap(),
            Entry::Missing
        ));
    }
}
