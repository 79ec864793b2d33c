//! Network destination policy, shared by everything that lets a tool reach the
//! network (wasm plugins' outgoing HTTP, `web_fetch`, remote MCP servers).
//!
//! Deny by default. A policy is a list of grants, each `[scheme://]host[:port]`:
//!
//! - a **name grant** (`api.example.com`, `*.example.com`, `https://x.org:8443`)
//!   allows requests to that name; every address the name resolves to must then
//!   be public, or covered by an address grant;
//! - an **address grant** (`127.0.0.1`, `10.0.0.0/8`, `[::1]:8080`) allows
//!   requests to those addresses, including loopback, private and link-local ones,
//!   which are otherwise refused whatever name led to them.
//!
//! Checking the resolved address, not only the name, is what stops a granted
//! name that points (or is re-pointed) at `127.0.0.1` or `169.254.169.254`.
//! Callers must connect to the addresses [`NetPolicy::resolve`] returned, not
//! resolve the name again.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

use ipnet::IpNet;

use crate::lookup::Lookups;

/// Why a destination was refused. Every variant names what was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetDenied {
    /// No grant covers this scheme, host and port.
    #[error("{scheme}://{host}:{port} is not granted")]
    NotGranted {
        /// The scheme asked for.
        scheme: String,
        /// The host asked for.
        host: String,
        /// The port asked for.
        port: u16,
    },
    /// The host is on the deny list.
    #[error("{host} is denied by policy")]
    Denied {
        /// The host.
        host: String,
    },
    /// The host resolved to an address of a class that needs an address
    /// grant (loopback, private, link-local, …).
    #[error("{host} resolves to {addr}, a {class} address that is not granted")]
    ForbiddenAddress {
        /// The host asked for.
        host: String,
        /// The address it resolved to.
        addr: IpAddr,
        /// The address's class.
        class: AddressClass,
    },
    /// The name could not be resolved.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host.
        host: String,
        /// The resolver's error.
        reason: String,
    },
}

/// Classes of addresses that are never reached through a name grant alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`, `fc00::/7`.
    Private,
    /// `169.254/16` (cloud metadata lives here), `fe80::/10`.
    LinkLocal,
    /// `100.64/10` (carrier-grade NAT).
    SharedAddressSpace,
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// Multicast and broadcast.
    Multicast,
    /// Documentation, benchmarking and reserved ranges.
    Reserved,
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::SharedAddressSpace => "shared (CGNAT)",
            Self::Unspecified => "unspecified",
            Self::Multicast => "multicast",
            Self::Reserved => "reserved",
        })
    }
}

/// The class of `ip` if it is not an ordinary public address.
pub fn address_class(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<AddressClass> {
    let o = ip.octets();
    Some(match o {
        [0, ..] => AddressClass::Unspecified,
        [127, ..] => AddressClass::Loopback,
        [10, ..] | [192, 168, ..] => AddressClass::Private,
        [172, b, ..] if (16..32).contains(&b) => AddressClass::Private,
        [169, 254, ..] => AddressClass::LinkLocal,
        [100, b, ..] if (64..128).contains(&b) => AddressClass::SharedAddressSpace,
        [224..=239, ..] | [255, 255, 255, 255] => AddressClass::Multicast,
        [192, 0, 0, _] | [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => {
            AddressClass::Reserved
        }
        [198, 18 | 19, ..] | [240..=255, ..] => AddressClass::Reserved,
        _ => return None,
    })
}

fn v6_class(ip: Ipv6Addr) -> Option<AddressClass> {
    // IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) addresses reach
    // the embedded IPv4 address: classify that.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_class(v4);
    }
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return v4_class(v4(s[6], s[7]));
    }
    // 6to4 (2002:a.b.c.d::/48) reaches the IPv4 address in its prefix
    // where a relay routes it: classify that.
    if s[0] == 0x2002 {
        return v4_class(v4(s[1], s[2]));
    }
    // Forms that embed an IPv4 address where the network may translate
    // or tunnel it, in a way no grant of a name should reach: IPv4-
    // compatible (::a.b.c.d, deprecated), NAT64 for local use
    // (64:ff9b:1::/48, whose embedding depends on the operator's prefix
    // length), Teredo (2001:0::/32), and the discard prefix (100::/64).
    if (s[0..6] == [0, 0, 0, 0, 0, 0] && !ip.is_unspecified() && !ip.is_loopback())
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
        || (s[0] == 0x2001 && s[1] == 0)
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0])
    {
        return Some(AddressClass::Reserved);
    }
    Some(if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if s[0] & 0xfe00 == 0xfc00 {
        AddressClass::Private
    } else if s[0] & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if s[0] & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else if s[0] == 0x2001 && s[1] == 0x0db8 {
        AddressClass::Reserved
    } else {
        return None;
    })
}

