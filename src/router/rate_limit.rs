//! Cloudflare's Rate Limiting binding at the router: where the author binds
//! one and names it in `RATE_LIMIT_BINDING`, each agent request that passed
//! the access check is counted against it under the client's credential or
//! address (`rate_limit_key`) and answered 429 past it, before any agent is
//! woken.

use crate::agent::access::RequestInfo;

/// The variable naming the Rate Limiting binding `route_request` applies.
pub const RATE_LIMIT_BINDING_VAR: &str = "RATE_LIMIT_BINDING";

/// What a request is counted under by the Rate Limiting binding: its
/// credential (the `token` query parameter or a bearer token, hashed, so a
/// client that reconnects or opens many sockets is one client), else its
/// address (`CF-Connecting-IP`), else one shared `anonymous` key.
pub fn rate_limit_key(request: &RequestInfo) -> String {
    let bearer = request
        .header("authorization")
        .and_then(|h| h.strip_prefix("Bearer "));
    let token = request.query_param("token").or(bearer).map(str::trim);
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        let digest = crate::mcp::oauth::pkce::sha256(token.as_bytes());
        let hashed = crate::mcp::oauth::pkce::base64url(&digest[..12]);
        return format!("token:{hashed}");
    }
    match request.header("cf-connecting-ip").map(str::trim) {
        Some(address) if !address.is_empty() => format!("ip:{}", address.to_ascii_lowercase()),
        _ => "anonymous".to_string(),
    }
}

/// The 429 for a request past the author's Rate Limiting binding `binding`
/// (500 when no such binding is bound: the author named it).
#[cfg(target_arch = "wasm32")]
pub(super) async fn rate_limited(
    env: &worker::Env,
    binding: &str,
    info: &RequestInfo,
) -> worker::Result<Option<worker::Response>> {
    use worker::Response;
    let limiter = match env.rate_limiter(binding) {
        Ok(limiter) => limiter,
        Err(_) => {
            return Response::error(
                format!(
                    "RATE_LIMIT_BINDING names `{binding}`, which is not a Rate Limiting binding"
                ),
                500,
            )
            .map(Some)
        }
    };
    let outcome = limiter.limit(rate_limit_key(info)).await?;
    if outcome.success {
        return Ok(None);
    }
    Response::error("too many requests: rate limited (RATE_LIMIT_BINDING)", 429).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str, query: &[(&str, &str)], headers: &[(&str, &str)]) -> RequestInfo {
        RequestInfo::new(path, query, headers)
    }

    #[test]
    fn requests_are_counted_under_their_credential_else_their_address() {
        let by_query = request("/agents/chat-agent/a", &[("token", "s3cret")], &[]);
        let by_bearer = request(
            "/agents/chat-agent/b",
            &[],
            &[
                ("authorization", "Bearer s3cret"),
                ("cf-connecting-ip", "203.0.113.7"),
            ],
        );
        let key = rate_limit_key(&by_query);
        assert!(
            key.starts_with("token:") && !key.contains("s3cret"),
            "{key}"
        );
        assert_eq!(rate_limit_key(&by_bearer), key, "one credential, one key");
        let by_address = request("/a", &[], &[("cf-connecting-ip", "203.0.113.7")]);
        assert_eq!(rate_limit_key(&by_address), "ip:203.0.113.7");
        assert_eq!(rate_limit_key(&request("/a", &[], &[])), "anonymous");
    }
}
