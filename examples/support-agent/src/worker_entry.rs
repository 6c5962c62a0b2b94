//! The worker's fetch entry: the crate's router sends agent requests to the Durable Object named
//! by the path (refusing the internal paths and header from outside, checking `AUTH_TOKEN`);
//! anything else is 404.

use durable_chat::prelude::*;

#[worker::event(fetch)]
async fn fetch(
    req: worker::Request,
    env: worker::Env,
    _ctx: worker::Context,
) -> worker::Result<worker::Response> {
    route_request(req, &env, &["SupportAgentDO"])
        .await?
        .or_not_found()
}
