//! toolhost's network layer: the destination policy every tool that reaches
//! the network is held to, and the one TLS client configuration every
//! outgoing connection uses.
//!
//! | module | job |
//! |---|---|
//! | `policy` | [`NetPolicy`]: deny by default; name and address grants, checked on resolved addresses (W2, B6) |
//! | `lookup` | [`Lookups`]: name lookups bounded while they run, abandoned ones included (C4) |
//! | [`tls`] | rustls on ring with the platform's verifier; a reqwest builder over it (feature `reqwest`) |

mod lookup;
mod policy;
pub mod tls;

pub use lookup::{DEFAULT_MAX_LOOKUPS, Lookups};
pub use policy::{AddressClass, HostRule, NetDenied, NetPolicy, RuleError, address_class};

/// Whether a `Content-Type` header value says JSON: its media type,
/// parameters (`; charset=utf-8`) aside, is `application/json`, in any case.
pub fn is_json_content_type(value: &str) -> bool {
    value
        .split(';')
        .next()
        .unwrap_or(value)
        .trim()
        .eq_ignore_ascii_case("application/json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_are_told_by_their_media_type() {
        for yes in [
            "application/json",
            "Application/JSON",
            " application/json ; charset=utf-8",
        ] {
            assert!(is_json_content_type(yes), "{yes}");
        }
        for no in ["text/event-stream", "application/jsonl", "", "json"] {
            assert!(!is_json_content_type(no), "{no}");
        }
    }
}
