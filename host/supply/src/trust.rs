//! Plugin signatures (rule S3): wasmsign2's, the WebAssembly modules
//! signatures proposal, which puts the signature in a custom section at the
//! front of the wasm itself. It works on components as on modules, travels
//! with the file through any registry or copy, and is made offline by
//! [`crate::SigningKey`] (`toolhost keygen`, `toolhost sign`) or, alike,
//! by the `wasmsign2` command line:
//!
//! ```text
//! wasmsign2 keygen -k release.key -K release.public
//! wasmsign2 sign -i calc.wasm -o calc.signed.wasm -k release.key -K release.public
//! ```
//!
//! (`-K` stores the key's identifier with the signature, as `toolhost
//! sign` always does, so that a plugin signed by a key nobody trusts is
//! told apart from one changed after signing.) Every key format wasmsign2
//! reads is accepted: its own, PEM, DER, and OpenSSH ed25519 public keys.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::PathBuf;

use toolhost_core::Cause;
use wasmsign2::{PublicKey, WSError};

/// The public keys a configuration trusts, by name.
#[derive(Debug, Clone, Default)]
pub struct TrustedKeys {
    keys: BTreeMap<String, PublicKey>,
}

/// A trusted key's file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The file cannot be read.
    #[error("key `{name}`: cannot read {}", path.display())]
    Read {
        /// The key's name.
        name: String,
        /// Its file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a public key wasmsign2 reads.
    #[error(
        "key `{name}`: {} is not an ed25519 public key (wasmsign2's own format, PEM, DER or OpenSSH)",
        path.display()
    )]
    Format {
        /// The key's name.
        name: String,
        /// Its file.
        path: PathBuf,
    },
}

/// Why a plugin's signature was refused. Each names the plugin.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// The wasm carries no signature.
    #[error(
        "plugin `{plugin}` is not signed; it must be signed by {}",
        one_of(accepted)
    )]
    Unsigned {
        /// The plugin.
        plugin: String,
        /// The keys that would do.
        accepted: Vec<String>,
    },
    /// Signed, but only by keys the configuration does not trust.
    #[error(
        "plugin `{plugin}` is signed by an unknown key (key id {}), not by {}",
        key_ids.join(", "),
        one_of(accepted)
    )]
    UnknownKey {
        /// The plugin.
        plugin: String,
        /// The identifiers of the keys that signed it, in hex.
        key_ids: Vec<String>,
        /// The keys that would do.
        accepted: Vec<String>,
    },
    /// A trusted key signed it, but not these bytes: it was changed after
    /// signing.
    #[error(
        "plugin `{plugin}`: the signature by key `{key}` does not match its bytes; \
         it was changed after it was signed"
    )]
    Mismatch {
        /// The plugin.
        plugin: String,
        /// The trusted key whose signature it carries.
        key: String,
    },
    /// Signed without key identifiers, and no accepted key verifies it.
    #[error(
        "plugin `{plugin}` has no valid signature by {}: it was changed after signing, \
         or signed by another key",
        one_of(accepted)
    )]
    Invalid {
        /// The plugin.
        plugin: String,
        /// The keys that would do.
        accepted: Vec<String>,
    },
    /// The signature section cannot be read.
    #[error("plugin `{plugin}`: its signature cannot be read")]
    Malformed {
        /// The plugin.
        plugin: String,
        /// What wasmsign2 said.
        #[source]
        source: Cause,
    },
    /// The configuration asks for a key it does not list.
    #[error("plugin `{plugin}`: key `{key}` is not in [trust] keys")]
    NoSuchKey {
        /// The plugin.
        plugin: String,
        /// The missing key's name.
        key: String,
    },
}

fn one_of(keys: &[String]) -> String {
    let names: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    match names.as_slice() {
        [one] => format!("key {one}"),
        _ => format!("one of the keys {}", names.join(", ")),
    }
}

impl TrustedKeys {
    /// Reads each named key file.
    pub fn load(keys: impl IntoIterator<Item = (String, PathBuf)>) -> Result<Self, KeyError> {
        let mut out = BTreeMap::new();
        for (name, path) in keys {
            let bytes = match std::fs::read(&path) {
                Ok(bytes) => bytes,
                Err(source) => return Err(KeyError::Read { name, path, source }),
            };
            let Ok(key) = PublicKey::from_any(&bytes) else {
                return Err(KeyError::Format { name, path });
            };
            out.insert(name, key.attach_default_key_id());
        }
        Ok(Self { keys: out })
    }

    /// The keys' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Whether a key of that name is trusted.
    pub fn contains(&self, name: &str) -> bool {
        self.keys.contains_key(name)
    }

