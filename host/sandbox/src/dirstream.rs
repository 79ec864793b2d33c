//! Directory listings that hold bounded host memory (rule C11).
//!
//! wasmtime-wasi 48 implements `wasi:filesystem`'s `read-directory` by
//! reading the whole directory, with a `stat` of every entry, into one
//! vector before it returns the stream: a stream on a directory of 100,000
//! entries holds all of them in the host for as long as the guest keeps
//! it, yet counts as one handle, and the listing is one blocking call that
//! the call's deadline cannot cut short. This module replaces
//! `[method]descriptor.read-directory`,
//! `[method]directory-entry-stream.read-directory-entry` and the stream's
//! resource (linker shadowing), so that a stream:
//!
//! - reads the directory lazily, one `getdents` buffer of
//!   [`BUFFER_BYTES`] at a time, on a blocking thread: a stream holds at
//!   most one buffer and the entries decoded from it, and the work left
//!   behind when a call is cut off at its deadline is at most one batch;
//! - is charged [`STREAM_HOST_BYTES`], its worst case, against the
//!   instance's memory limit while it is open (see
//!   [`Limiter::charge`](crate::state::Limiter::charge)), so the listings an
//!   instance can hold are bounded by the same number as its own memory.
//!
//! Confinement is the descriptor's: the stream reads a fresh descriptor of
//! the directory opened through the guest's own (`openat(dir, ".")`), and
//! the type of an entry the kernel does not name is read with
//! `fstatat(stream, name, AT_SYMLINK_NOFOLLOW)`, where `name` is a single
//! component the kernel returned. No path the guest wrote is looked at.
//!
//! Entries come out as wasmtime-wasi's did: without `.` and `..`, with the
//! type an `lstat` gives, a name that is not UTF-8 as an
//! `illegal-byte-sequence` error for that entry, and a read error ending
//! the listing.
//!
//! Linux only (it reads `getdents64` buffers through rustix's `RawDir`);
//! elsewhere wasmtime-wasi's own listing is left in place.

use std::collections::VecDeque;
use std::mem::MaybeUninit;
use std::sync::Arc;

use rustix::fd::OwnedFd;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};
use wasmtime::component::{Linker, Resource, ResourceType};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{DescriptorType, DirectoryEntry, ErrorCode};

use super::state::StoreState;

/// The instance wasmtime-wasi defines `wasi:filesystem/types` under; the
/// shadowing below must use the very same name.
const TYPES: &str = "wasi:filesystem/types@0.2.12";

/// The `getdents64` buffer of one stream: one batch is what one call
/// returns into it.
pub(crate) const BUFFER_BYTES: usize = 4 << 10;

/// What one open stream is charged against the instance's memory limit:
/// its worst case, with room to spare. A batch holds at most
/// `BUFFER_BYTES / 24` entries (the smallest `linux_dirent64` record is 24
/// bytes), each a 32-byte slot in a deque of at most twice that capacity
/// and a name of at most its record's length on the heap (allocator
/// overhead included, under 24 bytes per name): about 4 KiB of buffer,
/// 11 KiB of slots and 8 KiB of names.
pub(crate) const STREAM_HOST_BYTES: usize = 32 << 10;

/// One entry as the guest receives it, or the error in its place.
type Entry = Result<DirectoryEntry, ErrorCode>;

/// The host side of one `directory-entry-stream`.
pub(crate) struct DirStream {
    /// The descriptor and buffer read from; `None` while a batch is being
    /// read on a blocking thread.
    reader: Option<Box<Reader>>,
    /// Entries read and not yet handed to the guest.
    batch: VecDeque<Entry>,
    /// The directory is read to its end (or its read failed).
    done: bool,
}

/// A stream's own descriptor of the directory and its `getdents` buffer.
struct Reader {
    fd: OwnedFd,
    buf: Vec<MaybeUninit<u8>>,
}

/// Replaces wasmtime-wasi's listing in `linker` (which must already hold
/// wasmtime-wasi's `wasi:filesystem/types`) with the bounded one.
pub(crate) fn add_to_linker(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    crate::shadow::shadowing(linker, shadow)
}

