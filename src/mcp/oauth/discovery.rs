//! Finding a protected MCP server's authorization server: the
//! `resource_metadata` URL a 401's `WWW-Authenticate` names (or the
//! well-known places, RFC 9728), the protected resource's metadata (its
//! authorization servers and scopes), then the authorization server's
//! metadata (RFC 8414, or OpenID discovery): where to send the person, where
//! to trade codes for tokens, where to register a client. Each document is
//! read through the gate (`gate::OAUTH_METADATA`); every URL it names is
//! held to `trust::check_endpoint`.

use serde_json::Value;
use url::Url;

use super::trust::check_endpoint;
use crate::mcp::jsonrpc::{McpError, McpRequest};
use crate::protocol::gate::{self, OAUTH_METADATA};

/// What a 401's `WWW-Authenticate: Bearer …` said.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
}

/// Reads the `resource_metadata` and `scope` parameters of a Bearer challenge.
pub fn read_challenge(header: Option<&str>) -> Challenge {
    let mut challenge = Challenge::default();
    let Some(header) = header else {
        return challenge;
    };
    let mut rest = header.trim();
    if rest.len() >= 6 && rest[..6].eq_ignore_ascii_case("bearer") {
        rest = &rest[6..];
    }
    while let Some((key, after)) = rest.split_once('=') {
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, next) = match after.strip_prefix('"') {
            Some(quoted) => match quoted.find('"') {
                Some(end) => (&quoted[..end], &quoted[end + 1..]),
                None => (quoted, ""),
            },
            None => match after.find(',') {
                Some(end) => (&after[..end], &after[end..]),
                None => (after, ""),
            },
        };
        match key.as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value.to_string()),
            "scope" => challenge.scope = Some(value.to_string()),
            _ => {}
        }
        rest = next;
    }
    challenge
}

fn parse(url: &str) -> Result<Url, McpError> {
    Url::parse(url).map_err(|e| McpError::Malformed(format!("the URL '{url}' is not valid: {e}")))
}

/// `origin + /.well-known/<name> + path` (the path kept unless it is `/`).
fn well_known(url: &Url, name: &str, keep_path: bool) -> String {
    let path = url.path().trim_end_matches('/');
    let mut out = format!("{}/.well-known/{name}", url.origin().ascii_serialization());
    if keep_path {
        out.push_str(path);
    }
    out
}

/// Where the protected resource's metadata may be, in the order to try.
pub fn resource_metadata_urls(
    challenge: &Challenge,
    server_url: &str,
) -> Result<Vec<String>, McpError> {
    let server = parse(server_url)?;
    let mut urls = Vec::new();
    if let Some(url) = &challenge.resource_metadata {
        check_endpoint(url, "resource metadata URL")?;
        urls.push(url.clone());
    }
    for keep in [true, false] {
        let url = well_known(&server, "oauth-protected-resource", keep);
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    Ok(urls)
}

/// The protected resource as its metadata describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceMetadata {
    /// The authorization server's issuer URL.
    pub authorization_server: String,
    /// The `resource` value tokens are asked for.
    pub resource: Option<String>,
    pub scopes: Option<String>,
}

/// A metadata document read through the gate (`gate::OAUTH_METADATA`).
fn metadata(body: &str, what: &str) -> Result<Value, McpError> {
    gate::read_value(body, &OAUTH_METADATA)
        .map_err(|e| McpError::Malformed(format!("{what} refused: {e}")))
}

pub fn read_resource_metadata(body: &str) -> Result<ResourceMetadata, McpError> {
    let json = metadata(body, "resource metadata")?;
    let authorization_server = json
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .ok_or_else(|| {
            McpError::Malformed("resource metadata names no authorization server".into())
        })?
        .to_string();
    let scopes = json
        .get("scopes_supported")
        .and_then(Value::as_array)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|s| !s.is_empty());
    Ok(ResourceMetadata {
        authorization_server,
        resource: json
            .get("resource")
            .and_then(Value::as_str)
            .map(str::to_string),
        scopes,
    })
}

/// Where the authorization server's metadata may be, in the order to try
/// (with a path: RFC 8414's path insertion, then OpenID's; without: both at the root).
pub fn auth_server_metadata_urls(issuer: &str) -> Result<Vec<String>, McpError> {
    check_endpoint(issuer, "authorization server")?;
    let url = parse(issuer)?;
    let has_path = !url.path().trim_end_matches('/').is_empty();
    let mut urls = vec![
        well_known(&url, "oauth-authorization-server", has_path),
        well_known(&url, "openid-configuration", has_path),
    ];
    if has_path {
        let base = url.as_str().trim_end_matches('/');
        urls.push(format!("{base}/.well-known/openid-configuration"));
    }
    Ok(urls)
}

