//! Pulling components from OCI registries (rule S1): the CNCF wasm OCI
//! artifact (one `application/wasm` layer, an
//! `application/vnd.wasm.config.v0+json` config), as `wkg oci push` and
//! other wasm tools publish it, through any OCI distribution registry.
//!
//! Every blob is checked against its digest: the manifest against the
//! digest the reference pins (oci-client hashes it), the layer against the
//! manifest's digest (hashed here again, as it is stored). Sizes are bounded
//! before anything is downloaded, and the whole pull by a deadline.

use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use docker_credential::DockerCredential;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_wasm::{WASM_LAYER_MEDIA_TYPE, WASM_MANIFEST_CONFIG_MEDIA_TYPE, WASM_MANIFEST_MEDIA_TYPE};
use toolhost_core::Cause;

use crate::{OciRef, Resolved, Sha256, Store, StoreError};

/// The user name for every registry, when set together with
/// [`PASSWORD_ENV`]; otherwise the Docker config file's credentials for the
/// registry are used, else none.
pub const USERNAME_ENV: &str = "TOOLHOST_REGISTRY_USERNAME";
/// The password that goes with [`USERNAME_ENV`].
pub const PASSWORD_ENV: &str = "TOOLHOST_REGISTRY_PASSWORD";

/// The largest wasm config blob accepted.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// How pulls are made.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PullOptions {
    /// Reach a registry that is not on this machine over plain HTTP.
    /// Loopback registries are always reached over HTTP; every other one
    /// over HTTPS unless this is set.
    pub insecure: bool,
    /// The whole pull's deadline (default two minutes).
    pub timeout: Duration,
    /// The largest component accepted (default 256 MiB).
    pub max_bytes: u64,
}

impl Default for PullOptions {
    fn default() -> Self {
        Self {
            insecure: false,
            timeout: Duration::from_secs(120),
            max_bytes: 256 << 20,
        }
    }
}

impl PullOptions {
    /// Allows plain HTTP to a registry that is not on loopback.
    pub fn insecure(mut self, insecure: bool) -> Self {
        self.insecure = insecure;
        self
    }

    /// Sets the whole pull's deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the largest component accepted.
    pub fn max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }
}

/// Why a pull failed. Every variant names the reference.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PullError {
    /// The registry could not be reached, or answered with an error
    /// (unknown repository or tag, authentication refused, …).
    #[error("cannot pull {reference}")]
    Registry {
        /// The reference.
        reference: String,
        /// What the registry or the network said.
        #[source]
        source: Cause,
    },
    /// What the reference names is not a wasm component artifact, or is
    /// too large.
    #[error("cannot pull {reference}: {reason}")]
    Refused {
        /// The reference.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A blob's bytes do not hash to the digest that names it: the
    /// registry (or something between) served other content.
    #[error(
        "cannot pull {reference}: the {what} does not match its digest: expected {expected}, got {actual}"
    )]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// `manifest` or `component`.
        what: &'static str,
        /// The digest that names it.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// The pull did not finish by its deadline.
    #[error("cannot pull {reference}: no answer within {} s", after.as_secs())]
    Timeout {
        /// The reference.
        reference: String,
        /// The deadline.
        after: Duration,
    },
    /// The store could not keep what was pulled.
    #[error("cannot pull {reference}")]
    Store {
        /// The reference.
        reference: String,
        /// Why.
        #[source]
        source: StoreError,
    },
}

/// A registry client for one pull or resolution at a time.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    options: PullOptions,
}

impl Registry {
    /// A client pulling as `options` say.
    pub fn new(options: PullOptions) -> Self {
        Self { options }
    }

    /// What the reference's manifest digest is now, asked of the registry
    /// (a tag's current target; a digest reference is checked to exist).
    pub async fn resolve(&self, reference: &OciRef) -> Result<Sha256, PullError> {
        let client = self.client(reference);
        let image = reference.to_client();
        let auth = credentials(reference.registry());
        let digest = self
            .bounded(reference, client.fetch_manifest_digest(&image, &auth))
            .await?
            .map_err(|e| registry_error(reference, e))?;
        let digest = parse_digest(reference, "manifest", &digest)?;
        check_pinned(reference, digest)?;
        Ok(digest)
    }

