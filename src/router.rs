//! The worker's fetch entry for agents, as one function: `route_request`
//! forwards `/agents/<kebab(class)>/<name>[/…]` to the Durable Object of
//! that name, refuses the internal channel and API paths and the internal
//! channel header from outside, applies the access rule (`AUTH_TOKEN`, the
//! browser origin, no anonymous use of a real model; or the author's own
//! router-level `authorize`) before any agent is woken, so a refused
//! stranger creates no Durable Object, writes nothing and makes no outbound
//! request; where the author binds Cloudflare's Rate Limiting and names it
//! in `RATE_LIMIT_BINDING`, counts each request against it under the
//! client's credential or address (`rate_limit_key`) and answers 429 past
//! it; and hands every other request back for the worker's own pages.

use std::rc::Rc;

use crate::agent::access::{require_token, Refusal, RequestInfo};
use crate::agent::channel_auth::CHANNEL_AUTH_HEADER;
use crate::agent::settings::AgentSettings;
use crate::routing::is_channel_path;

/// A router-level access check: the request, and the settings read from the
/// worker's vars (the model a definition sets in code is not known here;
/// the agent's own `authorize` runs again inside the Durable Object).
pub type RouterAuthorize = Rc<dyn Fn(&RequestInfo, &AgentSettings) -> Result<(), Refusal>>;

/// Options of `route_request_with` (the worker build's router).
#[derive(Clone, Default)]
pub struct RouteOptions {
    /// Replaces the router's default check
    /// ([`default_authorize`](crate::agent::anonymous::default_authorize))
    /// for every agent request, before any Durable Object is reached: for a
    /// worker whose agents' `authorize` lets in what the default refuses
    /// (a session cookie, say). The internal paths and header are refused
    /// whatever it says.
    pub authorize: Option<RouterAuthorize>,
}

impl RouteOptions {
    /// Default options: the default check.
    pub fn new() -> Self {
        RouteOptions::default()
    }

    /// The router's check is `f` instead of the default.
    pub fn authorize(
        mut self,
        f: impl Fn(&RequestInfo, &AgentSettings) -> Result<(), Refusal> + 'static,
    ) -> Self {
        self.authorize = Some(Rc::new(f));
        self
    }

    /// Whether `request` may reach an agent, given the worker's settings.
    pub fn check(&self, request: &RequestInfo, settings: &AgentSettings) -> Result<(), Refusal> {
        match &self.authorize {
            Some(f) => f(request, settings),
            None => crate::agent::anonymous::default_authorize(request, settings),
        }
    }
}

/// The routing-level check, before any agent is woken: the internal paths
/// (a parent's channel, another agent's API call) and the internal header
/// are never accepted from outside (the agent checks their credential as
/// well); with `token` (`AUTH_TOKEN`) set, the request must carry it.
pub fn refuse_from_outside(request: &RequestInfo, token: Option<&str>) -> Result<(), Refusal> {
    if is_channel_path(&request.path) {
        return Err(Refusal::forbidden("internal endpoint"));
    }
    // The channel credential is only ever sent Durable Object to Durable
    // Object; an outside request carrying the header is refused.
    if request.header(CHANNEL_AUTH_HEADER).is_some() {
        return Err(Refusal::forbidden("internal header"));
    }
    require_token(request, token.filter(|t| !t.is_empty()))
}

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

#[cfg(target_arch = "wasm32")]
pub use entry::{route_request, route_request_with, Routed};

#[cfg(target_arch = "wasm32")]
mod entry {
    use worker::{Env, Request, Response, Result};

    use super::RouteOptions;
    use crate::agent::access::request_info;
    use crate::agent::settings::{env_value, AgentSettings, Vars};
    use crate::routing::{route, Route};

    /// The 429 for a request past the author's Rate Limiting binding
    /// `binding` (500 when no such binding is bound: the author named it).
    async fn rate_limited(
        env: &Env,
        binding: &str,
        info: &crate::agent::access::RequestInfo,
    ) -> Result<Option<Response>> {
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
        let outcome = limiter.limit(crate::router::rate_limit_key(info)).await?;
        if outcome.success {
            return Ok(None);
        }
        Response::error("too many requests: rate limited (RATE_LIMIT_BINDING)", 429).map(Some)
    }

