//! Making wasmsign2 signatures (rule S3): key pairs and signed components,
//! byte for byte what the `wasmsign2` command line makes.
//!
//! A key pair is two files in wasmsign2's own format: `NAME.key`, the
//! secret key, created with mode 0600 and never over an existing file, and
//! `NAME.public`, what `[trust] keys` names. A signature is the custom
//! section at the front of the component that [`crate::TrustedKeys`]
//! checks; it carries the public key's identifier, so that a component
//! signed by a key nobody trusts is told apart from one changed after
//! signing (`wasmsign2 sign -K`). ed25519 signatures are deterministic: the
//! same key over the same component gives the same bytes as the command
//! line.

use std::fs::{File, OpenOptions};
use std::io::{Cursor, Write as _};
use std::path::{Path, PathBuf};

use toolhost_core::Cause;
use wasmsign2::{KeyPair, Module, PublicKey, SecretKey, WSError};

/// A secret signing key, with the public key (and its identifier) that
/// goes with it.
#[derive(Clone)]
pub struct SigningKey {
    secret: SecretKey,
    public: PublicKey,
}

/// The files a new key pair was written to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyFiles {
    /// `NAME.key`, mode 0600.
    pub secret: PathBuf,
    /// `NAME.public`.
    pub public: PathBuf,
}

