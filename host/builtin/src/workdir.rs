//! The working directory as a capability (rule B3): a `cap_std::fs::Dir`
//! opened once, through which every file operation, search and process
//! start is resolved. `..`, absolute paths and symlinks that lead outside it
//! are refused by cap-std itself, whatever the path's spelling.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use toolhost_core::error::ToolError;

/// An open handle on the working directory, with the path it was opened at
/// (kept for messages, for turning absolute paths inside it into relative
/// ones, and for starting processes in it).
#[derive(Debug)]
pub struct Workdir {
    root: PathBuf,
    dir: Dir,
}

impl Workdir {
    /// Opens `root` (which must be a directory) as the working directory.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        let dir = Dir::open_ambient_dir(&root, ambient_authority())?;
        Ok(Self { root, dir })
    }

    /// The capability handle on the working directory.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The canonical path the working directory was opened at.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path to hand to cap-std for a path argument: `""` and `"."` mean
    /// the working directory; an absolute path that lies under the working
    /// directory's own path is made relative to it, as a convenience for
    /// models that echo absolute paths. Everything else is passed through
    /// unchanged — cap-std refuses what leads outside, so this is not a
    /// security check.
    pub fn relative<'a>(&self, path: &'a str) -> &'a Path {
        let p = Path::new(path);
        if path.is_empty() {
            return Path::new(".");
        }
        match p.strip_prefix(&self.root) {
            Ok(rest) if rest.as_os_str().is_empty() => Path::new("."),
            Ok(rest) => rest,
            Err(_) => p,
        }
    }

    /// Opens a directory inside the working directory (following symlinks
    /// only while they stay inside). The error names `path` and says why.
    pub fn open_dir(&self, path: &str, arg: &str) -> Result<Dir, ToolError> {
        self.dir
            .open_dir(self.relative(path))
            .map_err(|e| io_error(path, arg, e))
    }
}

/// A raw descriptor of an open directory, for `fchdir` in a child process
/// between fork and exec. The caller keeps the `Dir` alive until the child
/// has started.
#[cfg_attr(
    not(any(feature = "search", feature = "shell", feature = "browser")),
    allow(dead_code)
)]
pub(crate) fn dir_fd(dir: &Dir) -> RawFd {
    dir.as_raw_fd()
}

/// Whether cap-std refused the path because it leads outside the directory
/// (cap-std reports this as a permission error that carries no OS error
/// code, unlike a real `EACCES`).
pub(crate) fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none()
}

/// Maps an error from a confined operation on `path` (given as argument
/// `arg`) to a [`ToolError`] that names the path: an escape is invalid
/// arguments, anything else a failure of the operation.
pub(crate) fn io_error(path: &str, arg: &str, e: io::Error) -> ToolError {
    if is_escape(&e) {
        return ToolError::invalid_arguments(
            format!("/{arg}"),
            format!(
                "`{path}` is outside the working directory (through `..`, an absolute path or a symlink that leads out)"
            ),
        );
    }
    let message = match e.kind() {
        io::ErrorKind::NotFound => format!("`{path}` does not exist"),
        io::ErrorKind::NotADirectory => format!("`{path}` is not a directory"),
        io::ErrorKind::IsADirectory => format!("`{path}` is a directory"),
        io::ErrorKind::PermissionDenied => format!("`{path}`: permission denied"),
        _ => format!("`{path}`: {e}"),
    };
    ToolError::failed(message)
}
