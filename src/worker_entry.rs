//! The demo worker's fetch entry: the demo page at `/`, agent requests
//! through the crate's router (`route_request`), anything else 404.

use worker::{event, Context, Env, Request, Response, Result};

use crate::router::{route_request, Routed};

/// Durable Object bindings this worker serves (see wrangler.toml).
const AGENT_BINDINGS: &[&str] = &["ChatAgent", "Coordinator"];

const DEMO_PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/demo_page.html"));

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    match route_request(req, &env, AGENT_BINDINGS).await? {
        Routed::Other(req) if req.path() == "/" || req.path() == "/index.html" => {
            let mut response = Response::from_html(DEMO_PAGE)?;
            let _ = response.headers_mut().set("cache-control", "no-store");
            Ok(response)
        }
        routed => routed.or_not_found(),
    }
}
