//! An agent's Durable Object before its host runs. Starting the host opens
//! (and on a new object creates and migrates) the object's storage and
//! loads the conversation; `LazyHost` starts it only for a request the
//! agent's `authorize` lets in, or for what a stranger cannot send: a
//! Durable Object RPC call, an alarm, a message on a socket accepted
//! earlier, an internal channel request (which the host then checks against
//! the deployment's credential) and an OAuth callback (which carries no
//! agent credential by design): its `state` is checked first against the
//! stored sign-in with a read-only query that opens nothing (a new object
//! has no tables), so a stranger's callback starts no agent either. A
//! refused request to a new agent name so creates no storage, writes
//! nothing and reaches no MCP server.

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use worker::{Env, Request, Response, State};

use crate::agent::access::request_info;
use crate::agent::definition::AgentDefinition;
use crate::agent::settings::{env_value, Vars};
use crate::log::{write as log_write, LogLevel};
use crate::mcp::oauth::signed_state::callback_state;
use crate::mcp::oauth::{server_of_state, Credentials};

use super::{now_ms, AgentHost, Authorizer};

type Start = Box<dyn FnOnce() -> worker::Result<Rc<AgentHost>>>;

/// The host, started on first need (see the module header).
pub struct LazyHost {
    start: RefCell<Option<Start>>,
    host: OnceCell<Result<Rc<AgentHost>, String>>,
    authorize: Authorizer,
    /// The author's own RPC methods, by name (from the definition: the
    /// bridge class asks for them in every instance's constructor).
    rpc_names: Vec<String>,
    /// The object's storage, only read (see `sign_in_pending`).
    storage: worker::Storage,
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
        let rpc_names = rpc_names_of(&*definition);
        let storage = state.storage();
        LazyHost {
            start: RefCell::new(Some(Box::new(move || {
                AgentHost::new_shared(state, env, definition, &agent)
            }))),
            host: OnceCell::new(),
            authorize,
            rpc_names,
            storage,
        }
    }

    /// The author's own RPC methods, by name, without starting the host.
    pub fn rpc_names(&self) -> &[String] {
        &self.rpc_names
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
        if self.host.get().is_none() {
            let url = req.url()?;
            match sign_in_state(&url) {
                Some(state) if !self.sign_in_pending(&state) => {
                    return Response::error(SIGN_IN_UNKNOWN, 400);
                }
                Some(_) => {}
                None if crate::routing::is_channel_path(url.path()) => {}
                None => {
                    if let Err(refusal) = (self.authorize)(&request_info(&req)?) {
                        return Response::error(refusal.reason, refusal.status);
                    }
                }
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

impl LazyHost {
    /// Whether `state` answers a sign-in this object has pending: read
    /// with one query on the raw storage, which creates no table.
    fn sign_in_pending(&self, state: &str) -> bool {
        let Some(id) = server_of_state(state) else {
            return false;
        };
        let stored = crate::store::mcp_servers::stored_sign_in(&self.storage.sql(), id);
        stored.is_some_and(|json| {
            Credentials::read(&json).is_ok_and(|c| c.pending_matches(state, id, now_ms()))
        })
    }
}

/// The refusal of a callback that answers no pending sign-in.
pub(super) const SIGN_IN_UNKNOWN: &str = "This sign-in is unknown or has expired.";

/// The sign-in `state` a request to the agent's OAuth callback path carries
/// (the authorization server's `state`, or the start link's `start`); such
/// a request is checked against the stored sign-in, not by `authorize`.
pub(super) fn sign_in_state(url: &worker::Url) -> Option<String> {
    if crate::routing::is_channel_path(url.path()) {
        return None;
    }
    let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    callback_state(url.path(), param).map(str::to_string)
}

/// The names of the definition's RPC methods (and callables marked for RPC)
/// that pass the name rules, sorted.
fn rpc_names_of<D: AgentDefinition>(definition: &D) -> Vec<String> {
    let callables = (definition.callables().into_iter())
        .map(|c| (c.name().to_string(), c))
        .collect();
    let mut refused = Vec::new();
    let methods = crate::agent::callables::rpc_methods::author_rpc_methods(
        definition.rpc_methods(),
        &callables,
        &mut refused,
    );
    let mut names: Vec<String> = methods.into_keys().collect();
    names.sort();
    names
}
