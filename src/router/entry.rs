//! The router's fetch entry in a worker: finds the agent a request
//! addresses, answers a cross-origin preflight, applies the access rule and
//! the author's before-hooks (an OAuth callback whose `state` the agent
//! signed passes without a token), and forwards what is left to the agent's
//! Durable Object (in the jurisdiction and near the location asked for),
//! adding the CORS headers to its answer.

use wasm_bindgen::JsCast;
use worker::{Env, Headers, ObjectNamespace, Request, Response, Result};

use super::hooks::{AgentTarget, Before};
use super::options::RouteOptions;
use super::outside::refuse_from_outside;
use crate::agent::access::{request_info, RequestInfo};
use crate::agent::settings::{env_value, AgentSettings, Vars};
use crate::mcp::oauth::signed_state::{self, callback_state};
use crate::routing::{route_under, Route};

/// What [`route_request`] made of a request.
pub enum Routed {
    /// An agent request: the agent's answer, or the refusal (400
    /// `Invalid request` for an unknown class or a bad name, 403 for an
    /// internal path or header or an origin not admitted, 401/403 for a
    /// missing or wrong token, or a before-hook's own answer).
    Agent(Response),
    /// Not under the agents' prefix: the request, untouched, for the
    /// worker's own pages.
    Other(Request),
}

impl Routed {
    /// The agent's answer, or 404 `Not found` for any other path.
    pub fn or_not_found(self) -> Result<Response> {
        match self {
            Routed::Agent(response) => Ok(response),
            Routed::Other(_) => Response::error("Not found", 404),
        }
    }
}

/// Routes one request of the worker's fetch entry. `classes` are the
/// Durable Object bindings (named as their classes) this worker serves.
///
/// ```ignore
/// #[worker::event(fetch)]
/// async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
///     route_request(req, &env, &["SupportAgent"]).await?.or_not_found()
/// }
/// ```
pub async fn route_request(req: Request, env: &Env, classes: &[&str]) -> Result<Routed> {
    route_request_with(req, env, classes, &RouteOptions::default()).await
}

/// [`route_request`] with options (a router-level `authorize`, CORS, a
/// prefix, a jurisdiction and location hint, before-hooks).
pub async fn route_request_with(
    req: Request,
    env: &Env,
    classes: &[&str],
    options: &RouteOptions,
) -> Result<Routed> {
    let path = req.path();
    let (binding, name) = match route_under(&path, options.prefix_or_default(), classes) {
        (Route::Agent { binding, name }, _) => (binding, name),
        (Route::BadAgentPath, _) => {
            return Response::error("Invalid request", 400).map(Routed::Agent)
        }
        (Route::NotAgent, _) => return Ok(Routed::Other(req)),
    };
    let info = request_info(&req)?;
    let lookup = |name: &str| env_value(env, name);
    let settings = AgentSettings::from_vars(&Vars(&lookup));
    let origin = (options.cors).admitted_origin(&info, &settings.allowed_origins);
    // A preflight needs no token, but never opens the internal paths.
    let internal = refuse_from_outside(&info, None).err();
    if internal.is_none() && options.cors.is_preflight(req.method().as_ref(), &info) {
        return match origin {
            Some(origin) => {
                let headers = header_set(&options.cors.preflight_headers(&origin))?;
                Ok(Routed::Agent(
                    Response::empty()?.with_status(204).with_headers(headers),
                ))
            }
            None => Response::error("cross-origin request refused (see ALLOWED_ORIGINS)", 403)
                .map(Routed::Agent),
        };
    }
    let cors_headers = origin.map(|o| options.cors.answer_headers(&o));
    let answer = |response: Response| with_headers(response, cors_headers.as_deref());
    let token = settings.auth_token.as_deref();
    let checked = match internal {
        Some(refusal) => Err(refusal),
        None if signed_sign_in(&info, token, || object_id(env, binding, &name, options)) => Ok(()),
        None => refuse_from_outside(&info, token).and_then(|()| options.check(&info, &settings)),
    };
    if let Err(refusal) = checked {
        return answer(Response::error(refusal.reason, refusal.status)?).map(Routed::Agent);
    }
    if let Some(limiter) = lookup(super::RATE_LIMIT_BINDING_VAR).filter(|b| !b.trim().is_empty()) {
        if let Some(refused) = super::rate_limit::rate_limited(env, limiter.trim(), &info).await? {
            return answer(refused).map(Routed::Agent);
        }
    }
    let upgrade =
        (req.headers().get("Upgrade")?).is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
    let hook = match upgrade {
        true => options.on_before_connect.as_ref(),
        false => options.on_before_request.as_ref(),
    };
    let mut req = req;
    if let Some(hook) = hook {
        let target = AgentTarget {
            class: binding.to_string(),
            name: name.clone(),
        };
        match hook(req, target).await? {
            Before::Continue(next) => req = next,
            Before::Respond(response) => return answer(response).map(Routed::Agent),
        }
        // A rewritten request is checked for the internal paths and header
        // again: no hook opens them to the outside.
        if let Err(refusal) = refuse_from_outside(&request_info(&req)?, None) {
            return answer(Response::error(refusal.reason, refusal.status)?).map(Routed::Agent);
        }
    }
    let req = at_agent_path(req, options.prefix_or_default(), classes)?;
    let mut namespace = env.durable_object(binding)?;
    if let Some(jurisdiction) = &options.jurisdiction {
        namespace = in_jurisdiction(&namespace, jurisdiction)?;
    }
    let id = namespace.id_from_name(&name)?;
    let stub = match &options.location_hint {
        Some(hint) => id.get_stub_with_location_hint(hint)?,
        None => id.get_stub()?,
    };
    let response = stub.fetch_with_request(req).await?;
    answer(response).map(Routed::Agent)
}

