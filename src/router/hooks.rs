//! The router's before-hooks as the author writes them: the agent a
//! request addresses, and what a hook decided (go on with a request, or
//! answer instead).

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use worker::{Request, Response, Result};

/// The agent a request addresses, as the before-hooks see it.
#[derive(Debug, Clone)]
pub struct AgentTarget {
    /// Its class (the binding's name, `ChatAgent`).
    pub class: String,
    /// Its instance name.
    pub name: String,
}

/// What a before-hook decided.
pub enum Before {
    /// Go on with this request (the one given, or a rewritten one; the agent
    /// reached is still the one the original path named).
    Continue(Request),
    /// Answer with this instead (a refusal, a redirect); no agent is woken.
    Respond(Response),
}

/// `on_before_connect` / `on_before_request`.
pub type BeforeHook = Rc<dyn Fn(Request, AgentTarget) -> LocalBoxFuture<'static, Result<Before>>>;
