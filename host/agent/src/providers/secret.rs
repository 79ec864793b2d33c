//! [`ApiKey`]: a credential that never reaches a log.

use std::fmt;

/// A provider's API key. Its `Debug` output is redacted and it has no
/// `Display`, so formatting a config, a provider or an error never prints it;
/// only [`ApiKey::expose`] gives the text, for the request header.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key's text, to put in a request header and nowhere else.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e2_debug_of_a_key_is_redacted() {
        let key = ApiKey::new("sk-live-very-secret");
        let shown = format!("{key:?} {key:#?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("redacted"));
        assert_eq!(key.expose(), "sk-live-very-secret");
    }
}
