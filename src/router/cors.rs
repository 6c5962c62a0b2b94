//! Cross-origin answers of the router: a page on an origin the agent admits
//! (its own host, or one `ALLOWED_ORIGINS` names) may read what the agent
//! answers (`get-messages`, the author's routes) and have its preflight
//! (`OPTIONS` with `Access-Control-Request-Method`) answered by the router
//! itself, without a token and without waking the agent. Any other origin
//! gets no CORS header (and its preflight a 403), so the browser keeps the
//! answer from it. Plain functions of the request, the same natively.

use crate::agent::access::{check_origin, RequestInfo};

/// How the router answers cross-origin requests (`RouteOptions::cors`).
#[derive(Debug, Clone)]
pub struct Cors {
    /// Off: no CORS header is added and a preflight goes on to the agent
    /// like any request.
    pub enabled: bool,
    /// The request headers a page may send (`Access-Control-Allow-Headers`).
    pub allow_headers: Vec<String>,
    /// How long a browser may keep a preflight's answer, in seconds.
    pub max_age_secs: u32,
}

impl Default for Cors {
    fn default() -> Self {
        Cors {
            enabled: true,
            allow_headers: vec!["Content-Type".into(), "Authorization".into()],
            max_age_secs: 86_400,
        }
    }
}

/// The methods an agent's answers are read with.
const ALLOW_METHODS: &str = "GET, POST, HEAD, OPTIONS";

impl Cors {
    /// No CORS answers at all.
    pub fn off() -> Self {
        Cors {
            enabled: false,
            ..Cors::default()
        }
    }

    /// The origin to answer, if the request comes from a browser page on an
    /// origin `allowed` (`ALLOWED_ORIGINS`) or the request's own host admits.
    pub fn admitted_origin(&self, request: &RequestInfo, allowed: &[String]) -> Option<String> {
        let origin = request.header("origin")?.trim();
        (self.enabled && !origin.is_empty() && check_origin(request, allowed).is_ok())
            .then(|| origin.to_string())
    }

    /// Whether `method` with `request`'s headers is a CORS preflight.
    pub fn is_preflight(&self, method: &str, request: &RequestInfo) -> bool {
        self.enabled
            && method.eq_ignore_ascii_case("OPTIONS")
            && request.header("origin").is_some()
            && request.header("access-control-request-method").is_some()
    }

    /// The headers of any answer to a page on `origin`.
    pub fn answer_headers(&self, origin: &str) -> Vec<(&'static str, String)> {
        vec![
            ("access-control-allow-origin", origin.to_string()),
            ("vary", "Origin".to_string()),
        ]
    }

    /// The headers of the answer to a preflight from `origin`.
    pub fn preflight_headers(&self, origin: &str) -> Vec<(&'static str, String)> {
        let mut headers = self.answer_headers(origin);
        headers.extend([
            ("access-control-allow-methods", ALLOW_METHODS.to_string()),
            (
                "access-control-allow-headers",
                self.allow_headers.join(", "),
            ),
            ("access-control-max-age", self.max_age_secs.to_string()),
        ]);
        headers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(origin: Option<&str>, extra: &[(&str, &str)]) -> RequestInfo {
        let mut headers = vec![("host".to_string(), "agent.example".to_string())];
        if let Some(origin) = origin {
            headers.push(("origin".into(), origin.into()));
        }
        headers.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        RequestInfo {
            path: "/agents/chat-agent/r/get-messages".into(),
            query: Vec::new(),
            headers,
        }
    }

    #[test]
    fn only_an_admitted_origin_is_answered() {
        let cors = Cors::default();
        let allowed = vec!["https://app.example".to_string()];
        let page = from(Some("https://app.example"), &[]);
        assert_eq!(
            cors.admitted_origin(&page, &allowed).as_deref(),
            Some("https://app.example")
        );
        assert_eq!(
            cors.admitted_origin(&from(Some("https://evil.example"), &[]), &allowed),
            None
        );
        assert_eq!(cors.admitted_origin(&from(None, &[]), &allowed), None);
        assert_eq!(Cors::off().admitted_origin(&page, &allowed), None);
        let own = from(Some("https://agent.example"), &[]);
        assert!(cors.admitted_origin(&own, &[]).is_some(), "its own host");
    }

    #[test]
    fn a_preflight_is_an_options_request_naming_a_method() {
        let cors = Cors::default();
        let asks = from(
            Some("https://app.example"),
            &[("access-control-request-method", "GET")],
        );
        assert!(cors.is_preflight("OPTIONS", &asks));
        assert!(!cors.is_preflight("GET", &asks));
        assert!(!cors.is_preflight("OPTIONS", &from(Some("https://app.example"), &[])));
        assert!(!Cors::off().is_preflight("OPTIONS", &asks));
        let headers = cors.preflight_headers("https://app.example");
        assert!(headers.contains(&(
            "access-control-allow-headers",
            "Content-Type, Authorization".into()
        )));
        assert!(headers.contains(&("access-control-allow-origin", "https://app.example".into())));
    }
}
