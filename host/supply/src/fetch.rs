//! Getting a plugin's bytes from its source under the lock's rule: the
//! one place that decides whether the network is asked.
//!
//! - A file is read. Locked, its digest must be the lock's.
//! - A reference, locked: the lock's component from the store, with no
//!   network request; when the store lacks it, the reference is pulled as
//!   written and refused unless it resolves to the lock's digests.
//! - A reference, unlocked: what it resolved to at its last pull, from the
//!   store; pulled when the store has never seen it. `toolhost pull` (or
//!   `toolhost lock`) moves it on.

use std::path::{Path, PathBuf};

use toolhost_core::Cause;

use crate::{LockEntry, OciRef, PullError, Registry, Resolved, Sha256, Store, StoreError};

/// A plugin's source with its path resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A component file.
    File(PathBuf),
    /// An OCI reference.
    Oci(OciRef),
}

/// Where a plugin's bytes came from this time.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Origin {
    /// Read from its file.
    File,
    /// Read from the store, without asking the registry.
    Store,
    /// Pulled from the registry into the store.
    Pulled,
}

/// A plugin's bytes and what is known of them.
#[derive(Debug)]
#[non_exhaustive]
pub struct Fetched {
    /// The component.
    pub bytes: Vec<u8>,
    /// Its digest, when the fetch checked it (every reference; a file only
    /// when locked). The sandbox's load checks it again as it hashes.
    pub wasm: Option<Sha256>,
    /// The manifest it came from (references only).
    pub manifest: Option<Sha256>,
    /// Where the bytes came from.
    pub origin: Origin,
}

/// Why a plugin's bytes could not be had. Each names the plugin.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The file cannot be read.
    #[error("plugin `{plugin}`: cannot read {}", path.display())]
    Read {
        /// The plugin.
        plugin: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The pull failed.
    #[error("plugin `{plugin}`")]
    Pull {
        /// The plugin.
        plugin: String,
        /// Why.
        #[source]
        source: PullError,
    },
    /// The store failed, or holds a changed blob.
    #[error("plugin `{plugin}`")]
    Store {
        /// The plugin.
        plugin: String,
        /// Why.
        #[source]
        source: StoreError,
    },
    /// A locked run, and the lock has no entry for the plugin, or one for
    /// another source.
    #[error("plugin `{plugin}` is not locked{}: run `toolhost lock`", match locked_source {
        Some(s) => format!(" (toolhost.lock's entry is for `{s}`)"),
        None => String::new(),
    })]
    NotLocked {
        /// The plugin.
        plugin: String,
        /// The source the lock's entry was written for, if there is one.
        locked_source: Option<String>,
    },
    /// A locked run, and the source resolves to other content than the
    /// lock says.
    #[error(
        "plugin `{plugin}`: {source_text} resolves to {what} {actual}, but toolhost.lock says {locked}; \
         run `toolhost lock` to accept it"
    )]
    Differs {
        /// The plugin.
        plugin: String,
        /// The source as written.
        source_text: String,
        /// `component` or `manifest`.
        what: &'static str,
        /// What the lock says (`sha256:…`).
        locked: String,
        /// What it resolves to now (`sha256:…`).
        actual: String,
    },
}

impl FetchError {
    /// The underlying error as a shared cause.
    pub fn into_cause(self) -> Cause {
        Cause::new(self)
    }
}

/// Fetches plugins' bytes from files, the store and registries.
#[derive(Debug, Clone)]
pub struct Supplier {
    store: Store,
}

