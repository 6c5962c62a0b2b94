//! The demo worker's fetch entry: the demo page at `/`, agent requests
//! through the crate's router (`route_request`), anything else 404. Test
//! builds (`debug-routes`, with `DEBUG_TOOLS=1`) also serve the agents under
//! `/debug-prefixed/` through a router with every option set
//! (`debug_router.rs`).

use worker::{event, Context, Env, Request, Response, Result};

use crate::router::{route_request, Routed};

/// Durable Object bindings this worker serves (see wrangler.toml).
const AGENT_BINDINGS: &[&str] = &["ChatAgent", "Coordinator", "ChatDirectory"];

const DEMO_PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/demo_page.html"));

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    #[cfg(feature = "debug-routes")]
    let req = match debug_router::route(req, &env, AGENT_BINDINGS).await? {
        Routed::Other(req) => req,
        routed => return routed.or_not_found(),
    };
    match route_request(req, &env, AGENT_BINDINGS).await? {
        Routed::Other(req) if req.path() == "/" || req.path() == "/index.html" => {
            let mut response = Response::from_html(DEMO_PAGE)?;
            let _ = response.headers_mut().set("cache-control", "no-store");
            Ok(response)
        }
        routed => routed.or_not_found(),
    }
}

#[cfg(feature = "debug-routes")]
mod debug_router {
    //! Test only (`DEBUG_TOOLS=1`): the agents under `/debug-prefixed/`,
    //! near `weur` (workerd implements no jurisdiction); a socket whose URL holds
    //! `banned=1` is refused (403 `banned by the router`) and a request to
    //! `…/latest` is rewritten to `…/get-messages`.

    use worker::{Env, Request, Response, Result};

    use crate::router::{route_request_with, Before, RouteOptions, Routed};

    pub async fn route(req: Request, env: &Env, classes: &[&str]) -> Result<Routed> {
        let on = crate::agent::settings::env_value(env, "DEBUG_TOOLS").as_deref() == Some("1");
        if !on {
            return Ok(Routed::Other(req));
        }
        let options = RouteOptions::new()
            .prefix("debug-prefixed")
            .location_hint("weur")
            .on_before_connect(|req: Request, _| async move {
                let banned = req
                    .url()?
                    .query_pairs()
                    .any(|(k, v)| k == "banned" && v == "1");
                Ok(match banned {
                    true => Before::Respond(Response::error("banned by the router", 403)?),
                    false => Before::Continue(req),
                })
            })
            .on_before_request(|req: Request, _| async move {
                let url = req.url()?;
                let Some(base) = url.path().strip_suffix("/latest") else {
                    return Ok(Before::Continue(req));
                };
                let mut moved = url.clone();
                moved.set_path(&format!("{base}/get-messages"));
                Ok(Before::Continue(Request::new(
                    moved.as_str(),
                    req.method(),
                )?))
            });
        route_request_with(req, env, classes, &options).await
    }
}
