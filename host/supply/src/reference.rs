//! Where a plugin's wasm comes from: a file, or an OCI reference
//! (`oci://HOST/REPO:TAG`, `oci://HOST/REPO@sha256:…`).

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use crate::Sha256;

/// The scheme that marks a `wasm` value as an OCI reference.
pub const OCI_SCHEME: &str = "oci://";

/// A plugin's source, as its `wasm` key names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PluginSource {
    /// A component file on this machine.
    File(PathBuf),
    /// A component in an OCI registry.
    Oci(OciRef),
}

/// What a reference pins in its repository.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OciPin {
    /// A tag, which the registry may move to other content.
    Tag(String),
    /// A manifest digest: the content cannot change.
    Digest(Sha256),
    /// Both (`REPO:TAG@sha256:…`): the digest decides, the tag is a note.
    TagAndDigest(String, Sha256),
}

/// An OCI reference with its registry named: `oci://HOST[:PORT]/REPO` and a
/// tag or a digest. There is no default registry and no default tag, so the
/// text says exactly what is pulled.
#[derive(Clone, PartialEq, Eq)]
pub struct OciRef {
    registry: String,
    repository: String,
    pin: OciPin,
}

/// A `wasm = "oci://…"` value (or `toolhost pull` argument) that is not a
/// usable reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not an OCI reference: {reason} (expected oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:DIGEST)"
)]
#[non_exhaustive]
pub struct ReferenceError {
    /// The text, shortened to 300 characters.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl PluginSource {
    /// Reads a `wasm` value: `oci://…` is a reference, anything else a path
    /// (left as written; the caller resolves it against its directory).
    pub fn parse(text: &str) -> Result<Self, ReferenceError> {
        if text.starts_with(OCI_SCHEME) {
            OciRef::parse(text).map(Self::Oci)
        } else {
            Ok(Self::File(PathBuf::from(text)))
        }
    }
}

impl OciRef {
    /// Parses `oci://HOST[:PORT]/REPO:TAG`, `…/REPO@sha256:…` or
    /// `…/REPO:TAG@sha256:…`. The registry must be explicit (a name with a
    /// dot or a port, `localhost`, or an address) and a tag or digest given.
    pub fn parse(text: &str) -> Result<Self, ReferenceError> {
        let error = |reason: &str| ReferenceError {
            text: text.chars().take(300).collect(),
            reason: reason.to_owned(),
        };
        let rest = text
            .strip_prefix(OCI_SCHEME)
            .ok_or_else(|| error("it does not start with oci://"))?;
        let (host, _) = rest
            .split_once('/')
            .ok_or_else(|| error("it names no repository after the registry"))?;
        if host.is_empty() {
            return Err(error("it names no registry"));
        }
        if !(host.contains('.') || host.contains(':') || host == "localhost") {
            return Err(error(
                "the registry must be explicit: a name with a dot or a port, localhost, or an address",
            ));
        }
        // oci-client reads a missing tag as `latest`; here it is an error.
        let last = rest.rsplit('/').next().unwrap_or(rest);
        if !last.contains(':') && !last.contains('@') {
            return Err(error("it names neither a tag nor a digest"));
        }
        let parsed = oci_client::Reference::try_from(rest).map_err(|e| error(&e.to_string()))?;
        let digest = parsed
            .digest()
            .map(|d| {
                d.parse::<Sha256>()
                    .map_err(|_| error("only sha256 digests are accepted"))
            })
            .transpose()?;
        let pin = match (parsed.tag(), digest) {
            (Some(tag), Some(d)) => OciPin::TagAndDigest(tag.to_owned(), d),
            (Some(tag), None) => OciPin::Tag(tag.to_owned()),
            (None, Some(d)) => OciPin::Digest(d),
            (None, None) => return Err(error("it names neither a tag nor a digest")),
        };
        if parsed.registry() != host {
            return Err(error("the registry part is not a registry name"));
        }
        Ok(Self {
            registry: parsed.registry().to_owned(),
            repository: parsed.repository().to_owned(),
            pin,
        })
    }

    /// The registry, `HOST[:PORT]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository within the registry.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag or digest.
    pub fn pin(&self) -> &OciPin {
        &self.pin
    }