    /// Checks that `bytes`, plugin `plugin`'s wasm, carry a valid signature
    /// by one of the keys named in `accepted`, and returns that key's name.
    /// Everything after the signature section is covered: one changed byte
    /// anywhere fails.
    pub fn verify(
        &self,
        plugin: &str,
        bytes: &[u8],
        accepted: &[String],
    ) -> Result<String, SignatureError> {
        let malformed = |e: WSError| SignatureError::Malformed {
            plugin: plugin.to_owned(),
            source: Cause::new(e),
        };
        let mut keys = Vec::new();
        for name in accepted {
            let key = self
                .keys
                .get(name)
                .ok_or_else(|| SignatureError::NoSuchKey {
                    plugin: plugin.to_owned(),
                    key: name.clone(),
                })?;
            keys.push((name, key));
        }
        let unsigned = || SignatureError::Unsigned {
            plugin: plugin.to_owned(),
            accepted: accepted.to_vec(),
        };
        let info = match wasmsign2::signature_info_from_reader(&mut Cursor::new(bytes), None) {
            Ok(info) if info.is_signed() => info,
            Ok(_) | Err(WSError::NoSignatures) => return Err(unsigned()),
            Err(e) => return Err(malformed(e)),
        };
        for (name, key) in &keys {
            match key.verify(&mut Cursor::new(bytes), None) {
                Ok(()) => return Ok((*name).clone()),
                Err(WSError::VerificationFailed) => {}
                Err(e) => return Err(malformed(e)),
            }
        }
        let signed_by_accepted = keys.iter().find(|(_, key)| {
            key.key_id()
                .is_some_and(|id| info.key_ids().iter().any(|k| k == id))
        });
        Err(match signed_by_accepted {
            Some((name, _)) => SignatureError::Mismatch {
                plugin: plugin.to_owned(),
                key: (*name).clone(),
            },
            None if info.key_ids().len() == info.signature_count() => SignatureError::UnknownKey {
                plugin: plugin.to_owned(),
                key_ids: info.key_ids().iter().map(hex::encode).collect(),
                accepted: accepted.to_vec(),
            },
            None => SignatureError::Invalid {
                plugin: plugin.to_owned(),
                accepted: accepted.to_vec(),
            },
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use wasmsign2::{KeyPair, Module};

    /// A component preamble and one custom section: enough for the
    /// signature format, which hashes sections.
    pub(crate) fn component() -> Vec<u8> {
        let mut bytes = vec![0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
        let name = b"payload";
        let body = b"the tool's code";
        bytes.extend([0, (1 + name.len() + body.len()) as u8, name.len() as u8]);
        bytes.extend(name);
        bytes.extend(body);
        bytes
    }

    fn sign(kp: &KeyPair, bytes: &[u8], with_id: bool) -> Vec<u8> {
        let module = Module::deserialize(&mut Cursor::new(bytes)).unwrap();
        let pk = kp.pk.clone().attach_default_key_id();
        let signed = kp
            .sk
            .sign(module, if with_id { pk.key_id() } else { None })
            .unwrap();
        let mut out = Vec::new();
        signed.serialize(&mut out).unwrap();
        out
    }

    fn trusted(dir: &std::path::Path, keys: &[(&str, &KeyPair)]) -> TrustedKeys {
        TrustedKeys::load(keys.iter().map(|(name, kp)| {
            let path = dir.join(name);
            kp.pk.to_file(&path).unwrap();
            (name.to_string(), path)
        }))
        .unwrap()
    }

    #[test]
    fn s3_a_signature_is_accepted_only_from_a_trusted_key_over_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let (release, other) = (KeyPair::generate(), KeyPair::generate());
        let keys = trusted(dir.path(), &[("release", &release)]);
        let accepted = vec!["release".to_owned()];
        let signed = sign(&release, &component(), true);
        assert_eq!(keys.verify("calc", &signed, &accepted).unwrap(), "release");

        let e = keys.verify("calc", &component(), &accepted).unwrap_err();
        assert!(matches!(e, SignatureError::Unsigned { .. }), "{e}");
        assert!(e.to_string().contains("`calc` is not signed"), "{e}");

        let mut flipped = signed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let e = keys.verify("calc", &flipped, &accepted).unwrap_err();
        assert!(matches!(e, SignatureError::Mismatch { .. }), "{e}");
        assert!(e.to_string().contains("changed after"), "{e}");

        let e = keys
            .verify("calc", &sign(&other, &component(), true), &accepted)
            .unwrap_err();
        assert!(matches!(e, SignatureError::UnknownKey { .. }), "{e}");
        assert!(e.to_string().contains("unknown key"), "{e}");

        let e = keys
            .verify("calc", &sign(&other, &component(), false), &accepted)
            .unwrap_err();
        assert!(matches!(e, SignatureError::Invalid { .. }), "{e}");

        let e = keys
            .verify("calc", &signed, &["nobody".to_owned()])
            .unwrap_err();
        assert!(matches!(e, SignatureError::NoSuchKey { .. }), "{e}");

        let e = keys.verify("calc", b"not wasm", &accepted).unwrap_err();
        assert!(matches!(e, SignatureError::Malformed { .. }), "{e}");
    }

    #[test]
    fn s3_key_files_that_are_not_keys_name_the_key_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("garbage.pub");
        std::fs::write(&path, "not a key").unwrap();
        let e = TrustedKeys::load([("k".to_owned(), path)]).unwrap_err();
        assert!(e.to_string().contains("key `k`"), "{e}");
        assert!(e.to_string().contains("garbage.pub"), "{e}");
        let e = TrustedKeys::load([("k".to_owned(), dir.path().join("none"))]).unwrap_err();
        assert!(matches!(e, KeyError::Read { .. }), "{e}");
    }
}
