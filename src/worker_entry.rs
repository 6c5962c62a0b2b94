//! The worker's fetch entry: the demo page at `/`, agent requests forwarded to
//! the Durable Object named by the path, anything else 404.

use worker::{event, Context, Env, Request, Response, Result};

use crate::agent::access::{request_info, require_token, Refusal, RequestInfo};
use crate::agent::channel_auth::CHANNEL_AUTH_HEADER;
use crate::routing::{is_channel_path, route, Route};

/// Durable Object bindings this worker serves (see wrangler.toml).
const AGENT_BINDINGS: &[&str] = &["ChatAgent", "Coordinator"];

const DEMO_PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/demo_page.html"));

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let path = req.path();
    match route(&path, AGENT_BINDINGS) {
        Route::Agent { binding, name } => {
            if let Err(refusal) = authorize_route(&request_info(&req)?, &env) {
                return Response::error(refusal.reason, refusal.status);
            }
            let stub = env
                .durable_object(binding)?
                .id_from_name(&name)?
                .get_stub()?;
            stub.fetch_with_request(req).await
        }
        Route::BadAgentPath => Response::error("Invalid request", 400),
        Route::NotAgent if path == "/" || path == "/index.html" => {
            let mut response = Response::from_html(DEMO_PAGE)?;
            let _ = response.headers_mut().set("cache-control", "no-store");
            Ok(response)
        }
        Route::NotAgent => Response::error("Not found", 404),
    }
}

/// The routing-level authorisation hook: runs before any agent is woken.
/// Parent → child channels are internal (Durable Object to Durable Object)
/// and never reachable from outside (the agent checks their credential as
/// well); with `AUTH_TOKEN` set, a matching
/// `token` query parameter is required.
fn authorize_route(request: &RequestInfo, env: &Env) -> std::result::Result<(), Refusal> {
    if is_channel_path(&request.path) {
        return Err(Refusal::forbidden("internal endpoint"));
    }
    // The channel credential is only ever sent Durable Object to Durable
    // Object; an outside request carrying the header is refused.
    if request.header(CHANNEL_AUTH_HEADER).is_some() {
        return Err(Refusal::forbidden("internal header"));
    }
    let token = env
        .secret("AUTH_TOKEN")
        .map(|s| s.to_string())
        .or_else(|_| env.var("AUTH_TOKEN").map(|v| v.to_string()))
        .ok()
        .filter(|t| !t.is_empty());
    require_token(request, token.as_deref())
}