    /// The manifest digest the reference itself pins, if any.
    pub fn digest(&self) -> Option<Sha256> {
        match &self.pin {
            OciPin::Tag(_) => None,
            OciPin::Digest(d) | OciPin::TagAndDigest(_, d) => Some(*d),
        }
    }

    /// The same repository at the manifest `digest`: what a locked run
    /// pulls, so that a moved tag cannot change what it gets.
    pub fn at_digest(&self, digest: Sha256) -> Self {
        Self {
            pin: OciPin::Digest(digest),
            ..self.clone()
        }
    }

    /// Whether the registry is this machine (`localhost`, 127.0.0.0/8,
    /// `::1`): the only registries reached over plain HTTP without an
    /// explicit `insecure`.
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(v6),
            None => self
                .registry
                .rsplit_once(':')
                .map_or(self.registry.as_str(), |(h, _)| h),
        };
        host.eq_ignore_ascii_case("localhost")
            || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }

    /// The reference in oci-client's form.
    pub(crate) fn to_client(&self) -> oci_client::Reference {
        let (r, repo) = (self.registry.clone(), self.repository.clone());
        match &self.pin {
            OciPin::Tag(t) => oci_client::Reference::with_tag(r, repo, t.clone()),
            OciPin::Digest(d) => oci_client::Reference::with_digest(r, repo, d.to_string()),
            OciPin::TagAndDigest(t, d) => {
                oci_client::Reference::with_tag_and_digest(r, repo, t.clone(), d.to_string())
            }
        }
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{OCI_SCHEME}{}/{}", self.registry, self.repository)?;
        match &self.pin {
            OciPin::Tag(t) => write!(f, ":{t}"),
            OciPin::Digest(d) => write!(f, "@{d}"),
            OciPin::TagAndDigest(t, d) => write!(f, ":{t}@{d}"),
        }
    }
}

impl fmt::Debug for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn s1_references_name_registry_repository_and_tag_or_digest() {
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/calc:1.0").unwrap();
        assert_eq!(
            (r.registry(), r.repository(), r.pin()),
            ("127.0.0.1:5000", "tools/calc", &OciPin::Tag("1.0".into()))
        );
        assert!(r.is_loopback());
        assert_eq!(r.to_string(), "oci://127.0.0.1:5000/tools/calc:1.0");
        let r = OciRef::parse(&format!("oci://ghcr.io/acme/calc@{D}")).unwrap();
        assert_eq!(r.digest().unwrap().to_string(), D);
        assert!(!r.is_loopback());
        assert_eq!(r.to_string(), format!("oci://ghcr.io/acme/calc@{D}"));
        let r = OciRef::parse(&format!("oci://localhost:5000/calc:2@{D}")).unwrap();
        assert!(matches!(r.pin(), OciPin::TagAndDigest(t, _) if t == "2"));
        assert!(r.is_loopback());
        assert!(
            OciRef::parse("oci://localhost/calc:1")
                .unwrap()
                .is_loopback()
        );
        assert!(
            !OciRef::parse("oci://127.example.com/calc:1")
                .unwrap()
                .is_loopback()
        );
        assert_eq!(
            PluginSource::parse("plugins/calc.wasm").unwrap(),
            PluginSource::File("plugins/calc.wasm".into())
        );
    }

    #[test]
    fn s1_bad_references_are_refused_with_the_reason() {
        for (text, reason) in [
            ("oci://calc:1.0", "repository"),
            ("oci://acme/calc:1.0", "explicit"),
            ("oci:///calc:1", "no registry"),
            ("oci://ghcr.io/acme/calc", "neither a tag nor a digest"),
            ("oci://ghcr.io/acme/calc@sha512:00", ""),
            (
                "oci://ghcr.io/acme/calc@sha384:000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
                "only sha256",
            ),
            ("oci://ghcr.io/Acme/calc:1", ""),
            ("oci://ghcr.io/acme/calc:bad tag", ""),
            ("docker://ghcr.io/acme/calc:1", "oci://"),
        ] {
            let e = OciRef::parse(text).unwrap_err();
            assert!(e.reason.contains(reason), "{text}: {e}");
            assert!(e.to_string().contains("expected oci://"), "{e}");
        }
        let long = format!("oci://ghcr.io/{}:1", "a/".repeat(5000));
        assert!(OciRef::parse(&long).unwrap_err().text.len() <= 300);
    }
}
