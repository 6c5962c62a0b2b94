//! The worker's fetch entry for agents, as one function: `route_request`
//! forwards `/agents/<kebab(class)>/<name>[/…]` (or the same under another
//! prefix) to the Durable Object of that name (in a jurisdiction, with a
//! location hint, if asked), refuses the internal channel and API paths and
//! the internal channel header from outside, answers a cross-origin
//! preflight itself (`cors.rs`), applies the access rule (`AUTH_TOKEN`, the
//! browser origin, no anonymous use of a real model; or the author's own
//! router-level `authorize`) and then the author's `on_before_connect` /
//! `on_before_request` (which may refuse or rewrite) before any agent is
//! woken, so a refused stranger creates no Durable Object, writes nothing
//! and makes no outbound request; where the author binds Cloudflare's Rate
//! Limiting and names it in `RATE_LIMIT_BINDING`, counts each request against
//! it under the client's credential or address (`rate_limit.rs`) and answers
//! 429 past it; and hands every other request back for the worker's own
//! pages.

mod cors;
#[cfg(target_arch = "wasm32")]
mod entry;
#[cfg(target_arch = "wasm32")]
mod hooks;
mod options;
mod outside;
mod rate_limit;

pub use cors::Cors;
#[cfg(target_arch = "wasm32")]
pub use entry::{route_request, route_request_with, Routed};
#[cfg(target_arch = "wasm32")]
pub use hooks::{AgentTarget, Before, BeforeHook};
pub use options::{RouteOptions, RouterAuthorize};
pub use outside::refuse_from_outside;
pub use rate_limit::{rate_limit_key, RATE_LIMIT_BINDING_VAR};