    /// Pulls `reference` into `store` (the component is downloaded only if
    /// the store lacks it), remembers what it resolved to, and returns
    /// that.
    pub async fn pull(&self, reference: &OciRef, store: &Store) -> Result<Resolved, PullError> {
        self.bounded(reference, self.pull_within(reference, store))
            .await?
    }

    async fn pull_within(&self, reference: &OciRef, store: &Store) -> Result<Resolved, PullError> {
        let client = self.client(reference);
        let image = reference.to_client();
        let auth = credentials(reference.registry());
        let refuse = |reason: String| PullError::Refused {
            reference: reference.to_string(),
            reason,
        };
        let (manifest, digest) = client
            .pull_image_manifest(&image, &auth)
            .await
            .map_err(|e| registry_error(reference, e))?;
        let manifest_digest = parse_digest(reference, "manifest", &digest)?;
        check_pinned(reference, manifest_digest)?;
        if let Some(media_type) = manifest.media_type.as_deref()
            && media_type != WASM_MANIFEST_MEDIA_TYPE
        {
            return Err(refuse(format!("its manifest is a `{media_type}`")));
        }
        if manifest.config.media_type != WASM_MANIFEST_CONFIG_MEDIA_TYPE {
            return Err(refuse(format!(
                "it is not a wasm artifact: its config is a `{}`, not `{WASM_MANIFEST_CONFIG_MEDIA_TYPE}`",
                manifest.config.media_type
            )));
        }
        let [layer] = manifest.layers.as_slice() else {
            return Err(refuse(format!(
                "a wasm artifact has exactly one layer; this one has {}",
                manifest.layers.len()
            )));
        };
        if layer.media_type != WASM_LAYER_MEDIA_TYPE {
            return Err(refuse(format!(
                "its layer is a `{}`, not `{WASM_LAYER_MEDIA_TYPE}`",
                layer.media_type
            )));
        }
        let config = self
            .blob(
                reference,
                &client,
                &image,
                &manifest.config,
                MAX_CONFIG_BYTES,
                "config",
            )
            .await?;
        serde_json::from_slice::<oci_wasm::WasmConfig>(&config)
            .map_err(|e| refuse(format!("its wasm config does not parse: {e}")))?;
        let wasm = parse_digest(reference, "component", &layer.digest)?;
        if !store.has(&wasm) {
            let bytes = self
                .blob(
                    reference,
                    &client,
                    &image,
                    layer,
                    self.options.max_bytes,
                    "component",
                )
                .await?;
            let actual = Sha256::of(&bytes);
            if actual != wasm {
                return Err(PullError::DigestMismatch {
                    reference: reference.to_string(),
                    what: "component",
                    expected: wasm.to_string(),
                    actual: actual.to_string(),
                });
            }
            store.write(&bytes).map_err(|source| PullError::Store {
                reference: reference.to_string(),
                source,
            })?;
        }
        let resolved = Resolved::new(manifest_digest, wasm);
        store
            .remember(reference, resolved)
            .map_err(|source| PullError::Store {
                reference: reference.to_string(),
                source,
            })?;
        Ok(resolved)
    }