fn shadow(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    let mut types = linker.instance(TYPES)?;
    types.resource(
        "directory-entry-stream",
        ResourceType::host::<DirStream>(),
        |mut store, rep| {
            store
                .data_mut()
                .close_dir_stream(Resource::<DirStream>::new_own(rep))
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.read-directory",
        |mut store, (fd,): (Resource<Descriptor>,)| {
            Box::new(async move { open(store.data_mut(), fd).await.map(|r| (r,)) })
        },
    )?;
    types.func_wrap_async(
        "[method]directory-entry-stream.read-directory-entry",
        |mut store, (stream,): (Resource<DirStream>,)| {
            Box::new(async move { next(store.data_mut(), stream).await.map(|r| (r,)) })
        },
    )?;
    Ok(())
}

/// `read-directory`: a stream on the directory `fd`, charged against the
/// instance's memory limit. A guest error (`fd` is a file, the directory
/// cannot be opened) is returned to the guest; a handle that is not one,
/// a full table or the memory limit fails the call.
async fn open(
    state: &mut StoreState,
    fd: Resource<Descriptor>,
) -> wasmtime::Result<Result<Resource<DirStream>, ErrorCode>> {
    let dir = match state.table().get(&fd)? {
        Descriptor::Dir(d) => Arc::clone(&d.dir),
        Descriptor::File(_) => return Ok(Err(ErrorCode::NotDirectory)),
    };
    let opened = tokio::task::spawn_blocking(move || {
        // A descriptor of its own, so that its position is the stream's
        // (a `dup` would share it with every other stream of `dir`).
        rustix::fs::openat(
            &*dir,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
            Mode::empty(),
        )
    })
    .await?;
    let fd = match opened {
        Ok(fd) => fd,
        Err(e) => return Ok(Err(ErrorCode::from(std::io::Error::from(e)))),
    };
    state.charge_host(STREAM_HOST_BYTES, "a directory listing")?;
    let stream = DirStream {
        reader: Some(Box::new(Reader {
            fd,
            buf: vec![MaybeUninit::uninit(); BUFFER_BYTES],
        })),
        batch: VecDeque::new(),
        done: false,
    };
    match state.table().push(stream) {
        Ok(handle) => Ok(Ok(handle)),
        Err(e) => {
            state.refund_host(STREAM_HOST_BYTES);
            Err(e.into())
        }
    }
}

/// `read-directory-entry`: the next entry, reading the next batch on a
/// blocking thread when the last one is used up.
async fn next(
    state: &mut StoreState,
    stream: Resource<DirStream>,
) -> wasmtime::Result<Result<Option<DirectoryEntry>, ErrorCode>> {
    loop {
        let s = state.table().get_mut(&stream)?;
        if let Some(entry) = s.batch.pop_front() {
            return Ok(entry.map(Some));
        }
        if s.done {
            return Ok(Ok(None));
        }
        let Some(mut reader) = s.reader.take() else {
            // Only a batch cut off by the call's end leaves no reader, and
            // then nothing runs after it.
            return Ok(Err(ErrorCode::Io));
        };
        let (reader, batch, done) = tokio::task::spawn_blocking(move || {
            let (batch, done) = reader.read_batch();
            (reader, batch, done)
        })
        .await?;
        let s = state.table().get_mut(&stream)?;
        s.reader = Some(reader);
        s.batch = batch;
        s.done = done;
    }
}

impl Reader {
    /// Reads what one `getdents64` call returns: the entries, and whether
    /// the directory is at its end (or failed; the error is the last
    /// entry). A batch may be empty without being the end (a buffer of
    /// only `.` and `..`).
    fn read_batch(&mut self) -> (VecDeque<Entry>, bool) {
        let Self { fd, buf } = self;
        let mut raw = RawDir::new(&*fd, buf);
        let mut batch = VecDeque::new();
        loop {
            match raw.next() {
                None => return (batch, true),
                Some(Err(e)) => {
                    batch.push_back(Err(ErrorCode::from(std::io::Error::from(e))));
                    return (batch, true);
                }
                Some(Ok(entry)) => {
                    let name = entry.file_name();
                    let bytes = name.to_bytes();
                    if bytes != b"." && bytes != b".." {
                        batch.push_back(decode(fd, name, entry.file_type()));
                    }
                }
            }
            if raw.is_buffer_empty() {
                return (batch, false);
            }
        }
    }
}

/// One entry: its name as UTF-8 and its type, from the kernel's record or,
/// where the file system does not say, from an `lstat` relative to the
/// stream's descriptor.
fn decode(dir: &OwnedFd, name: &std::ffi::CStr, kind: FileType) -> Entry {
    let Ok(text) = std::str::from_utf8(name.to_bytes()) else {
        return Err(ErrorCode::IllegalByteSequence);
    };
    let kind = match kind {
        FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .map_err(|e| ErrorCode::from(std::io::Error::from(e)))?,
        known => known,
    };
    Ok(DirectoryEntry {
        type_: descriptor_type(kind),
        name: text.to_owned(),
    })
}

/// The guest's name for a file type, as wasmtime-wasi gives it (a FIFO or
/// a socket is `unknown`).
fn descriptor_type(kind: FileType) -> DescriptorType {
    match kind {
        FileType::Directory => DescriptorType::Directory,
        FileType::RegularFile => DescriptorType::RegularFile,
        FileType::Symlink => DescriptorType::SymbolicLink,
        FileType::CharacterDevice => DescriptorType::CharacterDevice,
        FileType::BlockDevice => DescriptorType::BlockDevice,
        _ => DescriptorType::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(dir: &std::path::Path) -> Reader {
        let fd = rustix::fs::open(
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        Reader {
            fd,
            buf: vec![MaybeUninit::uninit(); BUFFER_BYTES],
        }
    }

    /// Every entry comes out once, in batches no larger than one buffer
    /// holds, each batch within what a stream is charged.
    #[test]
    fn c11_a_listing_is_read_in_batches_of_one_buffer() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..2000 {
            std::fs::write(dir.path().join(format!("file-{i:05}")), b"").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("file-00000", dir.path().join("link")).unwrap();
        let mut r = reader(dir.path());
        let mut names = std::collections::HashSet::new();
        let mut batches = 0;
        loop {
            let (batch, done) = r.read_batch();
            assert!(batch.len() <= BUFFER_BYTES / 24, "{}", batch.len());
            let held: usize = batch
                .iter()
                .map(|e| 32 + e.as_ref().map_or(0, |e| e.name.len() + 24))
                .sum();
            assert!(
                BUFFER_BYTES + 2 * held <= STREAM_HOST_BYTES,
                "a batch holds {held} bytes"
            );
            for e in batch {
                let e = e.unwrap();
                let expected = match e.name.as_str() {
                    "sub" => DescriptorType::Directory,
                    "link" => DescriptorType::SymbolicLink,
                    _ => DescriptorType::RegularFile,
                };
                assert_eq!(e.type_, expected, "{}", e.name);
                assert!(names.insert(e.name), "an entry came twice");
            }
            batches += 1;
            if done {
                break;
            }
        }
        assert_eq!(names.len(), 2002);
        assert!(batches > 10, "{batches} batches for 2002 entries");
    }

    #[test]
    fn c11_a_name_that_is_not_utf8_is_an_error_for_that_entry_alone() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let bad = std::ffi::OsStr::from_bytes(b"bad-\xff");
        std::fs::write(dir.path().join(bad), b"").unwrap();
        std::fs::write(dir.path().join("good"), b"").unwrap();
        let (batch, _) = reader(dir.path()).read_batch();
        let (errors, names): (Vec<_>, Vec<_>) = batch.into_iter().partition(Result::is_err);
        assert!(
            matches!(errors.as_slice(), [Err(ErrorCode::IllegalByteSequence)]),
            "{errors:?}"
        );
        assert_eq!(names[0].as_ref().unwrap().name, "good");
    }
}
