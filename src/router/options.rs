//! The options of `route_request_with`: the router-level access check,
//! CORS, the path prefix, the jurisdiction and location hint of new
//! objects, and the before-hooks.

use std::rc::Rc;

use crate::agent::access::{Refusal, RequestInfo};
use crate::agent::settings::AgentSettings;

use super::cors::Cors;
#[cfg(target_arch = "wasm32")]
use super::hooks::{AgentTarget, Before, BeforeHook};

/// A router-level access check: the request, and the settings read from the
/// worker's vars (the model a definition sets in code is not known here;
/// the agent's own `authorize` runs again inside the Durable Object).
pub type RouterAuthorize = Rc<dyn Fn(&RequestInfo, &AgentSettings) -> Result<(), Refusal>>;

/// Options of `route_request_with` (the worker build's router), named as
/// `routeAgentRequest`'s where they mean the same.
#[derive(Clone, Default)]
pub struct RouteOptions {
    /// Replaces the router's default check
    /// ([`default_authorize`](crate::agent::access::anonymous::default_authorize))
    /// for every agent request, before any Durable Object is reached: for a
    /// worker whose agents' `authorize` lets in what the default refuses
    /// (a session cookie, say). The internal paths and header are refused
    /// whatever it says.
    pub authorize: Option<RouterAuthorize>,
    /// Cross-origin answers (on by default, for the origins the access rule
    /// admits: the request's own host and `ALLOWED_ORIGINS`).
    pub cors: Cors,
    /// The path prefix agents are served under (`"agents"` when unset):
    /// `api/agents` serves `/api/agents/<class>/<name>[/…]`. The agent is
    /// reached at its usual path, whatever the prefix.
    pub prefix: Option<String>,
    /// The jurisdiction new objects are created in (`"eu"`, `"fedramp"`):
    /// an agent's object in a jurisdiction is another object than the one of
    /// the same name outside it.
    pub jurisdiction: Option<String>,
    /// Where a new object should preferably be created (`"weur"`, `"enam"`, …).
    pub location_hint: Option<String>,
    /// Runs for a WebSocket upgrade after the access rule, before the agent
    /// is reached: may refuse (its own answer) or rewrite the request.
    #[cfg(target_arch = "wasm32")]
    pub on_before_connect: Option<BeforeHook>,
    /// The same for every other agent request (`get-messages`, routes).
    #[cfg(target_arch = "wasm32")]
    pub on_before_request: Option<BeforeHook>,
}

impl RouteOptions {
    /// Default options: the default check, CORS for admitted origins,
    /// `/agents/`, no jurisdiction or location hint, no hooks.
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

    /// Cross-origin answers as `cors` says (`Cors::off()`: none).
    pub fn cors(mut self, cors: Cors) -> Self {
        self.cors = cors;
        self
    }

    /// Agents under `/<prefix>/` instead of `/agents/`.
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = Some(prefix.trim_matches('/').to_string());
        self
    }

    /// New objects in `jurisdiction`.
    pub fn jurisdiction(mut self, jurisdiction: &str) -> Self {
        self.jurisdiction = Some(jurisdiction.to_string());
        self
    }

    /// New objects preferably near `hint`.
    pub fn location_hint(mut self, hint: &str) -> Self {
        self.location_hint = Some(hint.to_string());
        self
    }

    /// Whether `request` may reach an agent, given the worker's settings.
    pub fn check(&self, request: &RequestInfo, settings: &AgentSettings) -> Result<(), Refusal> {
        match &self.authorize {
            Some(f) => f(request, settings),
            None => crate::agent::access::anonymous::default_authorize(request, settings),
        }
    }

    /// The prefix agents are served under.
    pub fn prefix_or_default(&self) -> &str {
        self.prefix
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or(crate::routing::DEFAULT_PREFIX)
    }
}

#[cfg(target_arch = "wasm32")]
impl RouteOptions {
    /// Runs `hook` for every WebSocket upgrade to an agent (after the access
    /// rule): it may refuse or rewrite the request.
    pub fn on_before_connect<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(worker::Request, AgentTarget) -> Fut + 'static,
        Fut: std::future::Future<Output = worker::Result<Before>> + 'static,
    {
        self.on_before_connect = Some(Rc::new(move |req, target| Box::pin(hook(req, target))));
        self
    }

    /// Runs `hook` for every other agent request (after the access rule).
    pub fn on_before_request<F, Fut>(mut self, hook: F) -> Self
    where
        F: Fn(worker::Request, AgentTarget) -> Fut + 'static,
        Fut: std::future::Future<Output = worker::Result<Before>> + 'static,
    {
        self.on_before_request = Some(Rc::new(move |req, target| Box::pin(hook(req, target))));
        self
    }
}
