//! File operations (rules B2, B3): the [`FileOps`] trait the file tools talk
//! to, and [`LocalFileOps`], which performs them through the working
//! directory's capability handle.

use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::workdir::{Workdir, io_error};
use toolhost_core::error::ToolError;

/// What a directory entry is, without following symlinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (not followed).
    Symlink,
    /// Anything else (socket, device, fifo).
    Other,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntryInfo {
    /// The entry's file name (lossily decoded if not UTF-8).
    pub name: String,
    /// Its kind.
    pub kind: EntryKind,
    /// Its size in bytes (0 for anything but regular files).
    pub size: u64,
}

/// The filesystem operations behind the file tools. Paths are relative to
/// the implementation's working directory (an absolute path inside it is
/// accepted too); an implementation must refuse any path that leads outside
/// it, with an error naming the path.
///
/// Implementations may run anywhere — in process, in a sandbox, on a remote
/// machine — as long as they keep that contract. Methods may be called
/// concurrently.
#[async_trait]
pub trait FileOps: Send + Sync {
    /// The contents of the regular file at `path`. A file larger than
    /// `max_bytes` is an error that gives its size and the limit; a
    /// directory is an error.
    async fn read(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ToolError>;

    /// Replaces (or creates) the file at `path` with `contents`, creating
    /// missing parent directories.
    async fn write(&self, path: &str, contents: Vec<u8>) -> Result<(), ToolError>;

    /// The entries of the directory at `path`, sorted by name (byte order).
    async fn list(&self, path: &str) -> Result<Vec<DirEntryInfo>, ToolError>;
}

/// [`FileOps`] on the local filesystem, confined by a [`Workdir`]'s
/// capability handle. Blocking I/O runs on tokio's blocking pool.
#[derive(Debug, Clone)]
pub struct LocalFileOps {
    workdir: Arc<Workdir>,
}

impl LocalFileOps {
    /// File operations inside `workdir`.
    pub fn new(workdir: Arc<Workdir>) -> Self {
        Self { workdir }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Workdir) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let workdir = self.workdir.clone();
        tokio::task::spawn_blocking(move || f(&workdir))
            .await
            .map_err(|e| ToolError::failed(format!("file operation aborted: {e}")))?
    }
}

/// Refuses anything but a regular file, naming `path`.
fn regular_file(path: &str, meta: &cap_std::fs::Metadata) -> Result<(), ToolError> {
    if meta.is_dir() {
        Err(ToolError::failed(format!(
            "`{path}` is a directory; use list_dir"
        )))
    } else if !meta.is_file() {
        Err(ToolError::failed(format!(
            "`{path}` is not a regular file (a device, FIFO or socket)"
        )))
    } else {
        Ok(())
    }
}

#[async_trait]
impl FileOps for LocalFileOps {
    async fn read(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ToolError> {
        let path = path.to_owned();
        self.blocking(move |wd| {
            let err = |e| io_error(&path, "path", e);
            let rel = wd.relative(&path);
            // Checked before opening: opening a FIFO would block.
            regular_file(&path, &wd.dir().metadata(rel).map_err(err)?)?;
            let file = wd.dir().open(rel).map_err(err)?;
            let meta = file.metadata().map_err(err)?;
            regular_file(&path, &meta)?;
            if meta.len() > max_bytes {
                return Err(ToolError::failed(format!(
                    "`{path}` is {} bytes; the read limit is {max_bytes} bytes (search it with grep instead)",
                    meta.len()
                )));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            // `take` guards against a file that grows while it is read.
            file.take(max_bytes + 1)
                .read_to_end(&mut bytes)
                .map_err(err)?;
            if bytes.len() as u64 > max_bytes {
                return Err(ToolError::failed(format!(
                    "`{path}` grew past the read limit of {max_bytes} bytes while being read"
                )));
            }
            Ok(bytes)
        })
        .await
    }

    async fn write(&self, path: &str, contents: Vec<u8>) -> Result<(), ToolError> {
        let path = path.to_owned();
        self.blocking(move |wd| {
            let err = |e| io_error(&path, "path", e);
            let rel = wd.relative(&path);
            match wd.dir().metadata(rel) {
                Ok(meta) => regular_file(&path, &meta)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(err(e)),
            }
            match wd.dir().write(rel, &contents) {
                // Only a missing parent is created, so that the error for
                // anything else (an escape, a file in the way) is the write's.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                        wd.dir().create_dir_all(parent).map_err(err)?;
                    }
                    wd.dir().write(rel, &contents).map_err(err)
                }
                other => other.map_err(err),
            }
        })
        .await
    }

