//! An agent's Durable Object before its host runs. Starting the host opens
//! (and on a new object creates and migrates) the object's storage and
//! loads the conversation; `LazyHost` starts it only for a request the
//! agent's `authorize` lets in, or for what a stranger cannot send: a
//! Durable Object RPC call, an alarm, a message on a socket accepted
//! earlier, an internal channel request (which the host then checks against
//! the deployment's credential) and an OAuth callback (which carries no
//! agent credential by design; its `state` is checked against the stored
//! sign-in). A refused request to a new agent name so creates no storage,
//! writes nothing and reaches no MCP server.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use worker::{Env, Request, Response, State};

use crate::agent::access::request_info;
use crate::agent::definition::AgentDefinition;
use crate::agent::settings::{env_value, Vars};
use crate::log::{write as log_write, LogLevel};

use super::mcp_oauth::CALLBACK_SUFFIX;
use super::{AgentHost, Authorizer};

type Start = Box<dyn FnOnce() -> worker::Result<Rc<AgentHost>>>;

/// The host, started on first need (see the module header).
pub struct LazyHost {
    start: RefCell<Option<Start>>,
    host: OnceCell<Result<Rc<AgentHost>, String>>,
    authorize: Authorizer,
}

impl LazyHost {
    /// Nothing runs yet: the definition's access check is kept for the
    /// first request, the host's start for the first that passes.
    pub fn new<D: AgentDefinition>(state: State, env: Env, definition: D, agent: &str) -> LazyHost {
        let definition = Rc::new(definition);
        let settings = definition.settings(&Vars(&|name: &str| env_value(&env, name)));
        let owner = definition.clone();
        let authorize: Authorizer = Box::new(move |request| owner.authorize(request, &settings));
        let agent = agent.to_string();
        LazyHost {
            start: RefCell::new(Some(Box::new(move || {
                AgentHost::new_shared(state, env, definition, &agent)
            }))),
            host: OnceCell::new(),
            authorize,
        }
    }

    /// The host, started now if it has not been.
    pub fn get(&self) -> &Result<Rc<AgentHost>, String> {
        self.host.get_or_init(|| {
            let start = self.start.borrow_mut().take();
            let started = match start {
                Some(start) => start().map_err(|e| e.to_string()),
                None => Err("the agent's start failed before".to_string()),
            };
            if let Err(e) = &started {
                log_write(LogLevel::Error, &format!("agent failed to start: {e}"));
            }
            started
        })
    }

    /// A request to the object: refused before the host starts when the
    /// agent's `authorize` refuses it, else served by the host.
    pub async fn fetch(&self, req: Request) -> worker::Result<Response> {
        if self.host.get().is_none() && checked_by_authorize(&req.path()) {
            if let Err(refusal) = (self.authorize)(&request_info(&req)?) {
                return Response::error(refusal.reason, refusal.status);
            }
        }
        match self.get() {
            Ok(host) => {
                host.ready().await;
                host.fetch(req).await
            }
            Err(e) => Response::error(format!("agent failed to start: {e}"), 500),
        }
    }
}

/// Whether the host answers `path` only after `authorize` (the internal
/// paths and the OAuth callback are checked otherwise, see the header).
fn checked_by_authorize(path: &str) -> bool {
    !crate::routing::is_channel_path(path) && !path.ends_with(CALLBACK_SUFFIX)
}
