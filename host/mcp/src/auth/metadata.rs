//! What the resource server tells clients: its protected resource
//! metadata (RFC 9728) and where it lives, the `WWW-Authenticate`
//! challenges of its refusals (RFC 6750 §3), and the authorization
//! server's metadata it reads to find the key set (RFC 8414, OpenID
//! Connect Discovery).

use serde::Deserialize;

use super::error::{AuthError, FetchError};
use super::fetch::Fetcher;

/// The well-known path of protected resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata's address for `resource`: the well-known path inserted
/// between the host and the resource's path (RFC 9728 §3.1), as the MCP
/// authorization specification has clients look for it.
pub(crate) fn metadata_url(resource: &url::Url) -> String {
    let path = resource.path().trim_end_matches('/');
    format!(
        "{}{METADATA_PATH}{path}",
        resource.origin().ascii_serialization()
    )
}

/// The local paths the metadata is served at: the well-known path alone,
/// followed by the resource's path, and followed by `endpoint` (the MCP
/// endpoint's own path, which differs from the resource's when a proxy
/// maps one onto the other).
pub(crate) fn metadata_paths(resource: &url::Url, endpoint: &str) -> Vec<String> {
    let mut paths = vec![METADATA_PATH.to_owned()];
    for suffix in [resource.path().trim_end_matches('/'), endpoint] {
        let path = format!("{METADATA_PATH}{suffix}");
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// The metadata document.
pub(crate) fn metadata_document(resource: &str, issuer: &str, scopes: Vec<&str>) -> String {
    let mut doc = serde_json::json!({
        "resource": resource,
        "authorization_servers": [issuer],
        "bearer_methods_supported": ["header"],
        "resource_name": "toolhost",
    });
    if !scopes.is_empty() {
        doc["scopes_supported"] = serde_json::json!(scopes);
    }
    doc.to_string()
}

/// A `Bearer` challenge naming the metadata, with the error and its
/// description when there is one (none for a request without a token,
/// RFC 6750 §3.1), and the scopes that would do for `insufficient_scope`.
/// Values are made safe to quote: quotes and backslashes become `'`, and
/// anything but printable ASCII (a caller's tool name may hold anything)
/// becomes `?`.
pub(crate) fn challenge(
    metadata: &str,
    error: Option<(&str, &str)>,
    scope: Option<&str>,
) -> String {
    let mut value = String::from("Bearer");
    let mut sep = " ";
    let mut param = |name: &str, v: &str| {
        let v: String = v
            .chars()
            .take(2048)
            .map(|c| match c {
                '"' | '\\' => '\'',
                ' '..='~' => c,
                _ => '?',
            })
            .collect();
        value.push_str(&format!("{sep}{name}=\"{v}\""));
        sep = ", ";
    };
    if let Some((error, description)) = error {
        param("error", error);
        param("error_description", description);
    }
    if let Some(scope) = scope {
        param("scope", scope);
    }
    param("resource_metadata", metadata);
    value
}

/// The authorization server metadata fields read.
#[derive(Deserialize)]
struct ServerMetadata {
    issuer: Option<String>,
    jwks_uri: Option<String>,
}

/// The key set's address, from the metadata of `issuer`: RFC 8414's
/// `/.well-known/oauth-authorization-server` (inserted before the
/// issuer's path), then OpenID Connect's `/.well-known/openid-configuration`
/// (appended to it). The metadata must name `issuer` itself.
pub(crate) async fn discover_jwks_uri(
    fetcher: &Fetcher,
    issuer: &str,
) -> Result<String, AuthError> {
    let url = url::Url::parse(issuer).map_err(|e| AuthError::Setting {
        field: super::AuthField::Issuer,
        reason: e.to_string(),
    })?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let candidates = [
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ];
    let mut last: Option<FetchError> = None;
    for candidate in &candidates {
        match fetcher.get_json::<ServerMetadata>(candidate).await {
            Ok(meta) => {
                let found = meta.issuer.unwrap_or_default();
                if found != issuer {
                    return Err(AuthError::IssuerMismatch {
                        url: candidate.clone(),
                        expected: issuer.to_owned(),
                        found,
                    });
                }
                let jwks_uri = meta.jwks_uri.ok_or_else(|| AuthError::NoJwksUri {
                    url: candidate.clone(),
                })?;
                // Held to what a configured address is: keys fetched over
                // plain http off loopback could be replaced on the way.
                super::settings::check_url(&jwks_uri, true).map_err(|reason| {
                    AuthError::BadJwksUri {
                        url: candidate.clone(),
                        reason,
                    }
                })?;
                return Ok(jwks_uri);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(AuthError::Discovery {
        tried: candidates.join(", "),
        source: last.expect("two candidates were tried"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a1_the_metadata_lives_under_the_resource_path() {
        let r = url::Url::parse("https://tools.example.com/team/mcp").unwrap();
        assert_eq!(
            metadata_url(&r),
            "https://tools.example.com/.well-known/oauth-protected-resource/team/mcp"
        );
        assert_eq!(
            metadata_paths(&r, "/mcp"),
            [
                "/.well-known/oauth-protected-resource",
                "/.well-known/oauth-protected-resource/team/mcp",
                "/.well-known/oauth-protected-resource/mcp",
            ]
        );
        let r = url::Url::parse("http://127.0.0.1:8000/mcp").unwrap();
        assert_eq!(metadata_paths(&r, "/mcp").len(), 2);
    }

    #[test]
    fn a1_challenges_name_the_metadata() {
        assert_eq!(
            challenge("https://t/m", None, None),
            r#"Bearer resource_metadata="https://t/m""#
        );
        assert_eq!(
            challenge(
                "https://t/m",
                Some(("insufficient_scope", "needs \"x\"")),
                Some("a b")
            ),
            r#"Bearer error="insufficient_scope", error_description="needs 'x'", scope="a b", resource_metadata="https://t/m""#
        );
    }
}