/// One grant or deny entry: `[scheme://]host[:port]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    scheme: Option<String>,
    target: Target,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// An exact DNS name, lowercase, without a trailing dot.
    Name(String),
    /// `*.suffix`: any name ending in `.suffix` (not the suffix itself).
    Wildcard(String),
    /// An address or network.
    Net(IpNet),
}

/// A host rule that does not parse: the rule as written and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid host rule `{rule}`: {reason}")]
#[non_exhaustive]
pub struct RuleError {
    /// The rule as written.
    pub rule: String,
    /// What is wrong with it.
    pub reason: String,
}

impl FromStr for HostRule {
    type Err = RuleError;

    /// Parses `[scheme://]host[:port]`; host is a name, `*.name`, an IP
    /// address (IPv6 in brackets when a port follows) or a CIDR network.
    fn from_str(text: &str) -> Result<Self, RuleError> {
        let bad = |why: &str| RuleError {
            rule: text.to_owned(),
            reason: why.to_owned(),
        };
        let (scheme, rest) = match text.split_once("://") {
            Some((s, rest)) => {
                let s = s.to_ascii_lowercase();
                if s != "http" && s != "https" {
                    return Err(bad("the scheme must be http or https"));
                }
                (Some(s), rest)
            }
            None => (None, text),
        };
        if let Ok(net) = rest.parse::<IpNet>() {
            return Ok(Self {
                scheme,
                target: Target::Net(net),
                port: None,
            });
        }
        if rest.contains('/') {
            return Err(bad(
                "a host rule has no path (only a CIDR network has a `/`)",
            ));
        }
        let (host, port) = split_port(rest).map_err(|e| bad(&e.to_string()))?;
        if host.is_empty() {
            return Err(bad("the host is empty"));
        }
        // An address written with trailing dots, as a fully qualified name
        // would be (`10.0.0.1.`), is still that address, not a name (names
        // lose their trailing dots too).
        let address = host.trim_end_matches('.');
        let target = if let Ok(net) = host.parse::<IpNet>() {
            Target::Net(net)
        } else if let Ok(ip) = address.parse::<IpAddr>() {
            Target::Net(IpNet::from(ip))
        } else if let Some(suffix) = host.strip_prefix("*.") {
            Target::Wildcard(valid_name(suffix).map_err(|e| bad(&e.to_string()))?)
        } else {
            Target::Name(valid_name(host).map_err(|e| bad(&e.to_string()))?)
        };
        Ok(Self {
            scheme,
            target,
            port,
        })
    }
}

/// Why the host part of a rule (`host[:port]`) does not parse. Its text
/// becomes [`RuleError::reason`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
enum HostPartError {
    /// `[` without its `]`.
    #[error("unclosed `[`")]
    UnclosedBracket,
    /// Something other than `:port` after `]`.
    #[error("unexpected `{after}` after `]`")]
    AfterBracket {
        /// What follows the `]`.
        after: String,
    },
    /// The port is not a number from 0 to 65535.
    #[error("bad port `{port}`")]
    BadPort {
        /// The port as written.
        port: String,
        /// Why it does not parse.
        #[source]
        source: std::num::ParseIntError,
    },
    /// The host is not a DNS name.
    #[error("`{name}` is not a host name")]
    NotAHostName {
        /// The name, lower-cased and without trailing dots.
        name: String,
    },
}

