//! Pulling components from OCI registries (rule S1): the CNCF wasm OCI
//! artifact (one `application/wasm` layer, an
//! `application/vnd.wasm.config.v0+json` config), as `wkg oci push` and
//! other wasm tools publish it, through any OCI distribution registry.
//!
//! Every blob is checked against its digest: the manifest against the
//! digest the reference pins and the one the registry announces, the layer
//! against the manifest's digest (hashed here again, as it is stored).
//! Everything read is bounded: the manifest at 4 MiB as it streams in, the
//! config and the component by the sizes the manifest gives, checked before
//! download and enforced during it; and the whole pull by a deadline. A
//! descriptor's foreign `urls` are dropped, so a manifest cannot send the
//! host to fetch from anywhere but its registry.
//!
//! The manifest is fetched here rather than by oci-client, which reads a
//! response whole: a hostile registry could otherwise send gigabytes. Its
//! authentication (the token dance) is still oci-client's.

use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use docker_credential::DockerCredential;
use futures::StreamExt as _;
use oci_client::RegistryOperation;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
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

/// The largest manifest accepted: the distribution registry's own limit.
const MAX_MANIFEST_BYTES: usize = 4 << 20;

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
        let (_, digest) = self
            .bounded(reference, self.manifest(reference, &client))
            .await??;
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
        let refuse = |reason: String| PullError::Refused {
            reference: reference.to_string(),
            reason,
        };
        let (manifest, manifest_digest) = self.manifest(reference, &client).await?;
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

    /// The reference's image manifest and its digest, read up to
    /// [`MAX_MANIFEST_BYTES`] and checked against the digest the reference
    /// pins and the one the registry announces.
    async fn manifest(
        &self,
        reference: &OciRef,
        client: &oci_client::Client,
    ) -> Result<(OciImageManifest, Sha256), PullError> {
        let image = reference.to_client();
        let auth = credentials(reference.registry());
        let refuse = |reason: String| PullError::Refused {
            reference: reference.to_string(),
            reason,
        };
        let token = client
            .auth(&image, &auth, RegistryOperation::Pull)
            .await
            .map_err(|e| registry_error(reference, e))?;
        let target = match reference.digest() {
            Some(d) => d.to_string(),
            None => match reference.pin() {
                crate::OciPin::Tag(t) => t.clone(),
                _ => unreachable!("a reference without a digest has a tag"),
            },
        };
        let url = format!(
            "{}://{}/v2/{}/manifests/{target}",
            self.scheme(reference),
            reference.registry(),
            reference.repository()
        );
        let mut request = self
            .http()
            .map_err(|e| http_error(reference, e))?
            .get(&url)
            .header(
                reqwest::header::ACCEPT,
                format!("{WASM_MANIFEST_MEDIA_TYPE}, {OCI_INDEX_MEDIA_TYPE}"),
            );
        request = match (token, &auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, _) => request,
        };
        let response = request.send().await.map_err(|e| http_error(reference, e))?;
        let status = response.status();
        if !status.is_success() {
            let body = read_bounded(response, 4096).await.unwrap_or_default();
            let body = String::from_utf8_lossy(&body);
            return Err(PullError::Registry {
                reference: reference.to_string(),
                source: Cause::new(RegistryAnswer(format!(
                    "{url} answered {status}: {}",
                    body.trim().chars().take(300).collect::<String>()
                ))),
            });
        }
        let announced = response
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = read_bounded(response, MAX_MANIFEST_BYTES)
            .await
            .map_err(|e| match e {
                Bounded::Over => refuse(format!(
                    "its manifest is larger than the {MAX_MANIFEST_BYTES} bytes accepted"
                )),
                Bounded::Http(e) => http_error(reference, e),
            })?;
        let digest = Sha256::of(&body);
        check_pinned(reference, digest)?;
        if let Some(announced) = announced
            && announced.starts_with("sha256:")
            && announced != digest.to_string()
        {
            return Err(PullError::DigestMismatch {
                reference: reference.to_string(),
                what: "manifest",
                expected: announced,
                actual: digest.to_string(),
            });
        }
        let manifest: OciImageManifest = serde_json::from_slice(&body).map_err(|e| {
            refuse(format!(
                "its manifest is not an OCI image manifest (an index or multi-platform \
                 image is not a wasm artifact): {e}"
            ))
        })?;
        Ok((manifest, digest))
    }

    fn scheme(&self, reference: &OciRef) -> &'static str {
        if reference.is_loopback() || self.options.insecure {
            "http"
        } else {
            "https"
        }
    }

    fn http(&self) -> Result<reqwest::Client, reqwest::Error> {
        install_crypto_provider();
        reqwest::Client::builder()
            .connect_timeout(self.options.timeout.min(Duration::from_secs(30)))
            .read_timeout(self.options.timeout)
            .build()
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
        // Only the registry is asked: a descriptor's foreign `urls` would
        // have oci-client fetch from wherever they point.
        let descriptor = &OciDescriptor {
            urls: None,
            ..descriptor.clone()
        };
        let mut out = BoundedWriter {
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
        let protocol = if self.scheme(reference) == "http" {
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

/// The OCI image index media type: accepted so that an index is named as
/// what it is rather than failing content negotiation.
const OCI_INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// What the registry said, when it refused.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RegistryAnswer(String);

fn http_error(reference: &OciRef, e: reqwest::Error) -> PullError {
    PullError::Registry {
        reference: reference.to_string(),
        source: Cause::new(e),
    }
}

enum Bounded {
    Over,
    Http(reqwest::Error),
}

/// A response's body, refused once it passes `max` bytes.
async fn read_bounded(response: reqwest::Response, max: usize) -> Result<Vec<u8>, Bounded> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(Bounded::Http)?;
        if body.len() + chunk.len() > max {
            return Err(Bounded::Over);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A writer into memory that refuses to grow past `limit`: a registry that
/// sends more than the descriptor announced is cut off, not buffered.
struct BoundedWriter {
    buf: Vec<u8>,
    limit: usize,
}

impl tokio::io::AsyncWrite for BoundedWriter {
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
