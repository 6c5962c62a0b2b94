//! The worker's fetch entry: the demo page at `/`, agent requests forwarded to
//! the Durable Object named by the path, anything else 404.

use worker::{event, Context, Env, Request, Response, Result};

use crate::routing::{route, Route};

/// Durable Object bindings this worker serves (see wrangler.toml).
const AGENT_BINDINGS: &[&str] = &["ChatAgent", "Coordinator"];

const DEMO_PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/demo_page.html"));

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let path = req.path();
    match route(&path, AGENT_BINDINGS) {
        Route::Agent { binding, name } => {
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
