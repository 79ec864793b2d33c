//! The host's own state stays outside every grant (rule C5).
//!
//! A plugin granted a directory that holds the compiled-code cache could
//! replace another plugin's compiled code; one granted the configuration
//! file or a plugin's wasm could rewrite its own grants or another plugin.
//! So a policy whose granted directory is, contains, or lies inside any of
//! the host's protected paths is refused, naming both.
//!
//! Paths are compared by identity, not by spelling: each is resolved
//! (symlinks followed) and the directories on the way are compared by
//! device and inode, so `a/../b`, a symlink or a bind mount does not hide an
//! overlap. A protected path that does not exist yet (a cache directory not
//! created) is judged by its nearest existing ancestor, where it would be
//! created. A hard link to a protected *file* inside a granted directory is
//! not found: keep protected files on their own, away from granted trees.

use std::path::{Path, PathBuf};

use super::policy::DirGrant;

/// A path the host keeps for itself, and what it is (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedPath {
    /// The path (a file or a directory; it need not exist yet).
    pub path: PathBuf,
    /// What it is, such as "the compiled-code cache".
    pub what: String,
}

impl ProtectedPath {
    /// `path`, described as `what`.
    pub fn new(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            what: what.into(),
        }
    }
}

/// Checks that no granted directory is, contains or lies inside a protected
/// path. The error names the grant, the protected path and what it is.
pub fn check_grants(dirs: &[DirGrant], protected: &[ProtectedPath]) -> Result<(), GrantOverlap> {
    for grant in dirs {
        for p in protected {
            if let Some(how) = overlap(&grant.host, &p.path) {
                return Err(GrantOverlap {
                    grant: grant.host.clone(),
                    how,
                    protected: p.path.clone(),
                    what: p.what.clone(),
                });
            }
        }
    }
    Ok(())
}

/// A granted directory that is, contains or lies inside a protected path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "granted directory {} {how} {} ({what}); the host's own files must stay outside every grant",
    grant.display(),
    protected.display()
)]
#[non_exhaustive]
pub struct GrantOverlap {
    /// The granted host directory.
    pub grant: PathBuf,
    /// `is`, `contains` or `lies inside`.
    pub how: &'static str,
    /// The protected path.
    pub protected: PathBuf,
    /// What the protected path is (`the compiled-code cache`, …).
    pub what: String,
}

/// How a granted directory overlaps a protected path, if it does.
fn overlap(grant: &Path, protected: &Path) -> Option<&'static str> {
    let grant_id = identity(grant)?;
    let base = nearest_existing(protected)?;
    let protected_exists = protected.exists();
    let within_grant = ancestry(&base).contains(&grant_id);
    if within_grant {
        return Some(
            if protected_exists && identity(protected) == Some(grant_id) {
                "is"
            } else {
                "contains"
            },
        );
    }
    if protected_exists
        && let Some(pid) = identity(protected)
        && ancestry(grant).contains(&pid)
    {
        return Some("lies inside");
    }
    None
}

/// The path itself if it exists, else its nearest existing ancestor.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    absolute
        .ancestors()
        .find(|a| a.exists())
        .map(Path::to_path_buf)
}

/// The identities of `path` (resolved) and of every directory above it.
fn ancestry(path: &Path) -> Vec<Id> {
    let Ok(resolved) = path.canonicalize() else {
        return Vec::new();
    };
    resolved.ancestors().filter_map(identity).collect()
}

#[cfg(unix)]
type Id = (u64, u64);

/// What makes a file the same file: device and inode.
#[cfg(unix)]
fn identity(path: &Path) -> Option<Id> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.dev(), m.ino()))
}

#[cfg(not(unix))]
type Id = PathBuf;

/// Without inodes, the resolved path stands for the file.
#[cfg(not(unix))]
fn identity(path: &Path) -> Option<Id> {
    path.canonicalize().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DirMode;

    fn grant(host: &Path) -> Vec<DirGrant> {
        vec![DirGrant {
            host: host.to_owned(),
            guest: "/data".into(),
            mode: DirMode::ReadWrite,
        }]
    }

    #[test]
    fn c5_a_grant_that_contains_the_cache_is_refused_naming_both() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("cache");
        std::fs::create_dir(&cache).unwrap();
        let err = check_grants(
            &grant(root.path()),
            &[ProtectedPath::new(&cache, "the compiled-code cache")],
        )
        .unwrap_err();
        assert!(
            err.to_string().contains(&root.path().display().to_string()),
            "{err}"
        );
        assert!(
            err.to_string().contains(&cache.display().to_string()),
            "{err}"
        );
        assert!(err.to_string().contains("contains"), "{err}");
        assert!(err.to_string().contains("the compiled-code cache"), "{err}");
    }

    #[test]
    fn c5_a_grant_inside_or_equal_to_protected_state_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let inner = root.path().join("entries");
        std::fs::create_dir(&inner).unwrap();
        let cache = [ProtectedPath::new(root.path(), "the compiled-code cache")];
        let err = check_grants(&grant(&inner), &cache).unwrap_err();
        assert!(err.to_string().contains("lies inside"), "{err}");
        let err = check_grants(&grant(root.path()), &cache).unwrap_err();
        assert!(err.to_string().contains(" is "), "{err}");
    }

    #[test]
    fn c5_a_cache_not_created_yet_is_judged_where_it_would_be() {
        let root = tempfile::tempdir().unwrap();
        let cache = root.path().join("not/yet/cache");
        let err = check_grants(
            &grant(root.path()),
            &[ProtectedPath::new(&cache, "the compiled-code cache")],
        );
        assert!(err.is_err());
        let sibling = root.path().join("sibling");
        std::fs::create_dir(&sibling).unwrap();
        check_grants(
            &grant(&sibling),
            &[ProtectedPath::new(&cache, "the compiled-code cache")],
        )
        .unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn c5_spelling_does_not_hide_an_overlap() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let other = root.path().join("other");
        std::fs::create_dir_all(data.join("conf")).unwrap();
        std::fs::create_dir(&other).unwrap();
        let config = data.join("conf/toolhost.toml");
        std::fs::write(&config, "").unwrap();
        // Through `..` and through a symlink to the same directory.
        let dotted = other.join("../data");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&data, &link).unwrap();
        let protected = [ProtectedPath::new(&config, "the configuration file")];
        for g in [&dotted, &link] {
            let err = check_grants(&grant(g), &protected).unwrap_err();
            assert!(err.to_string().contains("the configuration file"), "{err}");
        }
        // A protected path reached through a symlink is found too.
        let via_link = [ProtectedPath::new(
            link.join("conf/toolhost.toml"),
            "the configuration file",
        )];
        assert!(check_grants(&grant(&data), &via_link).is_err());
        // An unrelated directory is fine.
        check_grants(&grant(&other), &protected).unwrap();
    }
}
