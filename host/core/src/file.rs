//! Opening the host's own files (cache entries, stored blobs, keys) as what
//! they must be: regular files of bounded size. Someone who can write such
//! a directory but cannot forge what is in it (a MAC, a digest) could still
//! plant a FIFO (an open that never returns), a link to `/dev/zero` (a read
//! that never ends) or a huge file, and hang or exhaust the host when it
//! next reads there.

use std::fs::{File, OpenOptions};
use std::io::{self, ErrorKind, Read as _};
use std::path::Path;

/// Opens `path` for reading if it is a regular file of at most `max`
/// bytes; `Ok(None)` if nothing is there. A symbolic link, a FIFO, a
/// device, a directory or a larger file is an `InvalidData` error saying
/// which. The open neither follows a link nor waits for a FIFO's writer.
pub fn open_regular(path: &Path, max: u64) -> io::Result<Option<File>> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt as _;
        // NONBLOCK only matters for a FIFO or a device: it makes their open
        // return at once, and the type check below refuses them.
        options.custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32);
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            return Err(invalid("is a symbolic link"));
        }
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(invalid("is not a regular file"));
    }
    if meta.len() > max {
        return Err(invalid(&format!(
            "holds {} bytes, more than the {max} it may",
            meta.len()
        )));
    }
    Ok(Some(file))
}

/// The whole of `file`; an `InvalidData` error if it holds more than
/// `max` bytes (it may have grown since it was opened), reading no further.
pub fn read_bounded(file: File, max: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(invalid(&format!(
            "grew past the {max} bytes an entry may hold"
        )));
    }
    Ok(bytes)
}

/// [`open_regular`] then [`read_bounded`]: the bytes of the regular file
/// at `path`, at most `max` of them; `Ok(None)` if nothing is there.
pub fn read_regular(path: &Path, max: u64) -> io::Result<Option<Vec<u8>>> {
    open_regular(path, max)?
        .map(|f| read_bounded(f, max))
        .transpose()
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, what.to_owned())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn c5_planted_fifos_links_and_huge_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![0u8; 2000]).unwrap();
        for (path, why) in [
            (&fifo, "is not a regular file"),
            (&zero, "is a symbolic link"),
            (&big, "holds 2000 bytes, more than the 1000"),
        ] {
            let err = open_regular(path, 1000).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidData, "{}", path.display());
            assert!(err.to_string().contains(why), "{err}");
        }
        assert!(
            open_regular(&dir.path().join("none"), 1000)
                .unwrap()
                .is_none()
        );
        let ok = dir.path().join("ok");
        std::fs::write(&ok, b"entry").unwrap();
        let file = open_regular(&ok, 1000).unwrap().unwrap();
        assert_eq!(read_bounded(file, 1000).unwrap(), b"entry");
    }

    #[test]
    fn c5_a_file_that_grows_after_the_open_is_cut_at_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e");
        std::fs::write(&path, b"12345").unwrap();
        let file = open_regular(&path, 8).unwrap().unwrap();
        std::fs::write(&path, vec![b'x'; 100]).unwrap();
        let err = read_bounded(file, 8).unwrap_err();
        assert!(err.to_string().contains("grew past the 8 bytes"), "{err}");
    }
}
