//! Which redirects a pull follows (rule S4): a registry may send a request
//! on only to itself (the same scheme, host and port) and to the hosts its
//! policy grants (`registry_hosts`, the CDN a public registry serves blobs
//! from). A redirect anywhere else fails the request before it is made:
//! the digest check would catch the content, but the request itself would
//! already have gone wherever the registry pointed.

use std::sync::Arc;

use reqwest::Url;
use reqwest::redirect::{Attempt, Policy};
use toolhost_net::NetPolicy;

/// The most redirects one request follows (reqwest's own default).
const MAX_REDIRECTS: usize = 10;

/// The destinations one registry's redirects may reach.
#[derive(Debug, Clone)]
pub(crate) struct Redirects {
    /// The registry's own scheme, host and port.
    origin: Origin,
    /// The hosts granted besides the registry.
    grants: NetPolicy,
    /// Whether plain HTTP may follow HTTPS (`insecure`).
    plain_allowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    fn of(url: &Url) -> Option<Self> {
        Some(Self {
            scheme: url.scheme().to_owned(),
            host: url.host_str()?.to_owned(),
            port: url.port_or_known_default()?,
        })
    }
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// A redirect that was not followed: where it pointed and why not.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the registry redirected to {target}: {reason}")]
pub(crate) struct RedirectRefused {
    /// The URL the registry redirected to.
    pub(crate) target: String,
    /// Why it was not followed.
    pub(crate) reason: String,
}

impl Redirects {
    /// The redirects a registry at `registry` (its base URL, as it is
    /// asked) may make: to itself, and to what `grants` grants; plain HTTP
    /// after HTTPS only if `plain_allowed`. `None` if `registry` has no
    /// host or port.
    pub(crate) fn new(registry: &Url, grants: NetPolicy, plain_allowed: bool) -> Option<Self> {
        Some(Self {
            origin: Origin::of(registry)?,
            grants,
            plain_allowed,
        })
    }

    /// Whether a request to the registry may be redirected to `target`;
    /// the error says why not.
    pub(crate) fn check(&self, target: &Url) -> Result<(), RedirectRefused> {
        let refuse = |reason: String| RedirectRefused {
            target: target.as_str().to_owned(),
            reason,
        };
        let scheme = target.scheme();
        if scheme != "http" && scheme != "https" {
            return Err(refuse(format!(
                "only http and https are followed, not `{scheme}`"
            )));
        }
        if self.origin.scheme == "https" && scheme == "http" && !self.plain_allowed {
            return Err(refuse(
                "it would leave HTTPS for plain HTTP (`insecure` allows it)".into(),
            ));
        }
        let Some(to) = Origin::of(target) else {
            return Err(refuse("it names no host".into()));
        };
        if to == self.origin {
            return Ok(());
        }
        self.grants
            .check_host(&to.scheme, &to.host, to.port)
            .map_err(|denied| {
                refuse(format!(
                    "{denied}: a registry ({}) may redirect only to itself and to the hosts \
                     granted by the plugin's `registry_hosts` (`--registry-host` for `pull`)",
                    self.origin
                ))
            })
    }

    /// The reqwest redirect policy that follows what [`check`](Self::check)
    /// allows, up to [`MAX_REDIRECTS`] times, and fails the request with a
    /// [`RedirectRefused`] otherwise.
    pub(crate) fn policy(self) -> Policy {
        let this = Arc::new(self);
        Policy::custom(move |attempt: Attempt<'_>| {
            if attempt.previous().len() > MAX_REDIRECTS {
                let target = attempt.url().as_str().to_owned();
                return attempt.error(RedirectRefused {
                    target,
                    reason: format!("more than {MAX_REDIRECTS} redirects in a row"),
                });
            }
            match this.check(attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(refused) => attempt.error(refused),
            }
        })
    }
}

/// The refused redirect behind `error`, if that is what failed it.
pub(crate) fn refused_in(error: &reqwest::Error) -> Option<&RedirectRefused> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(refused) = e.downcast_ref::<RedirectRefused>() {
            return Some(refused);
        }
        cause = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        s.parse().unwrap()
    }

    fn redirects(registry: &str, grants: &[&str], insecure: bool) -> Redirects {
        Redirects::new(
            &url(registry),
            NetPolicy::new(grants, &[] as &[&str]).unwrap(),
            insecure,
        )
        .unwrap()
    }

    #[test]
    fn s4_only_the_registry_itself_and_granted_hosts_are_followed() {
        let r = redirects(
            "https://ghcr.io/",
            &["pkg-containers.githubusercontent.com"],
            false,
        );
        for ok in [
            "https://ghcr.io/v2/a/blobs/x",
            "https://GHCR.io:443/other",
            "https://pkg-containers.githubusercontent.com/ghcr1/blobs/sha256:1",
        ] {
            assert!(r.check(&url(ok)).is_ok(), "{ok}");
        }
        for (bad, says) in [
            ("https://ghcr.io:8443/x", "is not granted"),
            ("https://evil.example/x", "is not granted"),
            ("https://169.254.169.254/latest/meta-data", "is not granted"),
            ("https://127.0.0.1/x", "is not granted"),
            ("https://ghcr.io.evil.example/x", "is not granted"),
            ("http://ghcr.io/x", "plain HTTP"),
            (
                "http://pkg-containers.githubusercontent.com/x",
                "plain HTTP",
            ),
            ("ftp://ghcr.io/x", "only http and https"),
            ("file:///etc/passwd", "only http and https"),
        ] {
            let e = r.check(&url(bad)).unwrap_err();
            assert_eq!(e.target, url(bad).as_str());
            assert!(e.reason.contains(says), "{bad}: {}", e.reason);
        }
    }

    #[test]
    fn s4_a_loopback_registry_reaches_another_port_only_when_granted() {
        let bare = redirects("http://127.0.0.1:5000/", &[], false);
        assert!(bare.check(&url("http://127.0.0.1:5000/v2/x")).is_ok());
        let e = bare.check(&url("http://127.0.0.1:5001/v2/x")).unwrap_err();
        assert!(e.reason.contains("127.0.0.1:5001 is not granted"), "{e}");
        assert!(e.reason.contains("http://127.0.0.1:5000"), "{e}");
        assert!(bare.check(&url("http://localhost:5000/v2/x")).is_err());
        let granted = redirects("http://127.0.0.1:5000/", &["127.0.0.1:5001"], false);
        assert!(granted.check(&url("http://127.0.0.1:5001/v2/x")).is_ok());
        assert!(granted.check(&url("http://127.0.0.1:5002/v2/x")).is_err());
    }
}