/// `host[:port]` split at the port, if there is one.
fn split_port(s: &str) -> Result<(&str, Option<u16>), HostPartError> {
    let port = |p: &str| {
        p.parse().map_err(|source| HostPartError::BadPort {
            port: p.to_owned(),
            source,
        })
    };
    if let Some(inner) = s.strip_prefix('[') {
        let (host, after) = inner
            .split_once(']')
            .ok_or(HostPartError::UnclosedBracket)?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host, Some(port(p)?))),
            None if after.is_empty() => Ok((host, None)),
            None => Err(HostPartError::AfterBracket {
                after: after.to_owned(),
            }),
        };
    }
    // More than one colon without brackets: a bare IPv6 address, no port.
    if s.matches(':').count() > 1 {
        return Ok((s, None));
    }
    match s.rsplit_once(':') {
        Some((host, p)) => Ok((host, Some(port(p)?))),
        None => Ok((s, None)),
    }
}

/// `name` lower-cased without trailing dots, if it is a DNS name.
fn valid_name(name: &str) -> Result<String, HostPartError> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(name)
    } else {
        Err(HostPartError::NotAHostName { name })
    }
}

impl fmt::Display for HostRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = &self.scheme {
            write!(f, "{s}://")?;
        }
        match &self.target {
            Target::Name(n) => f.write_str(n)?,
            Target::Wildcard(n) => write!(f, "*.{n}")?,
            Target::Net(net) if net.prefix_len() == net.max_prefix_len() => {
                match (net.addr(), self.port) {
                    (IpAddr::V6(a), Some(_)) => write!(f, "[{a}]")?,
                    (a, _) => write!(f, "{a}")?,
                }
            }
            Target::Net(net) => write!(f, "{net}")?,
        }
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

impl HostRule {
    fn scheme_port_match(&self, scheme: &str, port: u16) -> bool {
        self.scheme.as_deref().is_none_or(|s| s == scheme) && self.port.is_none_or(|p| p == port)
    }

    fn matches_name(&self, scheme: &str, host: &str, port: u16) -> bool {
        self.scheme_port_match(scheme, port)
            && match &self.target {
                Target::Name(n) => n == host,
                Target::Wildcard(suffix) => host
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|head| head.ends_with('.')),
                Target::Net(_) => false,
            }
    }

    fn matches_addr(&self, scheme: Option<&str>, addr: IpAddr, port: u16) -> bool {
        let scheme_ok = match (scheme, &self.scheme) {
            (Some(asked), Some(mine)) => asked == mine,
            _ => true,
        };
        scheme_ok
            && self.port.is_none_or(|p| p == port)
            && matches!(&self.target, Target::Net(net) if net.contains(&canonical(addr)))
    }

    /// Whether this rule grants by address.
    pub fn is_address(&self) -> bool {
        matches!(self.target, Target::Net(_))
    }
}

/// IPv4-mapped IPv6 addresses compare as their IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// A deny-by-default set of network grants and denials, and the bound on
/// the name lookups its [`resolve`](Self::resolve) runs at once (shared by
/// its clones).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetPolicy {
    allow: Vec<HostRule>,
    deny: Vec<HostRule>,
    pinned: std::collections::BTreeMap<String, Vec<IpAddr>>,
    lookups: Lookups,
}

impl NetPolicy {
    /// A policy that grants nothing.
    pub fn deny_all() -> Self {
        Self::default()
    }

