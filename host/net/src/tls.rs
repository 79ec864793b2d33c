//! The one TLS client configuration every outgoing connection uses (model
//! providers, `web_fetch`, plugins' HTTP): rustls with the ring crypto
//! provider, so nothing builds aws-lc-rs, and the platform's certificate
//! verifier, so the system's trust store (and any corporate CA in it) applies.

use std::sync::{Arc, OnceLock};

use rustls_platform_verifier::BuilderVerifierExt as _;

/// Why the TLS client configuration could not be built.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The crypto provider refused the safe default protocol versions.
    #[error("TLS setup")]
    Protocols(#[source] rustls::Error),
    /// The platform's certificate verifier could not be set up.
    #[error("TLS certificate verifier")]
    Verifier(#[source] rustls::Error),
}

/// The shared client configuration, built once (so a failure is the same
/// failure every time).
pub fn client_config() -> Result<Arc<rustls::ClientConfig>, TlsError> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, TlsError>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(TlsError::Protocols)?
                .with_platform_verifier()
                .map_err(TlsError::Verifier)?
                .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

/// A reqwest client builder that uses [`client_config`]. reqwest is built
/// without a default crypto provider, so every client must start here.
#[cfg(feature = "reqwest")]
pub fn reqwest_builder() -> Result<reqwest::ClientBuilder, TlsError> {
    let config = client_config()?;
    Ok(reqwest::Client::builder().tls_backend_preconfigured(rustls::ClientConfig::clone(&config)))
}
