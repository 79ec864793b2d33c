//! The bearer token `toolhost serve --token-file` requires (rule C8): read
//! from its file, and refused unless it carries at least
//! [`MIN_TOKEN_BITS`] bits, so that a server reachable from other machines
//! is not open to whoever guesses a short or patterned token.
//!
//! The strength is estimated from the token alone (nothing says how it was
//! made), as `length × log2(alphabet)`, where the alphabet is the smallest
//! usual one its characters come from: 10 for digits, 16 for hexadecimal,
//! 26 for each case of letters, 10 for digits among letters, and 32 for
//! anything else (punctuation, base64's `+/=`, base64url's `-_`). So 32 hex
//! digits (`openssl rand -hex 16`), 22 base64url characters or 39 digits
//! pass. A token must also use at least half as many distinct characters
//! as its length or its alphabet, whichever is smaller (a random one all
//! but surely does): one character repeated, or two alternating, is
//! refused however long.
//! Written here because the rule is this small and must be exactly what
//! the documentation says; an estimator for passwords would judge words
//! and keyboard patterns, which a generated token has none of.

use std::path::Path;

use crate::Failure;

/// The least strength accepted, in bits.
pub(crate) const MIN_TOKEN_BITS: f64 = 128.0;

/// How to make a token that passes, for the error message.
const HOW: &str = "make one with `openssl rand -base64 32` or `head -c 32 /dev/urandom | base64`";

/// The token in `path`, given with `flag`: one line, no spaces, at least
/// [`MIN_TOKEN_BITS`] strong. The error names the flag, the file, the
/// problem, and how to make a good token. (The same rule holds for
/// `--approval-key-file`, whose key must not be guessable either.)
pub(crate) fn read(flag: &str, path: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure(format!("{flag} {}: {e}", path.display())))?;
    let token = text.trim();
    let refuse = |why: String| Failure(format!("{flag} {}: {why}", path.display()));
    if token.is_empty() {
        return Err(refuse(format!("the file is empty; {HOW}")));
    }
    if token.contains(char::is_whitespace) {
        return Err(refuse(
            "the token must be one line without spaces".to_owned(),
        ));
    }
    check(token).map_err(|e| refuse(e.to_string()))?;
    Ok(token.to_owned())
}

/// Why a token is too weak; the text also says how to make one that is not.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum WeakToken {
    /// Its length and alphabet carry fewer than [`MIN_TOKEN_BITS`] bits.
    #[error(
        "the token is too weak: {length} characters from an alphabet of {alphabet} carry \
         about {bits:.0} bits, fewer than the {MIN_TOKEN_BITS:.0} required; {HOW}"
    )]
    FewBits {
        /// Its length in characters.
        length: usize,
        /// The size of the smallest usual alphabet it fits.
        alphabet: u32,
        /// `length × log2(alphabet)`.
        bits: f64,
    },
    /// It repeats too few characters to be random.
    #[error(
        "the token is too weak: it uses only {distinct} distinct characters in {length} (a \
         random one would use at least {needed}), far fewer than {MIN_TOKEN_BITS:.0} bits' \
         worth; {HOW}"
    )]
    FewDistinct {
        /// How many distinct characters it uses.
        distinct: usize,
        /// Its length in characters.
        length: usize,
        /// The fewest a random token of its length and alphabet would use.
        needed: usize,
    },
}

/// Whether `token` is strong enough; the error says why not and how to
/// make one that is.
pub(crate) fn check(token: &str) -> Result<(), WeakToken> {
    let length = token.chars().count();
    let alphabet = alphabet(token);
    let bits = length as f64 * f64::from(alphabet).log2();
    if bits < MIN_TOKEN_BITS {
        return Err(WeakToken::FewBits {
            length,
            alphabet,
            bits,
        });
    }
    let mut distinct: Vec<char> = token.chars().collect();
    distinct.sort_unstable();
    distinct.dedup();
    let needed = length.min(alphabet as usize).div_ceil(2);
    if distinct.len() < needed {
        return Err(WeakToken::FewDistinct {
            distinct: distinct.len(),
            length,
            needed,
        });
    }
    Ok(())
}