/// The authorization server's endpoints.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AuthServer {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
}

pub fn read_auth_server_metadata(body: &str) -> Result<AuthServer, McpError> {
    let json = metadata(body, "authorization server metadata")?;
    let text = |key: &str| json.get(key).and_then(Value::as_str).map(str::to_string);
    let (Some(authorization_endpoint), Some(token_endpoint)) =
        (text("authorization_endpoint"), text("token_endpoint"))
    else {
        return Err(McpError::Malformed(
            "authorization server metadata lacks its endpoints".into(),
        ));
    };
    check_endpoint(&authorization_endpoint, "authorization endpoint")?;
    check_endpoint(&token_endpoint, "token endpoint")?;
    let registration_endpoint = text("registration_endpoint");
    if let Some(endpoint) = &registration_endpoint {
        check_endpoint(endpoint, "registration endpoint")?;
    }
    if let Some(methods) = json
        .get("code_challenge_methods_supported")
        .and_then(Value::as_array)
    {
        if !methods.iter().any(|m| m.as_str() == Some("S256")) {
            return Err(McpError::Malformed(
                "the authorization server does not offer PKCE with S256".into(),
            ));
        }
    }
    Ok(AuthServer {
        authorization_endpoint,
        token_endpoint,
        registration_endpoint,
    })
}

/// A plain GET of a metadata document.
pub fn get(url: &str) -> McpRequest {
    McpRequest {
        method: "GET",
        url: url.to_string(),
        headers: vec![("accept".into(), "application/json".into())],
        body: None,
        id: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metadata_document_over_its_budget_is_refused_unbuilt() {
        let body = format!(
            r#"{{"authorization_servers":["https://as"],"junk":[{}0]}}"#,
            "0,".repeat(5_000)
        );
        let refused = read_resource_metadata(&body).unwrap_err();
        assert!(
            refused.to_string().contains("too many JSON values"),
            "{refused}"
        );
        let fine = read_resource_metadata(r#"{"authorization_servers":["https://as"]}"#);
        assert_eq!(fine.unwrap().authorization_server, "https://as");
    }

    #[test]
    fn a_bearer_challenge_names_its_metadata_and_scope() {
        let c = read_challenge(Some(
            r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://a/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#,
        ));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://a/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("mcp:tools"));
        assert_eq!(read_challenge(None), Challenge::default());
    }

    #[test]
    fn well_known_places_are_tried_in_order() {
        let urls = resource_metadata_urls(&Challenge::default(), "http://127.0.0.1:1/mcp").unwrap();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp",
                "http://127.0.0.1:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            auth_server_metadata_urls("http://127.0.0.1:1/").unwrap(),
            [
                "http://127.0.0.1:1/.well-known/oauth-authorization-server",
                "http://127.0.0.1:1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            auth_server_metadata_urls("https://id.x/tenant").unwrap()[0],
            "https://id.x/.well-known/oauth-authorization-server/tenant"
        );
    }

    #[test]
    fn metadata_is_read_and_a_server_without_s256_is_refused() {
        let rm = read_resource_metadata(
            r#"{"resource":"https://h/mcp","authorization_servers":["https://h/"],"scopes_supported":["a","b"]}"#,
        )
        .unwrap();
        assert_eq!(rm.authorization_server, "https://h/");
        assert_eq!(rm.scopes.as_deref(), Some("a b"));
        let meta = r#"{"issuer":"https://h/","authorization_endpoint":"https://h/authorize","token_endpoint":"https://h/token","registration_endpoint":"https://h/register","code_challenge_methods_supported":["S256"]}"#;
        let server = read_auth_server_metadata(meta).unwrap();
        assert_eq!(
            server.registration_endpoint.as_deref(),
            Some("https://h/register")
        );
        assert!(read_auth_server_metadata(&meta.replace("S256", "plain")).is_err());
        let sneaky = meta.replace("https://h/authorize", "javascript:alert(1)");
        assert!(
            read_auth_server_metadata(&sneaky).is_err(),
            "a javascript: sign-in link"
        );
        let clear = meta.replace("https://h/token", "http://h/token");
        assert!(
            read_auth_server_metadata(&clear).is_err(),
            "a token endpoint in clear"
        );
    }
}