    /// A policy from grant and deny rules (see the module documentation for
    /// their form). The error names the first rule that does not parse.
    pub fn new<A: AsRef<str>, D: AsRef<str>>(
        allow: impl IntoIterator<Item = A>,
        deny: impl IntoIterator<Item = D>,
    ) -> Result<Self, RuleError> {
        Ok(Self {
            allow: allow
                .into_iter()
                .map(|r| r.as_ref().parse())
                .collect::<Result<_, _>>()?,
            deny: deny
                .into_iter()
                .map(|r| r.as_ref().parse())
                .collect::<Result<_, _>>()?,
            pinned: Default::default(),
            lookups: Lookups::default(),
        })
    }

    /// At most `limit` name lookups in flight through this policy and its
    /// clones, abandoned ones included ([`DEFAULT_MAX_LOOKUPS`](crate::DEFAULT_MAX_LOOKUPS) unless
    /// said). The policy gets a bound of its own: lookups of the policy it
    /// was made from do not count against it.
    pub fn with_max_lookups(mut self, limit: usize) -> Self {
        self.lookups = Lookups::new(limit);
        self
    }

    /// The bound on name lookups in flight.
    pub fn max_lookups(&self) -> usize {
        self.lookups.limit()
    }

    /// Resolves `host` to `addrs` instead of asking DNS (like `curl
    /// --resolve`). The addresses are checked like resolved ones: pinning a
    /// name grants nothing by itself.
    pub fn pin(mut self, host: &str, addrs: Vec<IpAddr>) -> Self {
        self.pinned
            .insert(host.trim_end_matches('.').to_ascii_lowercase(), addrs);
        self
    }

    /// The pinned names and their addresses.
    pub fn pinned(&self) -> impl Iterator<Item = (&str, &[IpAddr])> {
        self.pinned.iter().map(|(h, a)| (h.as_str(), a.as_slice()))
    }

    /// The grants.
    pub fn grants(&self) -> &[HostRule] {
        &self.allow
    }

    /// The denials.
    pub fn denials(&self) -> &[HostRule] {
        &self.deny
    }

    /// Whether nothing is granted.
    pub fn is_deny_all(&self) -> bool {
        self.allow.is_empty()
    }

    /// Checks a destination by name, before resolution. `host` may be a
    /// name or an IP literal (IPv6 with or without brackets).
    pub fn check_host(&self, scheme: &str, host: &str, port: u16) -> Result<(), NetDenied> {
        let scheme = scheme.to_ascii_lowercase();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        // `10.0.0.1.` is the address, as a rule reads it too.
        let without_dots = bare.trim_end_matches('.');
        let bare = if without_dots.parse::<IpAddr>().is_ok() {
            without_dots
        } else {
            bare
        };
        let not_granted = || NetDenied::NotGranted {
            scheme: scheme.clone(),
            host: host.to_owned(),
            port,
        };
        if let Ok(ip) = bare.parse::<IpAddr>() {
            if self
                .deny
                .iter()
                .any(|r| r.matches_addr(Some(&scheme), ip, port))
            {
                return Err(NetDenied::Denied {
                    host: host.to_owned(),
                });
            }
            if self
                .allow
                .iter()
                .any(|r| r.matches_addr(Some(&scheme), ip, port))
            {
                return Ok(());
            }
            return Err(not_granted());
        }
        let name = bare.trim_end_matches('.').to_ascii_lowercase();
        // A name with an empty label (`.example.com`, `a..example.com`, or
        // nothing at all) names no host: no rule grants it, so no wildcard
        // can take it for one of its subdomains.
        if name.split('.').any(str::is_empty) {
            return Err(not_granted());
        }
        if self
            .deny
            .iter()
            .any(|r| r.matches_name(&scheme, &name, port))
        {
            return Err(NetDenied::Denied {
                host: host.to_owned(),
            });
        }
        if self
            .allow
            .iter()
            .any(|r| r.matches_name(&scheme, &name, port))
        {
            Ok(())
        } else {
            Err(not_granted())
        }
    }

