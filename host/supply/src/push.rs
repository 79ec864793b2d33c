//! Publishing a component to an OCI registry as a CNCF wasm artifact
//! ([`crate::wasm_artifact`]): the component as the one `application/wasm`
//! layer, a config naming its imports and exports, and an image manifest
//! tagged as the reference says — what `wkg oci push` writes, so any wasm
//! tool (and [`crate::Registry::pull`]) reads it.
//!
//! The transport is the pull's: HTTPS, except plain HTTP to a loopback
//! registry or with `insecure`; credentials from the environment, else the
//! Docker config file. The upload itself (the distribution API's blob
//! sessions, the token dance) is oci-client's, redirects included: a push
//! sends only what its user chose to publish, and the credentials never
//! leave the registry's host (they are dropped on a redirect elsewhere),
//! so rule S4, which guards what a pull takes in, has nothing to hold here.
//! Every blob the registry has already is skipped.

use std::path::{Path, PathBuf};
use std::time::Duration;

use oci_client::RegistryOperation;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use toolhost_core::Cause;

use crate::registry::{credentials, install_crypto_provider};
use crate::wasm_artifact::{
    CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, NotAComponent, TITLE_ANNOTATION,
    WasmConfig,
};
use crate::{OciPin, OciRef, Sha256};

/// How a push is made.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PushOptions {
    /// Reach a registry that is not on this machine over plain HTTP.
    /// Loopback registries are always reached over HTTP; every other one
    /// over HTTPS unless this is set.
    pub insecure: bool,
    /// The whole push's deadline (default ten minutes).
    pub timeout: Duration,
    /// The largest component pushed (default 256 MiB, the most a pull
    /// accepts).
    pub max_bytes: u64,
    /// The config's `author` (default none).
    pub author: Option<String>,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self {
            insecure: false,
            timeout: Duration::from_secs(600),
            max_bytes: 256 << 20,
            author: None,
        }
    }
}

impl PushOptions {
    /// Allows plain HTTP to a registry that is not on loopback.
    pub fn insecure(mut self, insecure: bool) -> Self {
        self.insecure = insecure;
        self
    }

    /// Sets the whole push's deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the largest component pushed.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets the config's `author`.
    pub fn author(mut self, author: Option<String>) -> Self {
        self.author = author;
        self
    }
}

/// What a push published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pushed {
    /// The manifest's digest: `REPO@` this names exactly what was pushed,
    /// whatever the tag names later.
    pub manifest: Sha256,
    /// The config blob's digest.
    pub config: Sha256,
    /// The component's digest.
    pub wasm: Sha256,
}

/// How far a push has come, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PushProgress {
    /// `sent` of a blob's `total` bytes have been uploaded.
    Uploading {
        /// `config` or `component`.
        what: &'static str,
        /// Bytes uploaded so far.
        sent: u64,
        /// The blob's size.
        total: u64,
    },
    /// The registry has that blob already; it is not sent again.
    Present {
        /// `config` or `component`.
        what: &'static str,
    },
    /// The blobs are there; the manifest is being written (and the tag
    /// moved to it).
    Manifest,
}

/// Why a push failed. Every variant names the file and the reference.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PushError {
    /// The file cannot be read.
    #[error("cannot push {} to {reference}: cannot read it", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The reference.
        reference: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// What would be pushed is not something to publish as a plugin.
    #[error("cannot push {} to {reference}: {reason}", file.display())]
    Refused {
        /// The file.
        file: PathBuf,
        /// The reference.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The file is not a wasm component.
    #[error("cannot push {} to {reference}", file.display())]
    NotAComponent {
        /// The file.
        file: PathBuf,
        /// The reference.
        reference: String,
        /// What it is instead.
        #[source]
        source: NotAComponent,
    },
    /// The registry could not be reached, or refused (authentication, an
    /// unknown repository, a rejected upload, …).
    #[error("cannot push {} to {reference}", file.display())]
    Registry {
        /// The file.
        file: PathBuf,
        /// The reference.
        reference: String,
        /// What the registry or the network said.
        #[source]
        source: Cause,
    },
    /// The push did not finish by its deadline.
    #[error("cannot push {} to {reference}: not done within {} s", file.display(), after.as_secs())]
    Timeout {
        /// The file.
        file: PathBuf,
        /// The reference.
        reference: String,
        /// The deadline.
        after: Duration,
    },
}