    /// What [`route_request`] made of a request.
    pub enum Routed {
        /// An agent request: the agent's answer, or the refusal (400
        /// `Invalid request` for an unknown class or a bad name, 403 for an
        /// internal path or header, 401/403 for a missing or wrong token).
        Agent(Response),
        /// Not under `/agents/`: the request, untouched, for the worker's
        /// own pages.
        Other(Request),
    }

    impl Routed {
        /// The agent's answer, or 404 `Not found` for any other path.
        pub fn or_not_found(self) -> Result<Response> {
            match self {
                Routed::Agent(response) => Ok(response),
                Routed::Other(_) => Response::error("Not found", 404),
            }
        }
    }

    /// Routes one request of the worker's fetch entry. `classes` are the
    /// Durable Object bindings (named as their classes) this worker serves.
    ///
    /// ```ignore
    /// #[worker::event(fetch)]
    /// async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    ///     route_request(req, &env, &["SupportAgent"]).await?.or_not_found()
    /// }
    /// ```
    pub async fn route_request(req: Request, env: &Env, classes: &[&str]) -> Result<Routed> {
        route_request_with(req, env, classes, &RouteOptions::default()).await
    }

    /// [`route_request`] with options (a router-level `authorize`).
    pub async fn route_request_with(
        req: Request,
        env: &Env,
        classes: &[&str],
        options: &RouteOptions,
    ) -> Result<Routed> {
        let path = req.path();
        let (binding, name) = match route(&path, classes) {
            Route::Agent { binding, name } => (binding, name),
            Route::BadAgentPath => {
                return Response::error("Invalid request", 400).map(Routed::Agent)
            }
            Route::NotAgent => return Ok(Routed::Other(req)),
        };
        let info = request_info(&req)?;
        let lookup = |name: &str| env_value(env, name);
        let settings = AgentSettings::from_vars(&Vars(&lookup));
        let token = settings.auth_token.as_deref();
        let checked = crate::router::refuse_from_outside(&info, token)
            .and_then(|()| options.check(&info, &settings));
        if let Err(refusal) = checked {
            return Response::error(refusal.reason, refusal.status).map(Routed::Agent);
        }
        if let Some(binding) =
            lookup(crate::router::RATE_LIMIT_BINDING_VAR).filter(|b| !b.trim().is_empty())
        {
            if let Some(answer) = rate_limited(env, binding.trim(), &info).await? {
                return Ok(Routed::Agent(answer));
            }
        }
        let stub = env
            .durable_object(binding)?
            .id_from_name(&name)?
            .get_stub()?;
        stub.fetch_with_request(req).await.map(Routed::Agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(path: &str, query: &[(&str, &str)], headers: &[(&str, &str)]) -> RequestInfo {
        let pairs = |list: &[(&str, &str)]| {
            list.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        RequestInfo {
            path: path.into(),
            query: pairs(query),
            headers: pairs(headers),
        }
    }

    #[test]
    fn internal_paths_and_the_internal_header_are_refused_token_or_not() {
        let status = |r: &RequestInfo, token| refuse_from_outside(r, token).map_err(|e| e.reason);
        let channel = request(
            "/agents/chat-agent/a/__chat-channel",
            &[("token", "t")],
            &[],
        );
        assert_eq!(status(&channel, Some("t")), Err("internal endpoint".into()));
        let api = request("/agents/chat-agent/a/__chat-api", &[], &[]);
        assert_eq!(status(&api, None), Err("internal endpoint".into()));
        let header = request(
            "/agents/chat-agent/a",
            &[],
            &[(CHANNEL_AUTH_HEADER, "id:x")],
        );
        assert_eq!(status(&header, None), Err("internal header".into()));
        let plain = request("/agents/chat-agent/a", &[], &[]);
        assert_eq!(status(&plain, None), Ok(()));
        assert_eq!(
            status(&plain, Some("")),
            Ok(()),
            "an empty token is no token"
        );
        assert_eq!(
            refuse_from_outside(&plain, Some("t")).map_err(|e| e.status),
            Err(401)
        );
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