/// Why a key could not be made, read or used, or a component not signed.
/// Each names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SigningError {
    /// A key file would replace one that exists: a secret key lost that
    /// way cannot be recovered.
    #[error("{} already exists; it is not overwritten (remove it, or choose another name)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// A file cannot be read or written.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// `read` or `write`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a secret key wasmsign2 reads.
    #[error(
        "{} is not an ed25519 secret key (wasmsign2's own format, PEM, DER or OpenSSH)",
        path.display()
    )]
    KeyFormat {
        /// The file.
        path: PathBuf,
    },
    /// The input is not a wasm module or component.
    #[error("{} is not a wasm component", path.display())]
    NotWasm {
        /// The file.
        path: PathBuf,
        /// What the signature library said.
        #[source]
        source: Cause,
    },
    /// The component already carries this key's signature over the same
    /// bytes.
    #[error("{} is already signed by this key", path.display())]
    AlreadySigned {
        /// The file.
        path: PathBuf,
    },
    /// Its existing signature section cannot be read or extended.
    #[error("cannot sign {}", path.display())]
    Sign {
        /// The file.
        path: PathBuf,
        /// What the signature library said.
        #[source]
        source: Cause,
    },
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("SigningKey")
            .field("key_id", &self.key_id())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh key pair from the system's random source.
    pub fn generate() -> Self {
        let pair = KeyPair::generate();
        Self {
            secret: pair.sk,
            public: pair.pk.attach_default_key_id(),
        }
    }

    /// Reads a secret key file (wasmsign2's format, as `wasmsign2 keygen`
    /// and [`write_pair`](Self::write_pair) write it, or PEM, DER or
    /// OpenSSH).
    pub fn load(path: &Path) -> Result<Self, SigningError> {
        let bytes = std::fs::read(path).map_err(|source| SigningError::Io {
            what: "read",
            path: path.to_owned(),
            source,
        })?;
        let secret = SecretKey::from_any(&bytes).map_err(|_| SigningError::KeyFormat {
            path: path.to_owned(),
        })?;
        let public = PublicKey {
            pk: secret.sk.public_key(),
            key_id: None,
        }
        .attach_default_key_id();
        Ok(Self { secret, public })
    }

    /// The public key, with its identifier.
    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The public key's identifier, in hex: what a signature carries and
    /// what `toolhost check` shows for an unknown key.
    pub fn key_id(&self) -> String {
        self.public
            .key_id()
            .map(|id| id.iter().map(|b| format!("{b:02x}")).collect())
            .unwrap_or_default()
    }

    /// Writes `STEM.key` (mode 0600) and `STEM.public`. Neither may exist
    /// yet; if the second cannot be written, the first is removed again.
    pub fn write_pair(&self, stem: &Path) -> Result<KeyFiles, SigningError> {
        let with = |ext: &str| {
            let mut name = stem.as_os_str().to_owned();
            name.push(ext);
            PathBuf::from(name)
        };
        let files = KeyFiles {
            secret: with(".key"),
            public: with(".public"),
        };
        for path in [&files.secret, &files.public] {
            if path.symlink_metadata().is_ok() {
                return Err(SigningError::Exists { path: path.clone() });
            }
        }
        write_new(&files.secret, &self.secret.to_bytes(), 0o600)?;
        if let Err(e) = write_new(&files.public, &self.public.to_bytes(), 0o644) {
            let _ = std::fs::remove_file(&files.secret);
            return Err(e);
        }
        Ok(files)
    }

    /// Signs `wasm`, the bytes of `path` (named in errors), and returns the
    /// signed bytes: a signature section in front, every other byte as it
    /// was. A component signed already by other keys keeps their
    /// signatures and gains this one.
    pub fn sign(&self, path: &Path, wasm: &[u8]) -> Result<Vec<u8>, SigningError> {
        let module =
            Module::deserialize(&mut Cursor::new(wasm)).map_err(|e| SigningError::NotWasm {
                path: path.to_owned(),
                source: Cause::new(e),
            })?;
        let (signed, _) = self
            .secret
            .sign_multi(module, self.public.key_id(), false, false)
            .map_err(|e| match e {
                WSError::DuplicateSignature => SigningError::AlreadySigned {
                    path: path.to_owned(),
                },
                e => SigningError::Sign {
                    path: path.to_owned(),
                    source: Cause::new(e),
                },
            })?;
        let mut out = Vec::with_capacity(wasm.len() + 256);
        signed.serialize(&mut out).map_err(|e| SigningError::Sign {
            path: path.to_owned(),
            source: Cause::new(e),
        })?;
        Ok(out)
    }

    /// Signs the component at `input` into `output` (which may be the same
    /// file). The output appears whole or not at all: it is written beside
    /// its destination and renamed over it, with the input's permissions.
    pub fn sign_file(&self, input: &Path, output: &Path) -> Result<(), SigningError> {
        let io = |what, path: &Path| {
            let path = path.to_owned();
            move |source| SigningError::Io { what, path, source }
        };
        let wasm = std::fs::read(input).map_err(io("read", input))?;
        let permissions = std::fs::metadata(input)
            .map_err(io("read", input))?
            .permissions();
        let signed = self.sign(input, &wasm)?;
        let dir = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut file = tempfile::NamedTempFile::new_in(dir).map_err(io("write", output))?;
        file.write_all(&signed).map_err(io("write", output))?;
        file.as_file()
            .set_permissions(permissions)
            .map_err(io("write", output))?;
        file.as_file().sync_all().map_err(io("write", output))?;
        file.persist(output)
            .map_err(|e| io("write", output)(e.error))?;
        Ok(())
    }
}

