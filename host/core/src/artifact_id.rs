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

impl TryFrom<String> for ArtifactId {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let ok = s.len() == 36
            && s.starts_with("art_")
            && s[4..]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(Self(s))
        } else {
            Err(format!(
                "`{}` is not an artifact id (expected `art_` and 32 hex digits)",
                s.chars().take(64).collect::<String>()
            ))
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
