//! toolhost's network layer: the destination policy every tool that reaches
//! the network is held to, and the one TLS client configuration every
//! outgoing connection uses.
//!
//! | module | job |
//! |---|---|
//! | `policy` | [`NetPolicy`]: deny by default; name and address grants, checked on resolved addresses (W2, B6) |
//! | [`tls`] | rustls on ring with the platform's verifier; a reqwest builder over it (feature `reqwest`) |

mod policy;
pub mod tls;

pub use policy::{AddressClass, HostRule, NetDenied, NetPolicy, RuleError, address_class};
