//! Who may connect: the request as an authorisation hook sees it, refusals
//! with a status and a short reason, and the shared-token check the demo uses
//! (`AUTH_TOKEN` secret ⇒ a matching `token` query parameter).

pub mod anonymous;
pub mod channel_auth;

/// What an authorisation hook sees of a request, before a WebSocket is
/// accepted or `get-messages` answers.
#[derive(Debug, Clone, Default)]
pub struct RequestInfo {
    pub path: String,
    pub query: Vec<(String, String)>,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
}

impl RequestInfo {
    /// A request as a test (or an author's own check) describes it: its
    /// path, query pairs and headers (names lower-cased here).
    pub fn new(path: &str, query: &[(&str, &str)], headers: &[(&str, &str)]) -> RequestInfo {
        let pairs = |list: &[(&str, &str)], lower: bool| {
            (list.iter())
                .map(|(k, v)| {
                    let name = if lower {
                        k.to_ascii_lowercase()
                    } else {
                        k.to_string()
                    };
                    (name, v.to_string())
                })
                .collect()
        };
        RequestInfo {
            path: path.into(),
            query: pairs(query, false),
            headers: pairs(headers, true),
        }
    }

    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A refused request: answered with `status` (401 or 403) and `reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub reason: String,
}

impl Refusal {
    pub fn unauthorized(reason: &str) -> Self {
        Refusal {
            status: 401,
            reason: reason.to_string(),
        }
    }

    pub fn forbidden(reason: &str) -> Self {
        Refusal {
            status: 403,
            reason: reason.to_string(),
        }
    }
}

/// With `expected` set, the request must carry `?token=<expected>` or the
/// header `Authorization: Bearer <expected>` (for callers that can set
/// headers; a browser's WebSocket cannot).
pub fn require_token(request: &RequestInfo, expected: Option<&str>) -> Result<(), Refusal> {
    let Some(expected) = expected else {
        return Ok(());
    };
    let bearer = request
        .header("authorization")
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match request.query_param("token").or(bearer) {
        None => Err(Refusal::unauthorized("a token is required")),
        Some(given) if same_secret(given, expected) => Ok(()),
        Some(_) => Err(Refusal::forbidden("the token does not match")),
    }
}

/// A browser's cross-site request is refused: a request carrying an
/// `Origin` header (every browser WebSocket and cross-origin fetch does) is
/// let through only when that origin is the request's own host, or is in
/// `allowed` (`ALLOWED_ORIGINS`; `*` allows any). A request with no
/// `Origin` (a server, a script, a same-origin navigation) is not a
/// cross-site one and passes. This stops a web page the user visits from
/// opening a socket to the agent with the user's network position or
/// cookies (cross-site WebSocket hijacking).
pub fn check_origin(request: &RequestInfo, allowed: &[String]) -> Result<(), Refusal> {
    let Some(origin) = request.header("origin").map(str::trim) else {
        return Ok(());
    };
    if allowed.iter().any(|a| a == "*") {
        return Ok(());
    }
    let refused = || Refusal::forbidden("cross-origin request refused (see ALLOWED_ORIGINS)");
    let Some(origin) = serialized_origin(origin) else {
        return Err(refused());
    };
    if allowed
        .iter()
        .filter_map(|a| serialized_origin(a))
        .any(|a| a == origin)
    {
        return Ok(());
    }
    let own_host = request
        .header("host")
        .map(|h| h.trim().to_ascii_lowercase());
    let authority = origin.split_once("://").map(|(_, rest)| rest);
    match (own_host, authority) {
        (Some(host), Some(authority)) if host == authority => Ok(()),
        _ => Err(refused()),
    }
}

/// `scheme://host[:port]` of an http(s) origin, lower-cased, the default
/// port left out; `None` for anything else (`null`, `file:`, junk).
fn serialized_origin(text: &str) -> Option<String> {
    let url = url::Url::parse(text.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some(url.origin().ascii_serialization().to_ascii_lowercase())
}

/// Compares without stopping at the first difference.
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= (a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0)) as usize;
    }
    diff == 0
}

#[cfg(target_arch = "wasm32")]
/// What an authorisation hook sees of a request.
pub fn request_info(req: &worker::Request) -> worker::Result<RequestInfo> {
    let url = req.url()?;
    Ok(RequestInfo {
        path: url.path().to_string(),
        query: url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect(),
        headers: req
            .headers()
            .entries()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_token(token: Option<&str>) -> RequestInfo {
        RequestInfo {
            path: "/agents/chat-agent/a".into(),
            query: token
                .map(|t| vec![("token".to_string(), t.to_string())])
                .unwrap_or_default(),
            headers: vec![],
        }
    }

    fn from_origin(origin: Option<&str>, host: &str) -> RequestInfo {
        let mut headers = vec![("host".to_string(), host.to_string())];
        if let Some(o) = origin {
            headers.push(("origin".to_string(), o.to_string()));
        }
        RequestInfo {
            headers,
            ..with_token(None)
        }
    }

    #[test]
    fn a_browser_origin_must_be_the_requests_own_host_or_allowed() {
        let ok = |o, h, allowed: &[&str]| {
            let allowed: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
            check_origin(&from_origin(o, h), &allowed).is_ok()
        };
        assert!(
            ok(None, "a.example", &[]),
            "no Origin: not a browser's cross-site request"
        );
        assert!(ok(Some("https://a.example"), "a.example", &[]));
        assert!(ok(Some("http://127.0.0.1:8787"), "127.0.0.1:8787", &[]));
        assert!(ok(Some("HTTPS://A.EXAMPLE:443"), "a.example", &[]));
        assert!(!ok(Some("https://evil.example"), "a.example", &[]));
        assert!(!ok(Some("http://127.0.0.1:9999"), "127.0.0.1:8787", &[]));
        assert!(
            !ok(Some("null"), "a.example", &[]),
            "a sandboxed or file page"
        );
        assert!(ok(
            Some("https://app.example"),
            "api.example",
            &["https://app.example/"]
        ));
        assert!(ok(Some("null"), "a.example", &["*"]));
        assert_eq!(
            check_origin(&from_origin(Some("https://evil.example"), "a.example"), &[])
                .unwrap_err()
                .status,
            403
        );
    }

    #[test]
    fn without_a_configured_token_everyone_may_connect() {
        assert!(require_token(&with_token(None), None).is_ok());
    }

    #[test]
    fn a_configured_token_must_be_present_and_match() {
        assert_eq!(
            require_token(&with_token(None), Some("s3"))
                .unwrap_err()
                .status,
            401
        );
        assert_eq!(
            require_token(&with_token(Some("nope")), Some("s3"))
                .unwrap_err()
                .status,
            403
        );
        assert_eq!(
            require_token(&with_token(Some("s3x")), Some("s3"))
                .unwrap_err()
                .status,
            403
        );
        assert!(require_token(&with_token(Some("s3")), Some("s3")).is_ok());
    }

    #[test]
    fn the_token_may_come_as_a_bearer_header() {
        let with_header = |value: &str| RequestInfo {
            headers: vec![("authorization".into(), value.into())],
            ..with_token(None)
        };
        assert!(require_token(&with_header("Bearer s3"), Some("s3")).is_ok());
        assert_eq!(
            require_token(&with_header("Bearer nope"), Some("s3"))
                .unwrap_err()
                .status,
            403
        );
        assert_eq!(
            require_token(&with_header("Basic s3"), Some("s3"))
                .unwrap_err()
                .status,
            401
        );
    }
}
