//! sha256 digests, the one name every plugin's bytes go by: in the store,
//! in `toolhost.lock`, in a `sha256` pin and in an OCI manifest.

use std::fmt;
use std::str::FromStr;

use sha2::Digest as _;

/// A sha256 digest. Shown (and written to the lock file) as `sha256:`
/// followed by 64 lowercase hex digits; parsed from that form or from the 64
/// digits alone, in any case. Holding one means the text was well formed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256([u8; 32]);

/// Text that is not a sha256 digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a sha256 digest: expected `sha256:` and 64 hex digits")]
#[non_exhaustive]
pub struct DigestParseError {
    /// The text, shortened to 100 characters.
    pub text: String,
}

impl Sha256 {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(sha2::Sha256::digest(bytes).into())
    }

    /// The 64 lowercase hex digits, without the `sha256:` prefix (the form
    /// of a `sha256` pin in `toolhost.toml` and of the sandbox's digests).
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl FromStr for Sha256 {
    type Err = DigestParseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || DigestParseError {
            text: text.chars().take(100).collect(),
        };
        let hex = text.strip_prefix("sha256:").unwrap_or(text);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(error());
        }
        let mut out = [0u8; 32];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| error())?;
        }
        Ok(Self(out))
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl serde::Serialize for Sha256 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Sha256 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s2_digests_round_trip_and_refuse_what_is_not_one() {
        let d = Sha256::of(b"abc");
        assert_eq!(
            d.to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(d.to_string().parse::<Sha256>(), Ok(d));
        assert_eq!(d.hex().to_uppercase().parse::<Sha256>(), Ok(d));
        for bad in [
            "",
            "sha256:",
            "sha512:00",
            &"g".repeat(64),
            &"a".repeat(63),
            "sha256:é",
        ] {
            assert!(bad.parse::<Sha256>().is_err(), "{bad}");
        }
    }
}
