//! `toolhost.lock` (rule S2): the digest every plugin resolved to, written
//! by `toolhost lock`, enforced by `--locked`.
//!
//! ```toml
//! # Written by `toolhost lock`: what each plugin resolved to. Commit it;
//! # `--locked` runs refuse anything else.
//! version = 1
//!
//! [plugins.calc]
//! source = "oci://127.0.0.1:5000/tools/calc:1.0"
//! manifest = "sha256:…"   # the OCI manifest (references only)
//! wasm = "sha256:…"       # the component's bytes
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Sha256;

/// The lock file's name, beside `toolhost.toml`.
pub const LOCK_FILE: &str = "toolhost.lock";

/// The only format version there is.
const VERSION: u32 = 1;

/// A parsed lock file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    version: u32,
    /// Every plugin's entry, by name.
    #[serde(default)]
    pub plugins: BTreeMap<String, LockEntry>,
}

/// What one plugin resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LockEntry {
    /// The `wasm` value it was resolved from: a path or an `oci://`
    /// reference. An entry for another source does not apply.
    pub source: String,
    /// The OCI manifest's digest, for a reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Sha256>,
    /// The component's digest.
    pub wasm: Sha256,
}

impl LockEntry {
    /// An entry for a file.
    pub fn file(source: impl Into<String>, wasm: Sha256) -> Self {
        Self {
            source: source.into(),
            manifest: None,
            wasm,
        }
    }

    /// An entry for an OCI reference.
    pub fn oci(source: impl Into<String>, manifest: Sha256, wasm: Sha256) -> Self {
        Self {
            source: source.into(),
            manifest: Some(manifest),
            wasm,
        }
    }
}

/// A lock file that cannot be read, parsed or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Reading or writing failed.
    #[error("{}: cannot {what} it", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// `read` or `write`.
        what: &'static str,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a lock file.
    #[error("{}: not a lock file (write it again with `toolhost lock`)", path.display())]
    Parse {
        /// The lock file.
        path: PathBuf,
        /// What is wrong.
        #[source]
        source: LockParseError,
    },
}

/// Why text is not a lock file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockParseError {
    /// The text is not TOML, or not a lock file's keys and values (toml's
    /// error, the source, names the line).
    #[error("its TOML does not fit the lock file format")]
    Toml(#[from] toml::de::Error),
    /// The file is of a format version this toolhost does not read.
    #[error("version {found} is not one this toolhost reads (it reads version {VERSION})")]
    Version {
        /// The version the file gives.
        found: u32,
    },
}

impl Default for LockFile {
    fn default() -> Self {
        Self::new()
    }
}

impl LockFile {
    /// An empty lock file.
    pub fn new() -> Self {
        Self {
            version: VERSION,
            plugins: BTreeMap::new(),
        }
    }

    /// Reads the lock file at `path`; `None` if there is none.
    pub fn read(path: &Path) -> Result<Option<Self>, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LockError::Io {
                    path: path.into(),
                    what: "read",
                    source,
                });
            }
        };
        Self::parse(&text)
            .map(Some)
            .map_err(|source| LockError::Parse {
                path: path.into(),
                source,
            })
    }

    /// Parses lock file text; fails on text that is not a lock file's TOML
    /// or gives another format version.
    pub fn parse(text: &str) -> Result<Self, LockParseError> {
        let lock: Self = toml::from_str(text)?;
        if lock.version != VERSION {
            return Err(LockParseError::Version {
                found: lock.version,
            });
        }
        Ok(lock)
    }

    /// The lock file's text.
    pub fn to_text(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        format!(
            "# Written by `toolhost lock`: what each plugin resolved to. Commit it;\n\
             # `--locked` runs refuse anything else.\n{body}"
        )
    }

    /// Writes the lock file to `path`, replacing it whole.
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let io = |source| LockError::Io {
            path: path.into(),
            what: "write",
            source,
        };
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        file.write_all(self.to_text().as_bytes()).map_err(io)?;
        file.persist(path).map_err(|e| io(e.error))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s2_the_lock_file_round_trips_and_bad_ones_name_the_problem() {
        let mut lock = LockFile::new();
        lock.plugins.insert(
            "calc".into(),
            LockEntry::oci(
                "oci://127.0.0.1:5000/calc:1",
                Sha256::of(b"m"),
                Sha256::of(b"w"),
            ),
        );
        lock.plugins.insert(
            "notes".into(),
            LockEntry::file("notes.wasm", Sha256::of(b"n")),
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        lock.write(&path).unwrap();
        assert_eq!(LockFile::read(&path).unwrap(), Some(lock));
        assert_eq!(LockFile::read(&dir.path().join("none")).unwrap(), None);

        for (text, says) in [
            ("version = 2\n", "version 2"),
            (
                "version = 1\n[plugins.a]\nsource = \"a\"\nwasm = \"x\"\n",
                "sha256",
            ),
            ("version = 1\nextra = 1\n", "extra"),
            ("version = 1\n[plugins.a]\nsource = \"a\"\n", "wasm"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = LockFile::read(&path).unwrap_err();
            let reported = toolhost_core::report(&e);
            assert!(reported.contains(says), "{text}: {reported}");
            assert!(e.to_string().contains("toolhost lock"), "{e}");
        }
    }

    #[test]
    fn s2_a_bad_lock_file_keeps_why_as_its_source() {
        use std::error::Error as _;
        let e = LockFile::parse("version = 1\nextra = 1\n").unwrap_err();
        assert!(matches!(e, LockParseError::Toml(_)), "{e:?}");
        let toml = e.source().expect("toml's error");
        assert!(toml.downcast_ref::<toml::de::Error>().is_some());
        assert!(toml.to_string().contains("extra"), "{toml}");
        assert_eq!(
            LockFile::parse("version = 2\n"),
            Err(LockParseError::Version { found: 2 })
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        std::fs::write(&path, "version = 2\n").unwrap();
        let e = LockFile::read(&path).unwrap_err();
        let source = e.source().expect("why");
        assert_eq!(
            source.downcast_ref::<LockParseError>(),
            Some(&LockParseError::Version { found: 2 })
        );
    }
}
