//! toolhost's supply chain (rules S1–S4): where a plugin's bytes come
//! from, and why they may be trusted.
//!
//! - [`OciRef`] and [`Registry`]: components pulled from OCI registries
//!   (the CNCF wasm artifact format), every blob checked against its
//!   digest, into a content-addressed [`Store`] beside the compiled-code
//!   cache.
//! - [`LockFile`]: `toolhost.lock`, the digest each plugin resolved to;
//!   [`Supplier::fetch`] holds a locked run to it without asking the
//!   network for what the store has.
//! - [`TrustedKeys`]: wasmsign2 signatures, checked against the keys a
//!   configuration trusts; [`SigningKey`] makes key pairs and signatures.
//! - [`push`]: a component published as a wasm artifact
//!   ([`wasm_artifact`]: its media types and config).
//!
//! Nothing here compiles or runs a plugin: the bytes go on to the sandbox,
//! which hashes them again as its cache key.

mod digest;
mod fetch;
mod lock;
mod push;
mod redirect;
mod reference;
mod registry;
mod signing;
mod store;
mod trust;
pub mod wasm_artifact;

pub use digest::{DigestParseError, Sha256};
pub use fetch::{FetchError, Fetched, Origin, Source, Supplier};
pub use lock::{LOCK_FILE, LockEntry, LockError, LockFile, LockParseError};
pub use push::{PushError, PushOptions, PushProgress, Pushed, push};
pub use reference::{OCI_SCHEME, OciPin, OciRef, PluginSource, ReferenceError};
pub use registry::{PASSWORD_ENV, PullError, PullOptions, Registry, USERNAME_ENV};
pub use signing::{KeyFiles, SigningError, SigningKey};
pub use store::{Resolved, Store, StoreError};
pub use trust::{KeyError, SignatureError, TrustedKeys};
