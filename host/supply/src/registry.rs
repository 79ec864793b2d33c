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
//! host to fetch from anywhere but its registry; and a redirect is followed
//! only to the registry itself and the hosts granted to it (rule S4,
//! [`crate::redirect`]).
//!
//! The manifest and the blobs are fetched here rather than by oci-client,
//! which reads a response whole (a hostile registry could otherwise send
//! gigabytes) and follows every redirect to any host. Authentication (the
//! token dance) is still oci-client's.

use std::sync::Once;
use std::time::Duration;

use docker_credential::DockerCredential;
use futures::StreamExt as _;
use oci_client::RegistryOperation;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use toolhost_core::Cause;
use toolhost_net::NetPolicy;

use crate::redirect::{Redirects, refused_in};
use crate::wasm_artifact::{CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE, MANIFEST_MEDIA_TYPE, WasmConfig};
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
    /// The hosts besides the registry itself that its redirects may reach
    /// (default none): a redirect to any other scheme, host or port fails
    /// the pull (rule S4).
    pub registry_hosts: NetPolicy,
}

impl Default for PullOptions {
    fn default() -> Self {
        Self {
            insecure: false,
            timeout: Duration::from_secs(120),
            max_bytes: 256 << 20,
            registry_hosts: NetPolicy::deny_all(),
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

    /// Sets the hosts besides the registry that its redirects may reach
    /// (the grants of `policy`, by scheme, name or address, and port).
    pub fn registry_hosts(mut self, policy: NetPolicy) -> Self {
        self.registry_hosts = policy;
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
    /// The registry redirected a request to a destination that is neither
    /// itself nor a granted registry host (rule S4); nothing was asked of
    /// that destination.
    #[error(
        "cannot pull {reference}: the registry redirected to {target}, which is refused: {reason}"
    )]
    Redirect {
        /// The reference.
        reference: String,
        /// The URL the registry redirected to.
        target: String,
        /// Why it is refused.
        reason: String,
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
        self.bounded(reference, async {
            let session = self.session(reference).await?;
            let (_, digest) = self.manifest(reference, &session).await?;
            Ok(digest)
        })
        .await?
    }

    /// Pulls `reference` into `store` (the component is downloaded only if
    /// the store lacks it), remembers what it resolved to, and returns
    /// that.
    pub async fn pull(&self, reference: &OciRef, store: &Store) -> Result<Resolved, PullError> {
        self.bounded(reference, self.pull_within(reference, store))
            .await?
    }

    async fn pull_within(&self, reference: &OciRef, store: &Store) -> Result<Resolved, PullError> {
        let refuse = |reason: String| PullError::Refused {
            reference: reference.to_string(),
            reason,
        };
        let session = self.session(reference).await?;
        let (manifest, manifest_digest) = self.manifest(reference, &session).await?;
        if let Some(media_type) = manifest.media_type.as_deref()
            && media_type != MANIFEST_MEDIA_TYPE
        {
            return Err(refuse(format!("its manifest is a `{media_type}`")));
        }
        if manifest.config.media_type != CONFIG_MEDIA_TYPE {
            return Err(refuse(format!(
                "it is not a wasm artifact: its config is a `{}`, not `{CONFIG_MEDIA_TYPE}`",
                manifest.config.media_type
            )));
        }
        let [layer] = manifest.layers.as_slice() else {
            return Err(refuse(format!(
                "a wasm artifact has exactly one layer; this one has {}",
                manifest.layers.len()
            )));
        };
        if layer.media_type != LAYER_MEDIA_TYPE {
            return Err(refuse(format!(
                "its layer is a `{}`, not `{LAYER_MEDIA_TYPE}`",
                layer.media_type
            )));
        }
        let config = self
            .blob(
                reference,
                &session,
                &manifest.config,
                MAX_CONFIG_BYTES,
                "config",
            )
            .await?;
        serde_json::from_slice::<WasmConfig>(&config)
            .map_err(|e| refuse(format!("its wasm config does not parse: {e}")))?;
        let wasm = parse_digest(reference, "component", &layer.digest)?;
        if !store.has(&wasm) {
            let bytes = self
                .blob(
                    reference,
                    &session,
                    layer,
                    self.options.max_bytes,
                    "component",
                )
                .await?;
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

    /// What every request of one pull needs: the HTTP client, whose
    /// redirects are held to the registry's grants, the registry's base
    /// URL, and the credentials oci-client's authentication settled on.
    async fn session(&self, reference: &OciRef) -> Result<Session, PullError> {
        let base = format!("{}://{}", self.scheme(reference), reference.registry());
        let redirects = reqwest::Url::parse(&base)
            .ok()
            .and_then(|url| {
                Redirects::new(
                    &url,
                    self.options.registry_hosts.clone(),
                    self.options.insecure,
                )
            })
            .ok_or_else(|| PullError::Refused {
                reference: reference.to_string(),
                reason: format!(
                    "its registry `{}` is not a host and port",
                    reference.registry()
                ),
            })?;
        let http = self.http(redirects).map_err(|e| http_error(reference, e))?;
        let auth = credentials(reference.registry());
        let token = self
            .client(reference)
            .auth(&reference.to_client(), &auth, RegistryOperation::Pull)
            .await
            .map_err(|e| registry_error(reference, e))?;
        Ok(Session {
            http,
            base,
            token,
            auth,
        })
    }

    /// The reference's image manifest and its digest, read up to
    /// [`MAX_MANIFEST_BYTES`] and checked against the digest the reference
    /// pins and the one the registry announces.
    async fn manifest(
        &self,
        reference: &OciRef,
        session: &Session,
    ) -> Result<(OciImageManifest, Sha256), PullError> {
        let refuse = |reason: String| PullError::Refused {
            reference: reference.to_string(),
            reason,
        };
        let target = match reference.digest() {
            Some(d) => d.to_string(),
            None => match reference.pin() {
                crate::OciPin::Tag(t) => t.clone(),
                _ => unreachable!("a reference without a digest has a tag"),
            },
        };
        let url = format!(
            "{}/v2/{}/manifests/{target}",
            session.base,
            reference.repository()
        );
        let request = session.get(&url).header(
            reqwest::header::ACCEPT,
            format!("{MANIFEST_MEDIA_TYPE}, {OCI_INDEX_MEDIA_TYPE}"),
        );
        let response = ok_response(reference, &url, request).await?;
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

    fn http(&self, redirects: Redirects) -> Result<reqwest::Client, reqwest::Error> {
        install_crypto_provider();
        reqwest::Client::builder()
            .connect_timeout(self.options.timeout.min(Duration::from_secs(30)))
            .read_timeout(self.options.timeout)
            .redirect(redirects.policy())
            .build()
    }

    /// One blob from the registry, refused before download if its
    /// descriptor says it is larger than `max`, cut off if more than it
    /// said arrives, and checked against its digest. Only the registry is
    /// asked: a descriptor's foreign `urls` are never used.
    async fn blob(
        &self,
        reference: &OciRef,
        session: &Session,
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
        let digest = parse_digest(reference, what, &descriptor.digest)?;
        let url = format!(
            "{}/v2/{}/blobs/{digest}",
            session.base,
            reference.repository()
        );
        let response = ok_response(reference, &url, session.get(&url)).await?;
        // `size` is at most `max`, which fits in memory by construction.
        let limit = usize::try_from(size).unwrap_or(usize::MAX);
        let bytes = read_bounded(response, limit).await.map_err(|e| match e {
            Bounded::Over => PullError::Refused {
                reference: reference.to_string(),
                reason: format!(
                    "the registry sent more than the {size} bytes announced for its {what}"
                ),
            },
            Bounded::Http(e) => http_error(reference, e),
        })?;
        let actual = Sha256::of(&bytes);
        if actual != digest {
            return Err(PullError::DigestMismatch {
                reference: reference.to_string(),
                what,
                expected: digest.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok(bytes)
    }

    /// oci-client, for its authentication only.
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

/// One pull's client, registry and credentials.
struct Session {
    http: reqwest::Client,
    /// `SCHEME://HOST[:PORT]`.
    base: String,
    /// The bearer token of the registry's token service, if it has one.
    token: Option<String>,
    auth: RegistryAuth,
}

impl Session {
    /// A GET of `url` with the session's credentials (which reqwest drops
    /// if a redirect leaves the registry's host).
    fn get(&self, url: &str) -> reqwest::RequestBuilder {
        let request = self.http.get(url);
        match (&self.token, &self.auth) {
            (Some(token), _) => request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request.basic_auth(user, Some(password)),
            (None, _) => request,
        }
    }
}

/// Sends `request`; a response that is not a success is the registry's
/// refusal, with the start of what it said.
async fn ok_response(
    reference: &OciRef,
    url: &str,
    request: reqwest::RequestBuilder,
) -> Result<reqwest::Response, PullError> {
    let response = request.send().await.map_err(|e| http_error(reference, e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let body = read_bounded(response, 4096).await.unwrap_or_default();
    let body = String::from_utf8_lossy(&body);
    Err(PullError::Registry {
        reference: reference.to_string(),
        source: Cause::new(RegistryAnswer(format!(
            "{url} answered {status}: {}",
            body.trim().chars().take(300).collect::<String>()
        ))),
    })
}

/// reqwest is built without a default crypto provider (so nothing builds
/// aws-lc-rs); HTTPS registries use ring's, as every other connection does.
pub(crate) fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Already installed (by the embedding program) is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The credentials for `registry`: the environment's, else the Docker
/// config file's (or its credential helper's), else none.
pub(crate) fn credentials(registry: &str) -> RegistryAuth {
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

/// A transport error, or the redirect it refused (rule S4).
fn http_error(reference: &OciRef, e: reqwest::Error) -> PullError {
    if let Some(refused) = refused_in(&e) {
        return PullError::Redirect {
            reference: reference.to_string(),
            target: refused.target.clone(),
            reason: refused.reason.clone(),
        };
    }
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
