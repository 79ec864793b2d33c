//! [`ArtifactId`], the name of an offloaded result. A leaf: outputs carry
//! ids and the artifact store hands them out, so both depend on this module
//! and not on each other.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Names an artifact: `art_` followed by 32 lowercase hex digits. Parsing
/// accepts nothing else, so an id can never name a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ArtifactId(String);

impl ArtifactId {
    /// A fresh random id.
    pub fn fresh() -> Self {
        Self(format!("art_{:032x}", rand::random::<u128>()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why text is not an [`ArtifactId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArtifactIdError {
    /// The text is not `art_` followed by 32 lowercase hex digits.
    #[error("`{text}` is not an artifact id (expected `art_` and 32 hex digits)")]
    Malformed {
        /// The text, cut to its first 64 characters.
        text: String,
    },
}

impl TryFrom<String> for ArtifactId {
    type Error = ArtifactIdError;

    fn try_from(s: String) -> Result<Self, ArtifactIdError> {
        let ok = s.len() == 36
            && s.starts_with("art_")
            && s[4..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(Self(s))
        } else {
            Err(ArtifactIdError::Malformed {
                text: s.chars().take(64).collect(),
            })
        }
    }
}

impl From<ArtifactId> for String {
    fn from(id: ArtifactId) -> String {
        id.0
    }
}

impl fmt::Display for ArtifactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_id_is_a_typed_error_quoting_the_text_cut_short() {
        let long = format!("art_{}", "x".repeat(100));
        let err = ArtifactId::try_from(long.clone()).unwrap_err();
        let ArtifactIdError::Malformed { text } = &err;
        assert_eq!(text.chars().count(), 64);
        assert!(long.starts_with(text.as_str()));
        assert_eq!(
            err.to_string(),
            format!("`{text}` is not an artifact id (expected `art_` and 32 hex digits)")
        );
        assert!(std::error::Error::source(&err).is_none());
    }
}