/// How much of a blob goes in one upload request, and so how often
/// progress is reported.
const CHUNK: usize = 1 << 20;

/// Pushes the component at `file` to `reference` (which must name a tag:
/// a digest is what a push produces, not what it is told), reporting to
/// `progress` as it goes. The file is read once and everything uploaded
/// comes from that one reading.
pub async fn push(
    file: &Path,
    reference: &OciRef,
    options: &PushOptions,
    progress: &(dyn Fn(PushProgress) + Sync),
) -> Result<Pushed, PushError> {
    let push = Push {
        file,
        reference,
        options,
        progress,
    };
    tokio::time::timeout(options.timeout, push.run())
        .await
        .map_err(|_| PushError::Timeout {
            file: file.to_owned(),
            reference: reference.to_string(),
            after: options.timeout,
        })?
}

/// One push under way.
struct Push<'a> {
    file: &'a Path,
    reference: &'a OciRef,
    options: &'a PushOptions,
    progress: &'a (dyn Fn(PushProgress) + Sync),
}

impl Push<'_> {
    async fn run(&self) -> Result<Pushed, PushError> {
        if !matches!(self.reference.pin(), OciPin::Tag(_)) {
            return Err(self.refused(
                "a push names a tag (oci://HOST/REPO:TAG); the manifest's digest is what it \
                 prints",
            ));
        }
        let wasm = self.read().await?;
        let config =
            WasmConfig::for_component(&wasm, self.options.author.clone()).map_err(|source| {
                PushError::NotAComponent {
                    file: self.file.to_owned(),
                    reference: self.reference.to_string(),
                    source,
                }
            })?;
        let config = serde_json::to_vec(&config).map_err(|e| self.registry(e))?;
        let title = self
            .file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let manifest = manifest(&config, &wasm, title);
        let manifest = canonical(&manifest).map_err(|e| self.registry(e))?;

        let client = self.client();
        let image = self.reference.to_client();
        let auth = credentials(self.reference.registry());
        client
            .auth(&image, &auth, RegistryOperation::Push)
            .await
            .map_err(|e| self.registry(e))?;
        self.blob(&client, &image, "config", &config).await?;
        self.blob(&client, &image, "component", &wasm).await?;
        (self.progress)(PushProgress::Manifest);
        let content_type = reqwest::header::HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        client
            .push_manifest_raw(&image, manifest.clone(), content_type)
            .await
            .map_err(|e| self.registry(e))?;
        Ok(Pushed {
            manifest: Sha256::of(&manifest),
            config: Sha256::of(&config),
            wasm: Sha256::of(&wasm),
        })
    }

    /// The file, refused before it is read if it is larger than a pull
    /// accepts (and cut off there if it grows meanwhile).
    async fn read(&self) -> Result<Vec<u8>, PushError> {
        use tokio::io::AsyncReadExt as _;
        let read_error = |source| PushError::Read {
            file: self.file.to_owned(),
            reference: self.reference.to_string(),
            source,
        };
        let file = tokio::fs::File::open(self.file).await.map_err(read_error)?;
        let meta = file.metadata().await.map_err(read_error)?;
        if !meta.is_file() {
            return Err(self.refused("it is not a regular file"));
        }
        let max = self.options.max_bytes;
        let too_large =
            || self.refused(&format!("it is larger than the {max} bytes a pull accepts"));
        if meta.len() > max {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .await
            .map_err(read_error)?;
        if bytes.len() as u64 > max {
            return Err(too_large());
        }
        Ok(bytes)
    }

    /// Uploads one blob unless the repository has it, in [`CHUNK`]s, with
    /// progress after each.
    async fn blob(
        &self,
        client: &oci_client::Client,
        image: &oci_client::Reference,
        what: &'static str,
        bytes: &[u8],
    ) -> Result<(), PushError> {
        let digest = Sha256::of(bytes).to_string();
        if client
            .blob_exists(image, &digest)
            .await
            .map_err(|e| self.registry(e))?
        {
            (self.progress)(PushProgress::Present { what });
            return Ok(());
        }
        let total = bytes.len() as u64;
        let report = |sent: usize| {
            (self.progress)(PushProgress::Uploading {
                what,
                sent: sent as u64,
                total,
            });
        };
        // Each chunk is asked for once the one before it is uploaded.
        let chunks = bytes.chunks(CHUNK).enumerate().map(|(i, chunk)| {
            report(i * CHUNK);
            Ok(bytes::Bytes::copy_from_slice(chunk))
        });
        match client
            .push_blob_stream(image, futures::stream::iter(chunks), &digest)
            .await
        {
            Ok(_) => {}
            // A registry that takes no chunked uploads gets it whole.
            Err(OciDistributionError::SpecViolationError(_)) => {
                report(0);
                client
                    .push_blob(image, bytes.to_vec(), &digest)
                    .await
                    .map_err(|e| self.registry(e))?;
            }
            Err(e) => return Err(self.registry(e)),
        }
        report(bytes.len());
        Ok(())
    }

    /// oci-client for this registry: plain HTTP only to loopback or with
    /// `insecure`.
    fn client(&self) -> oci_client::Client {
        install_crypto_provider();
        let protocol = if self.reference.is_loopback() || self.options.insecure {
            ClientProtocol::HttpsExcept(vec![self.reference.registry().to_owned()])
        } else {
            ClientProtocol::Https
        };
        oci_client::Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(self.options.timeout.min(Duration::from_secs(30))),
            read_timeout: Some(self.options.timeout),
            ..ClientConfig::default()
        })
    }

    fn refused(&self, reason: &str) -> PushError {
        PushError::Refused {
            file: self.file.to_owned(),
            reference: self.reference.to_string(),
            reason: reason.to_owned(),
        }
    }

    fn registry(&self, e: impl std::error::Error + Send + Sync + 'static) -> PushError {
        PushError::Registry {
            file: self.file.to_owned(),
            reference: self.reference.to_string(),
            source: Cause::new(e),
        }
    }
}