/// Creates `path`, which must not exist (a link planted there is not
/// followed), with `mode`, and writes `bytes` to it.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), SigningError> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut file: File = options.open(path).map_err(|source| match source.kind() {
        std::io::ErrorKind::AlreadyExists => SigningError::Exists {
            path: path.to_owned(),
        },
        _ => SigningError::Io {
            what: "write",
            path: path.to_owned(),
            source,
        },
    })?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|source| SigningError::Io {
            what: "write",
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TrustedKeys;
    use crate::trust::tests::component;

    #[test]
    fn s3_keygen_writes_a_private_key_once_and_never_over_another() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("release");
        let key = SigningKey::generate();
        let files = key.write_pair(&stem).unwrap();
        assert_eq!(files.secret, dir.path().join("release.key"));
        assert_eq!(files.public, dir.path().join("release.public"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&files.secret)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        }
        let secret = std::fs::read(&files.secret).unwrap();

        // Again, with either file there: refused, and nothing changed.
        let e = SigningKey::generate().write_pair(&stem).unwrap_err();
        assert!(matches!(e, SigningError::Exists { .. }), "{e}");
        assert!(e.to_string().contains("release.key"), "{e}");
        assert_eq!(std::fs::read(&files.secret).unwrap(), secret);
        std::fs::remove_file(&files.secret).unwrap();
        let e = SigningKey::generate().write_pair(&stem).unwrap_err();
        assert!(e.to_string().contains("release.public"), "{e}");
        assert!(!files.secret.exists(), "a half pair was left behind");

        // A dangling link where the key would go is not followed.
        #[cfg(unix)]
        {
            std::fs::remove_file(&files.public).unwrap();
            let target = dir.path().join("elsewhere");
            std::os::unix::fs::symlink(&target, &files.secret).unwrap();
            let e = SigningKey::generate().write_pair(&stem).unwrap_err();
            assert!(matches!(e, SigningError::Exists { .. }), "{e}");
            assert!(!target.exists());
        }
    }

    #[test]
    fn s3_a_signature_made_here_is_verified_by_the_public_key_written_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::generate();
        let files = key.write_pair(&dir.path().join("release")).unwrap();
        let loaded = SigningKey::load(&files.secret).unwrap();
        assert_eq!(loaded.key_id(), key.key_id());
        assert_eq!(key.key_id().len(), 24);

        let input = dir.path().join("calc.wasm");
        std::fs::write(&input, component()).unwrap();
        let output = dir.path().join("calc.signed.wasm");
        loaded.sign_file(&input, &output).unwrap();
        let signed = std::fs::read(&output).unwrap();
        assert!(signed.ends_with(&component()[8..]), "the code was changed");

        // wasmsign2's own verifier, with the public key file.
        let public = PublicKey::from_file(&files.public).unwrap();
        public.verify(&mut Cursor::new(&signed), None).unwrap();
        // And toolhost's, which tells which key.
        let trusted = TrustedKeys::load([("release".to_owned(), files.public.clone())]).unwrap();
        assert_eq!(
            trusted
                .verify("calc", &signed, &["release".to_owned()])
                .unwrap(),
            "release"
        );
        // One flipped byte after the signature fails both.
        let mut flipped = signed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(public.verify(&mut Cursor::new(&flipped), None).is_err());
        assert!(
            trusted
                .verify("calc", &flipped, &["release".to_owned()])
                .is_err()
        );

        // Signing is deterministic, so twice is refused by name.
        let e = loaded.sign(&output, &signed).unwrap_err();
        assert!(matches!(e, SigningError::AlreadySigned { .. }), "{e}");
        // In place: the file is replaced whole.
        loaded.sign_file(&input, &input).unwrap();
        assert_eq!(std::fs::read(&input).unwrap(), signed);
    }

    #[test]
    fn s3_what_is_not_a_key_or_not_wasm_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.key");
        std::fs::write(&garbage, "not a key").unwrap();
        let e = SigningKey::load(&garbage).unwrap_err();
        assert!(matches!(e, SigningError::KeyFormat { .. }), "{e}");
        assert!(e.to_string().contains("garbage.key"), "{e}");
        let e = SigningKey::load(&dir.path().join("none.key")).unwrap_err();
        assert!(matches!(e, SigningError::Io { .. }), "{e}");

        let key = SigningKey::generate();
        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "hello").unwrap();
        let out = dir.path().join("out.wasm");
        let e = key.sign_file(&text, &out).unwrap_err();
        assert!(matches!(e, SigningError::NotWasm { .. }), "{e}");
        assert!(e.to_string().contains("notes.txt"), "{e}");
        assert!(!out.exists());
        // A key's Debug never shows the secret.
        let shown = format!("{key:?}");
        let secret: String = key.secret.sk.as_ref()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(!shown.contains(&secret), "{shown}");
        assert!(shown.contains(&key.key_id()), "{shown}");
    }
}