/// Whether `info` is a request on an agent's OAuth callback path (a
/// browser coming back from a sign-in, or opening a sign-in link) whose
/// `state` that very object signed with `AUTH_TOKEN`: it carries no agent
/// token by design, and the object checks the state again
/// (`mcp::oauth::signed_state`). A made-up state is refused here like any
/// request without the token, before any object is reached.
fn signed_sign_in(
    info: &RequestInfo,
    token: Option<&str>,
    object_id: impl FnOnce() -> Result<String>,
) -> bool {
    let Some(key) = token.filter(|t| !t.is_empty()) else {
        return false;
    };
    let Some(state) = callback_state(&info.path, |name| info.query_param(name)) else {
        return false;
    };
    object_id().is_ok_and(|id| signed_state::verifies(state, key, &id))
}

/// The id of the object `name` names (computed here, nothing is reached).
fn object_id(env: &Env, binding: &str, name: &str, options: &RouteOptions) -> Result<String> {
    let mut namespace = env.durable_object(binding)?;
    if let Some(jurisdiction) = &options.jurisdiction {
        namespace = in_jurisdiction(&namespace, jurisdiction)?;
    }
    Ok(namespace.id_from_name(name)?.to_string())
}

/// The request with its path under the prefix changed to the agent's own
/// (`/agents/<class>/<name>[/…]`), when the prefix is another one; a path a
/// hook rewrote is mapped the same way (one outside the prefix is kept).
fn at_agent_path(req: Request, prefix: &str, classes: &[&str]) -> Result<Request> {
    let mut url = req.url()?;
    let agent_path = match route_under(url.path(), prefix, classes) {
        (Route::Agent { .. }, agent_path) if agent_path != url.path() => agent_path,
        _ => return Ok(req),
    };
    url.set_path(&agent_path);
    let init: &worker::web_sys::RequestInit = req.inner().unchecked_ref();
    let moved = worker::web_sys::Request::new_with_str_and_init(url.as_str(), init)?;
    Ok(Request::from(moved))
}

/// The namespace of `namespace`'s objects in `jurisdiction`.
fn in_jurisdiction(namespace: &ObjectNamespace, jurisdiction: &str) -> Result<ObjectNamespace> {
    let raw: &wasm_bindgen::JsValue = namespace.as_ref();
    let scoped = js_sys::Reflect::get(raw, &"jurisdiction".into())?
        .dyn_into::<js_sys::Function>()?
        .call1(raw, &jurisdiction.into())?;
    Ok(scoped.unchecked_into::<ObjectNamespace>())
}

fn header_set(pairs: &[(&'static str, String)]) -> Result<Headers> {
    let headers = Headers::new();
    for (name, value) in pairs {
        headers.set(name, value)?;
    }
    Ok(headers)
}

/// `response` with `extra` headers added (a WebSocket upgrade is left as
/// it is: a browser applies no CORS to it).
fn with_headers(response: Response, extra: Option<&[(&'static str, String)]>) -> Result<Response> {
    let Some(extra) = extra else {
        return Ok(response);
    };
    if response.status_code() == 101 {
        return Ok(response);
    }
    let headers = Headers::new();
    for (name, value) in response.headers().entries() {
        headers.append(&name, &value)?;
    }
    for (name, value) in extra {
        headers.set(name, value)?;
    }
    Ok(response.with_headers(headers))
}
