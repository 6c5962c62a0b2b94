//! What a sign-in takes from the server being added, and what it does not:
//! every URL the discovery learns (the `resource_metadata` of a 401, the
//! issuer, the authorization, token and registration endpoints) must be
//! `https` (plain `http` only for this machine, in development), so no
//! `javascript:` link reaches a tab and no code or verifier travels in
//! clear; and the `resource` a server's metadata names must be the server's
//! own URL (RFC 9728 §3.3), so a server cannot have a person sign in for
//! another resource and receive that token.

use std::net::Ipv6Addr;

use url::{Host, Url};

use crate::mcp::jsonrpc::McpError;

/// Refuses `url` (`what`: how the error names it) unless it is `https`, or
/// `http` to a loopback host.
pub fn check_endpoint(url: &str, what: &str) -> Result<(), McpError> {
    let refused = |why: &str| McpError::Malformed(format!("the {what} is refused: {why}"));
    let parsed = Url::parse(url.trim()).map_err(|_| refused("not a URL"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(&parsed) => Ok(()),
        "http" => Err(refused("plain http to another machine")),
        _ => Err(refused("not an http(s) URL")),
    }
}

/// Refuses a protected resource's metadata naming a `resource` other than
/// the server's own URL (fragments and a trailing `/` aside).
pub fn check_resource(resource: &str, server_url: &str) -> Result<(), McpError> {
    let same = match (normalized(resource), normalized(server_url)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    };
    if same {
        return Ok(());
    }
    Err(McpError::Malformed(
        "the server's resource metadata names another resource than the server's URL; \
         a sign-in for it is refused"
            .into(),
    ))
}

fn normalized(url: &str) -> Option<String> {
    let mut parsed = Url::parse(url.trim()).ok()?;
    parsed.set_fragment(None);
    Some(parsed.as_str().trim_end_matches('/').to_string())
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip == Ipv6Addr::LOCALHOST,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_https_or_loopback_http() {
        for good in [
            "https://auth.example/authorize",
            "http://127.0.0.1:9000/token",
            "http://localhost/register",
            "http://[::1]:80/x",
        ] {
            assert!(check_endpoint(good, "endpoint").is_ok(), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "http://auth.example/token",
            "http://169.254.169.254/latest",
            "data:text/html,hi",
            "not a url",
        ] {
            let err = check_endpoint(bad, "authorization endpoint").unwrap_err();
            assert!(
                err.to_string()
                    .contains("authorization endpoint is refused"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn the_resource_must_be_the_servers_own_url() {
        let server = "https://mcp.example/mcp";
        assert!(check_resource("https://mcp.example/mcp", server).is_ok());
        assert!(check_resource("https://mcp.example/mcp/", server).is_ok());
        assert!(check_resource("https://MCP.example/mcp#x", server).is_ok());
        for other in [
            "https://api.bank.example/",
            "https://mcp.example/other",
            "http://mcp.example/mcp",
            "junk",
        ] {
            assert!(check_resource(other, server).is_err(), "{other}");
        }
    }
}
