//! The one TLS client configuration every outgoing connection uses (model
//! providers, `web_fetch`, plugins' HTTP): rustls with the ring crypto
//! provider, so nothing builds aws-lc-rs, and the platform's certificate
//! verifier, so the system's trust store (and any corporate CA in it) applies.

use std::sync::{Arc, OnceLock};

use rustls_platform_verifier::BuilderVerifierExt as _;

/// The shared client configuration, built once.
pub(crate) fn client_config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| format!("TLS setup: {e}"))?
                .with_platform_verifier()
                .map_err(|e| format!("TLS certificate verifier: {e}"))?
                .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

/// A reqwest client builder that uses [`client_config`]. reqwest is built
/// without a default crypto provider, so every client must start here.
pub(crate) fn reqwest_builder() -> Result<reqwest::ClientBuilder, String> {
    let config = client_config()?;
    Ok(reqwest::Client::builder().tls_backend_preconfigured(rustls::ClientConfig::clone(&config)))
}