    /// Checks one resolved address of `host`: special addresses need an
    /// address grant, and denied addresses are refused.
    pub fn check_addr(&self, host: &str, addr: SocketAddr) -> Result<(), NetDenied> {
        let ip = canonical(addr.ip());
        if self
            .deny
            .iter()
            .any(|r| r.matches_addr(None, ip, addr.port()))
        {
            return Err(NetDenied::Denied {
                host: format!("{host} ({ip})"),
            });
        }
        match address_class(ip) {
            None => Ok(()),
            Some(_)
                if self
                    .allow
                    .iter()
                    .any(|r| r.matches_addr(None, ip, addr.port())) =>
            {
                Ok(())
            }
            Some(class) => Err(NetDenied::ForbiddenAddress {
                host: host.to_owned(),
                addr: ip,
                class,
            }),
        }
    }

    /// Checks the destination, resolves it, and checks every address. Returns
    /// the addresses to connect to; if any one is refused, all are (a name
    /// that resolves to a mix is treated as hostile). A name neither pinned
    /// nor an address is looked up under the policy's bound
    /// ([`with_max_lookups`](Self::with_max_lookups)): when it is reached,
    /// this waits for a lookup in flight to end.
    pub async fn resolve(
        &self,
        scheme: &str,
        host: &str,
        port: u16,
    ) -> Result<Vec<SocketAddr>, NetDenied> {
        self.check_host(scheme, host, port)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        // `10.0.0.1.` is the address, as a rule reads it too.
        let without_dots = bare.trim_end_matches('.');
        let bare = if without_dots.parse::<IpAddr>().is_ok() {
            without_dots
        } else {
            bare
        };
        let pinned = self
            .pinned
            .get(&bare.trim_end_matches('.').to_ascii_lowercase());
        let addrs: Vec<SocketAddr> = match (bare.parse::<IpAddr>(), pinned) {
            (Ok(ip), _) => vec![SocketAddr::new(ip, port)],
            (Err(_), Some(ips)) => ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect(),
            (Err(_), None) => {
                self.lookups
                    .lookup(bare, port)
                    .await
                    .map_err(|e| NetDenied::Resolve {
                        host: host.to_owned(),
                        reason: e.to_string(),
                    })?
            }
        };
        if addrs.is_empty() {
            return Err(NetDenied::Resolve {
                host: host.to_owned(),
                reason: "no addresses".into(),
            });
        }
        for addr in &addrs {
            self.check_addr(host, *addr)?;
        }
        Ok(addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_port_keeps_the_parse_error_as_its_source() {
        use std::error::Error as _;
        let err = split_port("example.com:99999").unwrap_err();
        assert!(matches!(&err, HostPartError::BadPort { port, .. } if port == "99999"));
        assert!(
            err.source()
                .and_then(|s| s.downcast_ref::<std::num::ParseIntError>())
                .is_some()
        );
        assert_eq!(split_port("[::1"), Err(HostPartError::UnclosedBracket));
        assert_eq!(
            "example.com:99999".parse::<HostRule>().unwrap_err().reason,
            "bad port `99999`"
        );
        assert_eq!(
            valid_name("a b"),
            Err(HostPartError::NotAHostName { name: "a b".into() })
        );
    }

    fn policy(allow: &[&str]) -> NetPolicy {
        NetPolicy::new(allow, &[] as &[&str]).unwrap()
    }

    #[test]
    fn w2_network_is_denied_by_default() {
        let p = NetPolicy::deny_all();
        assert_eq!(
            p.check_host("https", "example.com", 443)
                .unwrap_err()
                .to_string(),
            "https://example.com:443 is not granted"
        );
    }

    #[test]
    fn w2_an_address_with_a_trailing_dot_is_the_address() {
        // Found by the host_rule fuzz target: `10.0.100.0.` parsed as a
        // name, and printed as `10.0.100.0`, which parses as an address.
        let rule: HostRule = "10.0.100.0.".parse().unwrap();
        assert!(rule.is_address());
        assert_eq!(rule, rule.to_string().parse().unwrap());
        let p = policy(&["10.0.100.0."]);
        assert!(p.check_host("http", "10.0.100.0", 80).is_ok());
        assert!(p.check_host("http", "10.0.100.0.", 80).is_ok());
        let twice: HostRule = "0.111.1.1..".parse().unwrap();
        assert!(twice.is_address());
        assert_eq!(twice, twice.to_string().parse().unwrap());
        assert!(
            policy(&["0.111.1.1"])
                .check_host("http", "0.111.1.1..", 80)
                .is_ok()
        );
        let by_name = policy(&["example.com"]);
        assert!(by_name.check_host("http", "10.0.100.0.", 80).is_err());
    }

    #[test]
    fn w2_a_name_with_an_empty_label_is_never_granted() {
        // Found by the net_policy fuzz target: `*.ppp` granted `.ppp`, a
        // name with nothing before the dot.
        let p = policy(&["*.ppp", "plain.example"]);
        assert!(p.check_host("http", "a.ppp", 80).is_ok());
        for host in [".ppp", "..ppp", "a..ppp", ".plain.example", "", ".", "[]"] {
            assert!(p.check_host("http", host, 80).is_err(), "`{host}`");
        }
    }

    #[test]
    fn w2_name_grants_match_scheme_host_and_port() {
        let p = policy(&[
            "https://api.example.com",
            "*.cdn.example.org:8443",
            "plain.example",
        ]);
        assert!(p.check_host("https", "api.example.com", 443).is_ok());
        assert!(p.check_host("https", "API.Example.com.", 443).is_ok());
        assert!(p.check_host("http", "api.example.com", 80).is_err());
        assert!(p.check_host("https", "a.cdn.example.org", 8443).is_ok());
        assert!(p.check_host("https", "cdn.example.org", 8443).is_err());
        assert!(p.check_host("https", "evilcdn.example.org", 8443).is_err());
        assert!(p.check_host("https", "a.cdn.example.org", 443).is_err());
        assert!(p.check_host("http", "plain.example", 1234).is_ok());
        assert!(p.check_host("http", "plain.example.evil.com", 80).is_err());
    }

    #[test]
    fn w2_special_addresses_need_an_address_grant() {
        let p = policy(&["metadata.example"]);
        for (ip, class) in [
            ("127.0.0.1", AddressClass::Loopback),
            ("169.254.169.254", AddressClass::LinkLocal),
            ("10.1.2.3", AddressClass::Private),
            ("172.20.0.1", AddressClass::Private),
            ("192.168.1.1", AddressClass::Private),
            ("100.64.0.1", AddressClass::SharedAddressSpace),
            ("0.0.0.0", AddressClass::Unspecified),
            ("::1", AddressClass::Loopback),
            ("fe80::1", AddressClass::LinkLocal),
            ("fd00::1", AddressClass::Private),
            ("::ffff:127.0.0.1", AddressClass::Loopback),
            ("::ffff:169.254.169.254", AddressClass::LinkLocal),
            ("64:ff9b::a9fe:a9fe", AddressClass::LinkLocal),
            ("2002:a9fe:a9fe::1", AddressClass::LinkLocal),
            ("2002:7f00:1::", AddressClass::Loopback),
            ("::169.254.169.254", AddressClass::Reserved),
            ("::10.0.0.1", AddressClass::Reserved),
            ("64:ff9b:1::a9fe:a9fe", AddressClass::Reserved),
            (
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                AddressClass::Reserved,
            ),
            ("100::1", AddressClass::Reserved),
        ] {
            let addr = SocketAddr::new(ip.parse().unwrap(), 80);
            match p.check_addr("metadata.example", addr) {
                Err(NetDenied::ForbiddenAddress { class: c, .. }) => assert_eq!(c, class, "{ip}"),
                other => panic!("{ip}: {other:?}"),
            }
        }
        let public = SocketAddr::new("93.184.216.34".parse().unwrap(), 443);
        assert!(p.check_addr("metadata.example", public).is_ok());
    }

    #[test]
    fn w2_address_grants_allow_special_addresses() {
        let p = policy(&["127.0.0.1", "10.0.0.0/8", "[::1]:9000", "localhost"]);
        let lo = SocketAddr::new("127.0.0.1".parse().unwrap(), 5555);
        assert!(p.check_addr("localhost", lo).is_ok());
        assert!(p.check_host("http", "127.0.0.1", 5555).is_ok());
        assert!(p.check_host("http", "10.9.8.7", 80).is_ok());
        assert!(p.check_host("http", "[::1]", 9000).is_ok());
        assert!(p.check_host("http", "::1", 9001).is_err());
        let mapped = SocketAddr::new("::ffff:127.0.0.1".parse().unwrap(), 1);
        assert!(p.check_addr("localhost", mapped).is_ok());
        let link = SocketAddr::new("169.254.169.254".parse().unwrap(), 80);
        assert!(p.check_addr("localhost", link).is_err());
    }

    #[test]
    fn w2_deny_rules_win_over_grants() {
        let p = NetPolicy::new(
            ["*.example.com", "10.0.0.0/8"],
            ["secret.example.com", "10.0.0.5"],
        )
        .unwrap();
        assert!(p.check_host("https", "www.example.com", 443).is_ok());
        assert!(matches!(
            p.check_host("https", "secret.example.com", 443),
            Err(NetDenied::Denied { .. })
        ));
        let denied = SocketAddr::new("10.0.0.5".parse().unwrap(), 80);
        assert!(matches!(
            p.check_addr("x", denied),
            Err(NetDenied::Denied { .. })
        ));
    }

    #[test]
    fn w2_bad_rules_are_errors_that_name_the_rule() {
        for bad in [
            "ftp://x.org",
            "x.org/path",
            "",
            "exa mple.com",
            "x.org:port",
            "[::1",
        ] {
            let err = bad.parse::<HostRule>().unwrap_err();
            assert_eq!(err.rule, bad);
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
        }
        for good in [
            "x.org",
            "https://x.org:8443",
            "*.x.org",
            "127.0.0.1",
            "10.0.0.0/8",
            "[::1]:80",
            "::1",
        ] {
            let rule: HostRule = good.parse().unwrap();
            assert_eq!(rule.to_string(), good);
        }
    }

    #[tokio::test]
    async fn w2_pinned_names_are_checked_like_resolved_ones() {
        let p = policy(&["metadata.test"])
            .pin("metadata.test", vec!["169.254.169.254".parse().unwrap()]);
        let err = p.resolve("http", "metadata.test", 80).await.unwrap_err();
        assert!(
            matches!(
                err,
                NetDenied::ForbiddenAddress {
                    class: AddressClass::LinkLocal,
                    ..
                }
            ),
            "{err}"
        );
        let p = policy(&["api.test"]).pin("api.test", vec!["93.184.216.34".parse().unwrap()]);
        assert_eq!(
            p.resolve("https", "api.test", 443).await.unwrap(),
            vec!["93.184.216.34:443".parse().unwrap()]
        );
    }

    #[tokio::test]
    async fn w2_resolution_is_checked_address_by_address() {
        let p = policy(&["localhost"]);
        let err = p.resolve("http", "localhost", 80).await.unwrap_err();
        assert!(
            matches!(
                err,
                NetDenied::ForbiddenAddress {
                    class: AddressClass::Loopback,
                    ..
                }
            ),
            "{err}"
        );
        let p = policy(&["localhost", "127.0.0.1", "::1"]);
        let addrs = p.resolve("http", "localhost", 80).await.unwrap();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()));
    }
}