/// `value` as canonical JSON (sorted keys, no spaces): the manifest's
/// bytes, and so its digest, are what any OCI tool would write for it.
fn canonical(value: &impl serde::Serialize) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::new();
    let mut serializer =
        serde_json::Serializer::with_formatter(&mut out, olpc_cjson::CanonicalFormatter::new());
    value.serialize(&mut serializer)?;
    Ok(out)
}

/// The manifest of a wasm artifact with `config` and the one layer
/// `wasm`, whose title annotation is the file's name (as `wkg` sets it).
fn manifest(config: &[u8], wasm: &[u8], title: Option<String>) -> OciImageManifest {
    let descriptor = |media_type: &str, bytes: &[u8]| OciDescriptor {
        media_type: media_type.to_owned(),
        digest: Sha256::of(bytes).to_string(),
        size: i64::try_from(bytes.len()).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    };
    let mut layer = descriptor(LAYER_MEDIA_TYPE, wasm);
    layer.annotations = title.map(|t| [(TITLE_ANNOTATION.to_owned(), t)].into());
    OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        config: descriptor(CONFIG_MEDIA_TYPE, config),
        layers: vec![layer],
        ..OciImageManifest::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s1_the_manifest_is_a_wasm_artifact_naming_its_blobs_by_digest() {
        let manifest = manifest(b"{}", b"\0asm", Some("calc.wasm".into()));
        let json = serde_json::to_value(&manifest).unwrap();
        assert_eq!(json["schemaVersion"], 2);
        assert_eq!(json["mediaType"], MANIFEST_MEDIA_TYPE);
        assert_eq!(json["config"]["mediaType"], CONFIG_MEDIA_TYPE);
        assert_eq!(json["config"]["digest"], Sha256::of(b"{}").to_string());
        assert_eq!(json["config"]["size"], 2);
        let layers = json["layers"].as_array().unwrap();
        assert_eq!(layers.len(), 1);
        assert_eq!(layers[0]["mediaType"], LAYER_MEDIA_TYPE);
        assert_eq!(layers[0]["digest"], Sha256::of(b"\0asm").to_string());
        assert_eq!(layers[0]["annotations"][TITLE_ANNOTATION], "calc.wasm");
        assert!(layers[0].get("urls").is_none());
        // Canonical, as wkg writes it: sorted keys, no spaces.
        let bytes = String::from_utf8(canonical(&manifest).unwrap()).unwrap();
        assert!(
            bytes.starts_with(r#"{"config":{"digest":"sha256:"#),
            "{bytes}"
        );
        assert!(bytes.ends_with(r#""schemaVersion":2}"#), "{bytes}");
        assert!(!bytes.contains(' '), "{bytes}");
    }
}