impl Supplier {
    /// A supplier keeping pulled components in `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The bytes of plugin `plugin` from `source` (its `wasm` value as
    /// written is `source_text`), pulling with `registry` when it must.
    /// With `lock` (a locked run), `lock` is the plugin's entry: `None`
    /// refuses the plugin as not locked.
    pub async fn fetch(
        &self,
        plugin: &str,
        source: &Source,
        source_text: &str,
        registry: &Registry,
        lock: Option<Option<&LockEntry>>,
    ) -> Result<Fetched, FetchError> {
        let entry = match lock {
            None => None,
            Some(Some(e)) if e.source == source_text => Some(e),
            Some(other) => {
                return Err(FetchError::NotLocked {
                    plugin: plugin.to_owned(),
                    locked_source: other.map(|e| e.source.clone()),
                });
            }
        };
        let differs = |what, locked: Sha256, actual: Sha256| FetchError::Differs {
            plugin: plugin.to_owned(),
            source_text: source_text.to_owned(),
            what,
            locked: locked.to_string(),
            actual: actual.to_string(),
        };
        match source {
            Source::File(path) => {
                let bytes = read_file(plugin, path).await?;
                let Some(entry) = entry else {
                    return Ok(Fetched {
                        bytes,
                        wasm: None,
                        manifest: None,
                        origin: Origin::File,
                    });
                };
                let actual = Sha256::of(&bytes);
                if actual != entry.wasm {
                    return Err(differs("component", entry.wasm, actual));
                }
                Ok(Fetched {
                    bytes,
                    wasm: Some(actual),
                    manifest: None,
                    origin: Origin::File,
                })
            }
            Source::Oci(reference) => {
                let known = match entry {
                    Some(e) => e.manifest.map(|m| Resolved::new(m, e.wasm)),
                    None => self.store.lookup(reference),
                };
                if let Some(resolved) = known
                    && let Some(bytes) = self.read_store(plugin, &resolved.wasm)?
                {
                    return Ok(Fetched {
                        bytes,
                        wasm: Some(resolved.wasm),
                        manifest: Some(resolved.manifest),
                        origin: Origin::Store,
                    });
                }
                let resolved = self.pull(plugin, reference, registry).await?;
                if let Some(e) = entry {
                    if let Some(m) = e.manifest
                        && m != resolved.manifest
                    {
                        return Err(differs("manifest", m, resolved.manifest));
                    }
                    if e.wasm != resolved.wasm {
                        return Err(differs("component", e.wasm, resolved.wasm));
                    }
                }
                let bytes =
                    self.read_store(plugin, &resolved.wasm)?
                        .ok_or_else(|| FetchError::Store {
                            plugin: plugin.to_owned(),
                            source: StoreError::Io {
                                what: "read",
                                path: self.store.dir().to_owned(),
                                source: std::io::ErrorKind::NotFound.into(),
                            },
                        })?;
                Ok(Fetched {
                    bytes,
                    wasm: Some(resolved.wasm),
                    manifest: Some(resolved.manifest),
                    origin: Origin::Pulled,
                })
            }
        }
    }

    /// What plugin `plugin`'s source resolves to now, for `toolhost lock`:
    /// a file is hashed; a reference is asked of its registry (and pulled
    /// into the store if the store lacks its component).
    pub async fn lock_entry(
        &self,
        plugin: &str,
        source: &Source,
        source_text: &str,
        registry: &Registry,
    ) -> Result<LockEntry, FetchError> {
        match source {
            Source::File(path) => {
                let bytes = read_file(plugin, path).await?;
                Ok(LockEntry::file(source_text, Sha256::of(&bytes)))
            }
            Source::Oci(reference) => {
                let resolved = self.pull(plugin, reference, registry).await?;
                Ok(LockEntry::oci(
                    source_text,
                    resolved.manifest,
                    resolved.wasm,
                ))
            }
        }
    }

    async fn pull(
        &self,
        plugin: &str,
        reference: &OciRef,
        registry: &Registry,
    ) -> Result<Resolved, FetchError> {
        registry
            .pull(reference, &self.store)
            .await
            .map_err(|source| FetchError::Pull {
                plugin: plugin.to_owned(),
                source,
            })
    }

    fn read_store(&self, plugin: &str, digest: &Sha256) -> Result<Option<Vec<u8>>, FetchError> {
        self.store.read(digest).map_err(|source| FetchError::Store {
            plugin: plugin.to_owned(),
            source,
        })
    }
}

async fn read_file(plugin: &str, path: &Path) -> Result<Vec<u8>, FetchError> {
    tokio::fs::read(path)
        .await
        .map_err(|source| FetchError::Read {
            plugin: plugin.to_owned(),
            path: path.to_owned(),
            source,
        })
}