/// The size of the smallest usual alphabet `token`'s characters come from.
fn alphabet(token: &str) -> u32 {
    let all = |f: fn(&char) -> bool| token.chars().all(|c| f(&c));
    if all(char::is_ascii_digit) {
        return 10;
    }
    if all(|c| c.is_ascii_digit() || ('a'..='f').contains(c))
        || all(|c| c.is_ascii_digit() || ('A'..='F').contains(c))
    {
        return 16;
    }
    let any = |f: fn(&char) -> bool| token.chars().any(|c| f(&c));
    let mut size = 0;
    if any(char::is_ascii_lowercase) {
        size += 26;
    }
    if any(char::is_ascii_uppercase) {
        size += 26;
    }
    if any(char::is_ascii_digit) {
        size += 10;
    }
    if any(|c| !c.is_ascii_alphanumeric()) {
        size += 32;
    }
    size
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c8_a_token_must_carry_128_bits() {
        // Made as the message says, and other usual random forms.
        for good in [
            "q2Xh0bQ3mK0v6d4JzT+8Yw1oVn3sR7uP5eC9aLf2gHk=", // openssl rand -base64 32
            "3f9a0c1e7b2d4c6a8e0f1a3b5c7d9e1f",             // openssl rand -hex 16
            "3F9A0C1E7B2D4C6A8E0F1A3B5C7D9E1F",
            "Zk3_9QmX-2vTa7LbP0sWcY", // 22 base64url characters
            "738105926483017265940182736450918273645", // 39 digits
            "qkzmvwtrplxhjdbnsgfcyaoeiuqz", // 28 lowercase letters
        ] {
            assert!(check(good).is_ok(), "{good}: {:?}", check(good));
        }
        for bad in [
            "x",
            "",
            "secret",
            "s3cret-token",
            "correcthorse",
            "qkzmvwtrplxhjdbnsgfcyaoeiu",      // 26 lowercase: 122 bits
            "3f9a0c1e7b2d4c6a8e0f1a3b5c7d9e1", // 31 hex digits: 124 bits
            "73810592648301726594018273645091827", // 35 digits
            &"a".repeat(500),
            &"ab".repeat(250),
            &"0123".repeat(100),
            &"Aa1+".repeat(100),
        ] {
            let e = check(bad).unwrap_err().to_string();
            assert!(e.contains("too weak"), "{bad}: {e}");
            assert!(e.contains("openssl rand -base64 32"), "{bad}: {e}");
        }
    }

    #[test]
    fn c8_a_weak_token_says_which_test_it_fails() {
        assert_eq!(
            check("secret"),
            Err(WeakToken::FewBits {
                length: 6,
                alphabet: 26,
                bits: 6.0 * 26f64.log2()
            })
        );
        // `a` and `b` are hex digits: an alphabet of 16, so 8 are needed.
        let repeated = "ab".repeat(250);
        assert_eq!(
            check(&repeated),
            Err(WeakToken::FewDistinct {
                distinct: 2,
                length: 500,
                needed: 8
            })
        );
        assert!(
            check(&repeated)
                .unwrap_err()
                .to_string()
                .starts_with("the token is too weak: it uses only 2 distinct characters in 500")
        );
    }

    #[test]
    fn c8_the_alphabet_is_the_smallest_the_characters_fit() {
        assert_eq!(alphabet("0123"), 10);
        assert_eq!(alphabet("00ff"), 16);
        assert_eq!(alphabet("00FF"), 16);
        assert_eq!(alphabet("00fF"), 62);
        assert_eq!(alphabet("zz"), 26);
        assert_eq!(alphabet("z9"), 36);
        assert_eq!(alphabet("Zz9"), 62);
        assert_eq!(alphabet("Zz9-"), 94);
        assert_eq!(alphabet("é"), 32);
    }
}