    /// One blob, refused before download if its descriptor says it is
    /// larger than `max`, and cut off if more than it said arrives.
    async fn blob(
        &self,
        reference: &OciRef,
        client: &oci_client::Client,
        image: &oci_client::Reference,
        descriptor: &OciDescriptor,
        max: u64,
        what: &'static str,
    ) -> Result<Vec<u8>, PullError> {
        let size = u64::try_from(descriptor.size).unwrap_or(u64::MAX);
        if size > max {
            return Err(PullError::Refused {
                reference: reference.to_string(),
                reason: format!("its {what} is {size} bytes, more than the {max} accepted"),
            });
        }
        let mut out = Bounded {
            buf: Vec::with_capacity(usize::try_from(size.min(1 << 24)).unwrap_or(0)),
            limit: usize::try_from(size).unwrap_or(usize::MAX),
        };
        client
            .pull_blob(image, descriptor, &mut out)
            .await
            .map_err(|e| match e {
                OciDistributionError::DigestError(
                    oci_client::errors::DigestError::VerificationError { expected, actual },
                ) => PullError::DigestMismatch {
                    reference: reference.to_string(),
                    what,
                    expected,
                    actual,
                },
                e => registry_error(reference, e),
            })?;
        Ok(out.buf)
    }

    fn client(&self, reference: &OciRef) -> oci_client::Client {
        install_crypto_provider();
        let protocol = if reference.is_loopback() || self.options.insecure {
            ClientProtocol::HttpsExcept(vec![reference.registry().to_owned()])
        } else {
            ClientProtocol::Https
        };
        let connect = self.options.timeout.min(Duration::from_secs(30));
        oci_client::Client::new(ClientConfig {
            protocol,
            connect_timeout: Some(connect),
            read_timeout: Some(self.options.timeout),
            ..ClientConfig::default()
        })
    }

    async fn bounded<T>(
        &self,
        reference: &OciRef,
        work: impl Future<Output = T>,
    ) -> Result<T, PullError> {
        tokio::time::timeout(self.options.timeout, work)
            .await
            .map_err(|_| PullError::Timeout {
                reference: reference.to_string(),
                after: self.options.timeout,
            })
    }
}

/// reqwest is built without a default crypto provider (so nothing builds
/// aws-lc-rs); HTTPS registries use ring's, as every other connection does.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Already installed (by the embedding program) is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The credentials for `registry`: the environment's, else the Docker
/// config file's (or its credential helper's), else none.
fn credentials(registry: &str) -> RegistryAuth {
    if let (Ok(user), Ok(password)) = (std::env::var(USERNAME_ENV), std::env::var(PASSWORD_ENV)) {
        return RegistryAuth::Basic(user, password);
    }
    match docker_credential::get_credential(registry) {
        Ok(DockerCredential::UsernamePassword(user, password)) => {
            RegistryAuth::Basic(user, password)
        }
        Ok(DockerCredential::IdentityToken(token)) => RegistryAuth::Bearer(token),
        Err(e) => {
            tracing::debug!(registry, error = %e, "no registry credentials; pulling anonymously");
            RegistryAuth::Anonymous
        }
    }
}

fn registry_error(reference: &OciRef, e: OciDistributionError) -> PullError {
    PullError::Registry {
        reference: reference.to_string(),
        source: Cause::new(e),
    }
}

fn parse_digest(reference: &OciRef, what: &'static str, text: &str) -> Result<Sha256, PullError> {
    text.parse().map_err(|_| PullError::Refused {
        reference: reference.to_string(),
        reason: format!(
            "its {what} digest `{}` is not a sha256 digest",
            text.chars().take(100).collect::<String>()
        ),
    })
}

/// A manifest that is not the one the reference pins is refused.
fn check_pinned(reference: &OciRef, manifest: Sha256) -> Result<(), PullError> {
    match reference.digest() {
        Some(pinned) if pinned != manifest => Err(PullError::DigestMismatch {
            reference: reference.to_string(),
            what: "manifest",
            expected: pinned.to_string(),
            actual: manifest.to_string(),
        }),
        _ => Ok(()),
    }
}

/// A writer into memory that refuses to grow past `limit`: a registry that
/// sends more than the descriptor announced is cut off, not buffered.
struct Bounded {
    buf: Vec<u8>,
    limit: usize,
}

impl tokio::io::AsyncWrite for Bounded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.buf.len().saturating_add(data.len()) > self.limit {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "the registry sent more than the {} bytes announced",
                self.limit
            ))));
        }
        self.buf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