    async fn list(&self, path: &str) -> Result<Vec<DirEntryInfo>, ToolError> {
        let path = path.to_owned();
        self.blocking(move |wd| {
            let err = |e| io_error(&path, "path", e);
            let mut entries = Vec::new();
            for entry in wd.dir().read_dir(wd.relative(&path)).map_err(err)? {
                let entry = entry.map_err(err)?;
                let ft = entry.file_type().map_err(err)?;
                let kind = if ft.is_symlink() {
                    EntryKind::Symlink
                } else if ft.is_dir() {
                    EntryKind::Dir
                } else if ft.is_file() {
                    EntryKind::File
                } else {
                    EntryKind::Other
                };
                let size = match kind {
                    EntryKind::File => entry.metadata().map(|m| m.len()).unwrap_or(0),
                    _ => 0,
                };
                entries.push((entry.file_name(), kind, size));
            }
            entries.sort_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
            Ok(entries
                .into_iter()
                .map(|(name, kind, size)| DirEntryInfo {
                    name: Path::new(&name).to_string_lossy().into_owned(),
                    kind,
                    size,
                })
                .collect())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolhost_core::ErrorKind;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, LocalFileOps) {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("sub")).unwrap();
        std::fs::write(root.path().join("sub/a.txt"), "inside").unwrap();
        let ops = LocalFileOps::new(Arc::new(Workdir::open(root.path()).unwrap()));
        (root, outside, ops)
    }

    fn assert_escape(err: ToolError, path: &str) {
        assert_eq!(err.kind(), ErrorKind::InvalidArguments, "{err}");
        assert!(
            err.to_string().contains(&format!("`{path}` is outside")),
            "{err}"
        );
    }

    #[tokio::test]
    async fn b3_dotdot_is_refused() {
        let (_root, outside, ops) = setup();
        let name = outside.path().file_name().unwrap().to_str().unwrap();
        let path = format!("../{name}/secret.txt");
        assert_escape(ops.read(&path, 1024).await.unwrap_err(), &path);
        assert_escape(
            ops.write("sub/../../x.txt", b"x".to_vec())
                .await
                .unwrap_err(),
            "sub/../../x.txt",
        );
        assert_escape(ops.list("..").await.unwrap_err(), "..");
        // `..` that stays inside is fine.
        assert_eq!(ops.read("sub/../sub/a.txt", 1024).await.unwrap(), b"inside");
    }

    #[tokio::test]
    async fn b3_absolute_path_outside_is_refused() {
        let (root, outside, ops) = setup();
        let secret = outside.path().join("secret.txt");
        let secret = secret.to_str().unwrap();
        assert_escape(ops.read(secret, 1024).await.unwrap_err(), secret);
        assert_escape(
            ops.read("/etc/passwd", 1024).await.unwrap_err(),
            "/etc/passwd",
        );
        assert_escape(
            ops.write("/tmp/x.txt", b"x".to_vec()).await.unwrap_err(),
            "/tmp/x.txt",
        );
        // An absolute path inside the working directory is accepted.
        let inside = std::fs::canonicalize(root.path())
            .unwrap()
            .join("sub/a.txt");
        assert_eq!(
            ops.read(inside.to_str().unwrap(), 1024).await.unwrap(),
            b"inside"
        );
    }

    #[tokio::test]
    async fn b3_symlink_out_of_root_is_refused() {
        let (root, outside, ops) = setup();
        // Created after the operations were set up.
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), root.path().join("link"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("sub/dirlink")).unwrap();
        assert_escape(ops.read("link", 1024).await.unwrap_err(), "link");
        assert_escape(
            ops.read("sub/dirlink/secret.txt", 1024).await.unwrap_err(),
            "sub/dirlink/secret.txt",
        );
        assert_escape(ops.list("sub/dirlink").await.unwrap_err(), "sub/dirlink");
        assert_escape(
            ops.write("sub/dirlink/new.txt", b"x".to_vec())
                .await
                .unwrap_err(),
            "sub/dirlink/new.txt",
        );
        assert_escape(
            ops.write("link", b"overwritten".to_vec())
                .await
                .unwrap_err(),
            "link",
        );
        assert!(!outside.path().join("new.txt").exists());
        assert_eq!(
            std::fs::read(outside.path().join("secret.txt")).unwrap(),
            b"secret"
        );
        // A symlink that stays inside works.
        std::os::unix::fs::symlink("sub/a.txt", root.path().join("inlink")).unwrap();
        assert_eq!(ops.read("inlink", 1024).await.unwrap(), b"inside");
    }

    #[tokio::test]
    #[allow(unsafe_code)] // mkfifo, to make a FIFO to read
    async fn b1_read_refuses_large_files_directories_and_fifos() {
        let (root, _outside, ops) = setup();
        let err = ops.read("sub/a.txt", 3).await.unwrap_err();
        assert!(
            err.to_string().contains("6 bytes; the read limit is 3"),
            "{err}"
        );
        let err = ops.read("sub", 1024).await.unwrap_err();
        assert!(err.to_string().contains("`sub` is a directory"), "{err}");
        let err = ops.read("nope.txt", 1024).await.unwrap_err();
        assert_eq!(err.to_string(), "`nope.txt` does not exist");
        let fifo = std::ffi::CString::new(root.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: a plain mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let err = ops.read("fifo", 1024).await.unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let err = ops.write("fifo", b"x".to_vec()).await.unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[tokio::test]
    async fn b1_write_creates_parents_and_list_sorts() {
        let (root, _outside, ops) = setup();
        ops.write("new/deep/b.txt", b"hi".to_vec()).await.unwrap();
        assert_eq!(
            std::fs::read(root.path().join("new/deep/b.txt")).unwrap(),
            b"hi"
        );
        ops.write("new/a.txt", b"abc".to_vec()).await.unwrap();
        let entries = ops.list("new").await.unwrap();
        let names: Vec<_> = entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind, e.size))
            .collect();
        assert_eq!(
            names,
            [("a.txt", EntryKind::File, 3), ("deep", EntryKind::Dir, 0)]
        );
    }
}
