//! The worker's fetch entry for agents, as one function: `route_request`
//! forwards `/agents/<kebab(class)>/<name>[/…]` to the Durable Object of
//! that name, refuses the internal channel and API paths and the internal
//! channel header from outside, checks `AUTH_TOKEN` before any agent is
//! woken, and hands every other request back for the worker's own pages.

use crate::agent::access::{require_token, Refusal, RequestInfo};
use crate::agent::channel_auth::CHANNEL_AUTH_HEADER;
use crate::routing::is_channel_path;

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

#[cfg(target_arch = "wasm32")]
pub use entry::{route_request, Routed};

#[cfg(target_arch = "wasm32")]
mod entry {
    use worker::{Env, Request, Response, Result};

    use crate::agent::access::request_info;
    use crate::agent::settings::env_value;
    use crate::routing::{route, Route};

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
        let path = req.path();
        let (binding, name) = match route(&path, classes) {
            Route::Agent { binding, name } => (binding, name),
            Route::BadAgentPath => {
                return Response::error("Invalid request", 400).map(Routed::Agent)
            }
            Route::NotAgent => return Ok(Routed::Other(req)),
        };
        let token = env_value(env, "AUTH_TOKEN");
        if let Err(refusal) =
            crate::router::refuse_from_outside(&request_info(&req)?, token.as_deref())
        {
            return Response::error(refusal.reason, refusal.status).map(Routed::Agent);
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
}
