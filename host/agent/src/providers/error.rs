//! Why a provider could not be built: a leaf, so the `[agent]` section and
//! the providers both use it without depending on each other.

/// Why a provider could not be built from its settings. Each variant names
/// the setting or variable at fault; none repeats a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentConfigError {
    /// The provider needs a key and the variable that should hold it is
    /// unset or empty.
    #[error("the API key variable `{var}` is not set")]
    MissingApiKey {
        /// The environment variable.
        var: String,
    },
    /// A setting has an unusable value.
    #[error("invalid `{field}`: {reason}")]
    Invalid {
        /// The setting.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The provider was left out of this build (its cargo feature of
    /// `toolhost-agent` is off).
    #[error(
        "the `{provider}` provider is not built in; enable the `{provider}` feature of toolhost-agent"
    )]
    NotBuilt {
        /// The provider's name, which is also its feature's.
        provider: &'static str,
    },
    /// The HTTP client could not be set up (TLS, …).
    #[error("could not set up the HTTP client: {0}")]
    Client(String),
}
