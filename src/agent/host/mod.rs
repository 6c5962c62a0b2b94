//! Runs a core inside a Durable Object: feeds it platform events (sockets,
//! model stream, tool results, timers) and carries out its effects. Makes no
//! protocol decisions of its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use futures::future::{AbortHandle, Abortable};
use wasm_bindgen_futures::spawn_local;
use worker::{
    AbortController, Delay, Env, Request, Response, State, WebSocket, WebSocketIncomingMessage,
    WebSocketPair,
};

use crate::core::{carry_out, Step};
use crate::core::{CallId, ConnId, Core, Effect, Event, ScheduleOutcome, Timer};
use crate::model::providers::{Provider, ProviderSet};
use crate::protocol::channel::rpc_tool_call;
use crate::protocol::server;
use crate::store::SqlStore;

use super::access::{request_info, Refusal, RequestInfo};
use super::author_hooks::AuthorHooks;
use super::call_runs::CallRuns;
use super::channel_auth::{ChannelPolicy, CHANNEL_AUTH_HEADER};
use super::child_calls::{ChildCallLimits, ChildCallScope, ChildCalls};
use super::connection::Connection;
use super::connection_socket::Attachment;
use super::definition::AgentDefinition;
use super::engine_config::{core_config, AsyncHooks};
use super::handle::{AgentHandle, CoreHost};
use super::ids::{random_token, RandomIds};
use super::settings::{env_value, Vars};
use super::settled_waiters::SettledWaiters;
use super::tool::ServerTool;
use super::tool_context::{ToolContext, ToolRuns};

mod all_messages;
mod author_calls;
mod connections;
#[cfg(feature = "debug-routes")]
mod debug;
#[cfg(feature = "debug-routes")]
mod debug_author;
mod frames;
pub mod lazy;
mod mcp;
mod mcp_http;
mod mcp_oauth;
mod mcp_oauth_callback;
mod mcp_sse;
mod model_stream;
mod rpc_calls;

/// The var naming (comma-separated) the hosts whose file links reach the
/// model's provider.
const FILE_LINK_HOSTS_VAR: &str = "FILE_LINK_HOSTS";

/// The var that shows a failed model call's full text to the tabs.
const MODEL_ERROR_DETAIL_VAR: &str = "MODEL_ERROR_DETAIL";

/// The var (`"1"`) that keeps serving the internal fetch paths (a parent's
/// WebSocket channel, `…/__chat-channel`, and the submission API,
/// `…/__chat-api`) for callers that do not use RPC yet; off by default, so
/// no request from outside reaches them.
pub const INTERNAL_FETCH_FALLBACK_VAR: &str = "INTERNAL_FETCH_FALLBACK";

type Authorizer = Box<dyn Fn(&RequestInfo) -> Result<(), Refusal>>;

type ResponseFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = worker::Result<Option<Response>>>>>;
/// The definition's `on_request` (the author's own routes).
type RequestHook = Box<dyn Fn(Request, AgentHandle) -> ResponseFuture>;
/// The definition's `on_alarm` (the alarm the author scheduled).
type AlarmHook =
    Box<dyn Fn(AgentHandle) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>>;

pub struct AgentHost {
    state: State,
    authorize: Authorizer,
    on_request: RequestHook,
    on_author_alarm: AlarmHook,
    /// The definition's schedule callbacks, by name.
    schedule_callbacks: HashMap<String, super::schedule_callback::ScheduleCallback>,
    store: SqlStore,
    core: RefCell<Core>,
    /// The providers model calls go to: the default one the settings
    /// chose (or the failure every call meets), the ones a turn picks by name.
    providers: ProviderSet,
    /// The Worker's environment (a model binding such as `AI` is called through it).
    env: Env,
    tools: HashMap<String, ServerTool>,
    /// The definition's awaited hooks (`before_turn`, `on_chat_response`).
    hooks: AsyncHooks,
    /// The definition's `on_start`, shared by every entry point that waits for it.
    started: RefCell<Option<futures::future::Shared<futures::future::LocalBoxFuture<'static, ()>>>>,
    /// The definition's callables, state and connection hooks.
    author: AuthorHooks,
    /// Abort signals of the server tool runs in flight.
    tool_runs: ToolRuns,
    /// Callable runs in flight, by connection and call id (a streaming one
    /// is aborted when the core cancels it).
    call_runs: CallRuns,
    /// The connections whose close was handled lately (see `on_close`).
    closed: RefCell<std::collections::VecDeque<ConnId>>,
    sockets: RefCell<HashMap<ConnId, WebSocket>>,
    model_calls: RefCell<HashMap<CallId, AbortController>>,
    /// The one pending in-isolate wake-up (when it is due, and the handle
    /// that cancels it) for the core's earliest timer. A deadline that moves
    /// later (the stall check follows every model event) leaves it alone: it
    /// fires early, finds nothing due, and the next one is scheduled.
    /// Replacing it aborts the wait, which drops its `Delay` (clearTimeout).
    wake: RefCell<Option<(u64, AbortHandle)>>,
    /// The durable deadline this instance last set the alarm for (an alarm
    /// set by an earlier instance is kept until this one asks otherwise).
    alarm_asked: std::cell::Cell<Option<u64>>,
    /// The test and benchmark switches (`debug-routes` builds only).
    #[cfg(feature = "debug-routes")]
    debug: debug::DebugSwitches,
    /// `MODEL_ERROR_DETAIL=tabs`: a failed model call's full text reaches
    /// the tabs (else only its status class; the log always has it).
    model_error_detail_to_tabs: bool,
    /// `FILE_LINK_HOSTS`: the hosts whose `http(s)` file links the model's
    /// provider is given (any other link becomes a text note).
    link_hosts: Vec<String>,
    /// The credential a parent's channel and the submission API carry
    /// (see `channel_auth.rs`).
    channel_policy: ChannelPolicy,
    /// The MCP servers the agent is connected to (see `mcp.rs`).
    mcp: mcp::McpClients,
    /// Code waiting for a submission to be final (`AgentHandle::wait_for_submission`).
    settled_waiters: SettledWaiters,
    /// The calls over Durable Object RPC in flight (see `rpc_calls.rs`).
    rpc: rpc_calls::RpcCalls,
    /// `INTERNAL_FETCH_FALLBACK=1`: the internal fetch paths are served.
    internal_fetch: bool,
    /// `MAX_CONNECTIONS_PER_CLIENT`: the sockets one client address may
    /// hold (`None`: three quarters of `max_connections`; 0: no share).
    max_connections_per_client: Option<usize>,
    /// Calls to child agents in flight, per turn and in all (see `child_calls.rs`).
    child_calls: Rc<ChildCalls>,
    /// `destroy` ran: no effect is carried out any more (see `connections.rs`).
    destroyed: std::cell::Cell<bool>,
}

/// The address of the client a request comes from (`CF-Connecting-IP`,
/// which Cloudflare sets), if it names one.
fn client_address(req: &Request) -> Option<String> {
    let address = req.headers().get("cf-connecting-ip").ok().flatten()?;
    let address = address.trim();
    (!address.is_empty() && address.len() <= 64).then(|| address.to_ascii_lowercase())
}

/// How many handled closes `AgentHost::closed` remembers.
const REMEMBERED_CLOSES: usize = 64;

pub(crate) fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

impl AgentHost {
    pub fn new<D: AgentDefinition>(
        state: State,
        env: Env,
        definition: D,
        agent: &str,
    ) -> worker::Result<Rc<Self>> {
        AgentHost::new_shared(state, env, Rc::new(definition), agent)
    }

    /// [`AgentHost::new`] with a definition held elsewhere too.
    pub(crate) fn new_shared<D: AgentDefinition>(
        state: State,
        env: Env,
        definition: Rc<D>,
        agent: &str,
    ) -> worker::Result<Rc<Self>> {
        let lookup = |name: &str| env_value(&env, name);
        #[cfg(feature = "debug-routes")]
        let debug = debug::DebugSwitches::from_vars(lookup);
        let channel_policy = ChannelPolicy::from_vars(lookup);
        let internal_fetch = lookup(INTERNAL_FETCH_FALLBACK_VAR).as_deref() == Some("1");
        let max_connections_per_client =
            lookup("MAX_CONNECTIONS_PER_CLIENT").and_then(|v| v.trim().parse::<usize>().ok());
        let model_error_detail_to_tabs = lookup(MODEL_ERROR_DETAIL_VAR).as_deref() == Some("tabs");
        let link_hosts = lookup(FILE_LINK_HOSTS_VAR)
            .unwrap_or_default()
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        let settings = definition.settings(&Vars(&lookup));
        let declared_mcp = definition.mcp_servers(&Vars(&lookup));
        crate::log::set_threshold(settings.turns.log_level);
        #[allow(unused_mut)]
        let mut tools = definition.tools();
        tools.extend(super::context_tool::set_context_tool(definition.as_ref()));
        tools.extend(super::search_tool::search_context_tool(definition.as_ref()));
        #[cfg(feature = "debug-routes")]
        if debug.tools {
            tools.extend(super::debug_tools::tools());
            tools.extend(debug_author::tools());
        }
        let store = SqlStore::open(state.storage(), definition.searches_history())?;
        let stored = store.load()?;
        let name = stored_name(&store);
        let mut providers = settings.providers();
        for (name, provider) in definition.model_providers(&Vars(&lookup)) {
            providers = providers.with(&name, Provider::custom(provider));
        }
        if let Some(name) = lookup("MODEL_PROVIDER") {
            providers = providers.default_to(&name);
        }
        let providers = providers.with_workers_ai_ids(&random_token(10));
        let mut config = core_config(&definition, &settings, &tools, &name, agent);
        let author = AuthorHooks::of(&definition);
        for refused in &author.refused_rpc_methods {
            crate::log::write(crate::log::LogLevel::Error, refused);
        }
        config.agent_api = author.agent_api(&definition);
        let mcp = mcp::McpClients::new(
            tools.iter().map(|t| t.spec.name.clone()),
            settings.outbound_hosts.clone(),
            declared_mcp,
        );
        let child_calls = ChildCalls::new(ChildCallLimits {
            per_turn: settings.turns.limits.max_child_calls_per_turn,
            per_agent: settings.turns.limits.max_child_calls_per_agent,
        });
        let history: Rc<dyn crate::core::History> = Rc::new(store.clone());
        let mut core = Core::new(config, stored, history, Box::new(RandomIds), now_ms());
        for refused in core.reconcile_declared_schedules(definition.scheduled_tasks(), now_ms()) {
            crate::log::write(crate::log::LogLevel::Error, &refused);
        }
        let (owner, allowed) = (definition.clone(), settings.clone());
        let authorize: Authorizer = Box::new(move |request| owner.authorize(request, &allowed));
        let routes = definition.clone();
        let on_request: RequestHook = Box::new(move |req, agent| {
            let routes = routes.clone();
            Box::pin(async move { routes.on_request(req, agent).await })
        });
        let alarms = definition.clone();
        let on_author_alarm: AlarmHook = Box::new(move |agent| {
            let alarms = alarms.clone();
            Box::pin(async move { alarms.on_alarm(agent).await })
        });
        #[allow(unused_mut)]
        let mut schedule_callbacks = definition.schedule_callbacks();
        #[cfg(feature = "debug-routes")]
        if debug.tools {
            schedule_callbacks.extend(debug_author::schedule_callbacks());
        }
        let host = Rc::new(AgentHost {
            state,
            authorize,
            on_request,
            on_author_alarm,
            schedule_callbacks: schedule_callbacks
                .into_iter()
                .map(|c| (c.name.clone(), c))
                .collect(),
            store,
            core: RefCell::new(core),
            providers,
            env: env.clone(),
            tools: tools
                .into_iter()
                .map(|t| (t.spec.name.clone(), t))
                .collect(),
            hooks: AsyncHooks::of(&definition),
            author,
            tool_runs: ToolRuns::default(),
            call_runs: CallRuns::default(),
            closed: RefCell::new(Default::default()),
            sockets: RefCell::new(HashMap::new()),
            model_calls: RefCell::new(HashMap::new()),
            wake: RefCell::new(None),
            alarm_asked: std::cell::Cell::new(None),
            #[cfg(feature = "debug-routes")]
            debug,
            channel_policy,
            model_error_detail_to_tabs,
            link_hosts,
            mcp,
            settled_waiters: SettledWaiters::default(),
            rpc: rpc_calls::RpcCalls::default(),
            internal_fetch,
            max_connections_per_client,
            child_calls,
            destroyed: std::cell::Cell::new(false),
            started: RefCell::new(None),
        });
        #[cfg(feature = "debug-routes")]
        debug::host_created();
        host.adopt_open_sockets();
        host.dispatch(Event::Woke);
        host.run_on_start(definition);
        Ok(host)
    }

    /// Starts the definition's `on_start`; every entry point waits for it
    /// (`ready`).
    fn run_on_start<D: AgentDefinition>(self: &Rc<Self>, definition: Rc<D>) {
        use futures::FutureExt;
        let agent = self.handle();
        #[cfg(feature = "debug-routes")]
        let debug_start = self.debug.tools.then(|| Rc::downgrade(self));
        let run = async move {
            definition.on_start(agent).await;
            // Test-only: a slow start of its own, then noted, for a test to
            // see that the first request waited for it.
            #[cfg(feature = "debug-routes")]
            if let Some(host) = debug_start {
                worker::Delay::from(std::time::Duration::from_millis(50)).await;
                if let Some(host) = host.upgrade() {
                    host.debug.started.set(true);
                }
            }
        }
        .boxed_local()
        .shared();
        wasm_bindgen_futures::spawn_local(run.clone());
        *self.started.borrow_mut() = Some(run);
    }

    /// Resolves once the definition's `on_start` has run.
    pub async fn ready(&self) {
        let started = self.started.borrow().clone();
        if let Some(started) = started {
            started.await;
        }
    }

    /// Sockets accepted by an earlier instance (before hibernation or eviction).
    fn adopt_open_sockets(self: &Rc<Self>) {
        for ws in self.state.get_websockets() {
            if let Ok(Some(Attachment { conn, closed, .. })) = ws.deserialize_attachment() {
                if closed {
                    // Its close was handled before the eviction.
                    continue;
                }
                let conn: ConnId = Rc::from(conn);
                self.sockets.borrow_mut().insert(conn.clone(), ws);
                self.dispatch(Event::Adopted { conn });
            }
        }
    }

    pub async fn fetch(self: &Rc<Self>, req: Request) -> worker::Result<Response> {
        if self.destroyed.get() {
            // The object resets in a moment; the next request finds it new.
            return Response::error("this agent was destroyed; try again", 503);
        }
        let url = req.url()?;
        let path = url.path();
        #[cfg(feature = "debug-routes")]
        if self.is_storage_report(path) {
            // Before the name is written down: a report of what is stored.
            return self.storage_report().await;
        }
        let internal = crate::routing::is_channel_path(path);
        if !internal {
            self.note_agent_url(&url);
            if req.method() == worker::Method::Get {
                if let Some(response) = self.mcp_oauth_callback(&url).await {
                    return Ok(response);
                }
            }
        }
        let channel = path.ends_with(crate::routing::CHANNEL_PATH);
        if internal && !self.internal_fetch {
            // Other agents reach this one over RPC; the fetch paths exist
            // only as an opt-in fallback.
            return Response::error("Not implemented", 404);
        }
        if internal {
            // Checked here, not only by a router: a parent's channel carries
            // the deployment's credential (see channel_auth.rs).
            let presented = req.headers().get(CHANNEL_AUTH_HEADER)?;
            let own_id = self.state.id().to_string();
            if let Some(warning) = self.channel_policy.warning() {
                crate::log::write(crate::log::LogLevel::Warn, warning);
            }
            if !self.channel_policy.allows(presented.as_deref(), &own_id) {
                return Response::error("Forbidden", 403);
            }
        } else if let Err(refusal) = (self.authorize)(&request_info(&req)?) {
            return Response::error(refusal.reason, refusal.status);
        }
        // Only a request let in names the instance (a stored row) and
        // connects the MCP servers.
        if let Some(name) = crate::routing::instance_name(path) {
            self.remember_name(&name);
        }
        if !internal {
            self.ensure_mcp();
        }
        if let Some(refused) = crate::agent::body::refuse_declared(&req) {
            return refused;
        }
        #[cfg(feature = "debug-routes")]
        if let Some(response) = self.debug_route(&req, path) {
            return response;
        }
        if internal && !channel {
            return super::remote::serve(self.handle(), req).await;
        }
        #[cfg(feature = "debug-routes")]
        if self.debug.tools && path.ends_with(debug::STARTED_ROUTE) {
            return Response::from_json(
                &serde_json::json!({ "started": self.debug.started.get() }),
            );
        }
        #[cfg(feature = "debug-routes")]
        if self.debug.tools && path.contains(debug_author::ROUTES) {
            return debug_author::serve(req, self.handle()).await;
        }
        if path.ends_with("/get-messages") {
            return self.get_messages();
        }
        let upgrade = req.headers().get("Upgrade")?.unwrap_or_default();
        if !upgrade.eq_ignore_ascii_case("websocket") {
            let route = self
                .child_call_scope(None)
                .run((self.on_request)(req, self.handle()));
            return match route.await? {
                Some(response) => Ok(response),
                None => Response::error("Not implemented", 404),
            };
        }
        let max_connections = self.core.borrow().config().settings.limits.max_connections;
        if max_connections > 0 && self.state.get_websockets().len() >= max_connections {
            return Response::error(
                format!("too many connections to this agent (limit {max_connections})"),
                429,
            );
        }
        let client = client_address(&req);
        if let Some(refused) = self.over_client_share(client.as_deref(), max_connections) {
            return refused;
        }
        let pk = url
            .query_pairs()
            .find(|(k, _)| k == "_pk")
            .map(|(_, v)| v.into_owned())
            .filter(|v| !v.is_empty() && v.len() <= 128);
        let conn = match channel {
            true => self.unique_conn_id(Some(format!("channel:{}", random_token(12)))),
            false => self.unique_conn_id(pk),
        };
        let request = request_info(&req)?;
        let (tags, readonly) = match channel {
            true => (Vec::new(), false),
            false => self.connect_decisions(&conn, &request),
        };
        let pair = WebSocketPair::new()?;
        let tag_refs: Vec<&str> = tags.iter().map(String::as_str).collect();
        self.state
            .accept_websocket_with_tags(&pair.server, &tag_refs);
        pair.server.serialize_attachment(Attachment {
            client,
            ..Attachment::new(&conn, channel, readonly)
        })?;
        let connection = Connection::new(&conn, pair.server.clone(), tags);
        self.closed.borrow_mut().retain(|c| *c != conn);
        self.sockets.borrow_mut().insert(conn.clone(), pair.server);
        self.dispatch(if channel {
            Event::Adopted { conn }
        } else {
            Event::Connected { conn }
        });
        if !channel {
            spawn_local((self.author.on_connect)(
                (connection, request),
                self.handle(),
            ));
        }
        Response::from_websocket(pair.client)
    }

    /// A 429 when the client at `client` already holds its share of the
    /// agent's sockets (`MAX_CONNECTIONS_PER_CLIENT`; by default three
    /// quarters of `max_connections`), so one client cannot hold them all.
    fn over_client_share(
        &self,
        client: Option<&str>,
        max_connections: usize,
    ) -> Option<worker::Result<Response>> {
        let client = client?;
        let share = self
            .max_connections_per_client
            .unwrap_or(max_connections - max_connections / 4);
        if share == 0 {
            return None;
        }
        let held = self
            .state
            .get_websockets()
            .iter()
            .filter_map(|ws| ws.deserialize_attachment::<Attachment>().ok().flatten())
            .filter(|a| !a.closed && a.client.as_deref() == Some(client))
            .count();
        (held >= share).then(|| {
            Response::error(
                format!("too many connections from one client to this agent (limit {share})"),
                429,
            )
        })
    }

    /// The client picks `_pk`; two sockets with the same one stay distinct.
    fn unique_conn_id(&self, pk: Option<String>) -> ConnId {
        let base = pk.unwrap_or_else(|| random_token(16));
        let sockets = self.sockets.borrow();
        let mut candidate = base.clone();
        let mut n = 1;
        while sockets.contains_key(candidate.as_str()) {
            n += 1;
            candidate = format!("{base}#{n}");
        }
        Rc::from(candidate)
    }

    fn remember_name(self: &Rc<Self>, name: &str) {
        if self.core.borrow().config().name != name {
            self.dispatch(Event::Named {
                name: name.to_string(),
            });
        }
    }

    /// The agent's own turn (e.g. from a scheduled job or an HTTP route of
    /// yours): stored, queued and broadcast to every tab like a tab's turn.
    pub fn chat(self: &Rc<Self>, message: crate::protocol::UIMessage) {
        self.dispatch(Event::ProgrammaticChat {
            conn: None,
            message,
            tools: Vec::new(),
            executor: false,
        });
    }

    /// Where a child call made now by this agent's code counts: turn
    /// `turn`'s tools, or (`None`) the agent's code outside a turn.
    fn child_call_scope(&self, turn: Option<&str>) -> ChildCallScope {
        ChildCallScope::new(self.child_calls.clone(), turn)
    }

    /// The agent as its own code reaches it.
    pub(crate) fn handle(self: &Rc<Self>) -> AgentHandle {
        AgentHandle::new(self.clone())
    }

    /// Forgets the history; every tab is told to clear.
    pub fn clear_messages(self: &Rc<Self>) {
        self.dispatch(Event::ClearHistory);
    }

    pub fn on_message(self: &Rc<Self>, ws: WebSocket, message: WebSocketIncomingMessage) {
        let Some((conn, channel, readonly)) = self.conn_of(&ws) else {
            return;
        };
        match message {
            WebSocketIncomingMessage::String(text) if channel => {
                self.dispatch(Event::ChannelFrame { conn, text })
            }
            WebSocketIncomingMessage::String(text) if readonly => {
                self.dispatch(Event::ReadonlyFrame { conn, text })
            }
            WebSocketIncomingMessage::String(text) => self.dispatch(Event::Frame { conn, text }),
            WebSocketIncomingMessage::Binary(_) => {
                let _ = ws.send_with_str(server::chat_error(
                    "binary frames are not supported; send JSON text",
                ));
            }
        }
    }

    /// The largest frame a socket of this agent may send, in bytes: the
    /// bridge (scripts/rpc-bridge.mjs) refuses a larger one by its length,
    /// before its text is copied into wasm memory.
    pub fn frame_limit(&self) -> usize {
        self.core.borrow().config().settings.limits.max_frame_bytes
    }

    /// A frame over [`Self::frame_limit`] that the bridge kept in JS: `bytes`
    /// its size, `head` its first characters. Refused as the core refuses
    /// any frame over the limit (an error frame, the socket left open).
    pub fn on_large_message(self: &Rc<Self>, ws: WebSocket, bytes: usize, head: String) {
        if let Some((conn, _, _)) = self.conn_of(&ws) {
            self.dispatch(Event::FrameTooLarge { conn, bytes, head });
        }
    }

    /// A socket's close or error event. The runtime may deliver both for one
    /// socket (an error, then its close): only the first is handled, so the
    /// core hears of it once and `on_close` runs once per connection.
    pub fn on_close(self: &Rc<Self>, ws: WebSocket) {
        // Complete the client's close handshake (the runtime does not answer a
        // hibernatable socket's close frame by itself); fails harmlessly on a
        // socket that is already gone.
        let _ = ws.close(Some(1000), None::<&str>);
        if self.destroyed.get() {
            // Erased: no hook runs (it could write again).
            return;
        }
        let Ok(Some(mut attachment)) = ws.deserialize_attachment::<Attachment>() else {
            return;
        };
        let conn: ConnId = Rc::from(attachment.conn.as_str());
        if attachment.closed || self.closed.borrow().contains(&conn) {
            return;
        }
        attachment.closed = true;
        // Kept on the socket (across an eviction between its two events) and
        // in memory (in case the runtime refuses to change a closed socket).
        let _ = ws.serialize_attachment(&attachment);
        {
            let mut closed = self.closed.borrow_mut();
            if closed.len() == REMEMBERED_CLOSES {
                closed.pop_front();
            }
            closed.push_back(conn.clone());
        }
        self.sockets.borrow_mut().remove(&conn);
        self.dispatch(Event::Disconnected { conn: conn.clone() });
        #[cfg(feature = "debug-routes")]
        if self.debug.tools {
            debug_author::record_close(&self.handle(), &conn);
        }
        if !attachment.channel {
            let connection = self.connection_on(&conn, ws);
            spawn_local((self.author.on_close)(connection, self.handle()));
        }
    }

    /// A socket's connection id, whether it is a parent's channel, and
    /// whether it is readonly.
    fn conn_of(&self, ws: &WebSocket) -> Option<(ConnId, bool, bool)> {
        let attachment = ws.deserialize_attachment::<Attachment>().ok()??;
        let conn: ConnId = Rc::from(attachment.conn);
        if !self.sockets.borrow().contains_key(&conn) {
            self.sockets.borrow_mut().insert(conn.clone(), ws.clone());
        }
        Some((conn, attachment.channel, attachment.readonly))
    }

    pub fn dispatch(self: &Rc<Self>, event: Event) {
        let effects = {
            let mut core = self.core.borrow_mut();
            core.handle(event, now_ms());
            self.write_log(&mut core);
            core.take_effects()
        };
        self.execute(effects);
        self.schedule_timers();
    }

    /// The in-isolate wake-up fired: the core fires whatever is due.
    fn on_wake(self: &Rc<Self>) {
        let effects = {
            let mut core = self.core.borrow_mut();
            core.handle_timeout(now_ms());
            self.write_log(&mut core);
            core.take_effects()
        };
        self.execute(effects);
        self.schedule_timers();
    }

    /// Writes the core's log events, one line each, after the agent's prefix.
    fn write_log(&self, core: &mut Core) {
        let events = core.take_log();
        if events.is_empty() {
            return;
        }
        let prefix = crate::log::agent_prefix(&core.config().agent, &core.config().name);
        for event in events {
            crate::log::write(event.level(), &format!("{prefix} {event}"));
        }
    }

    /// One line of the host's own, after the agent's prefix.
    pub(super) fn log_line(&self, level: crate::log::LogLevel, text: &str) {
        if !level.shown_at(crate::log::threshold()) {
            return;
        }
        let core = self.core.borrow();
        let prefix = crate::log::agent_prefix(&core.config().agent, &core.config().name);
        crate::log::write(level, &format!("{prefix} {text}"));
    }

    /// Keeps the wake-up and the durable alarm in step with the core's timers.
    fn schedule_timers(self: &Rc<Self>) {
        if self.destroyed.get() {
            return;
        }
        let (next, durable) = {
            let core = self.core.borrow();
            (core.poll_timeout(), core.durable_deadline())
        };
        if durable != self.alarm_asked.get() {
            self.alarm_asked.set(durable);
            match durable {
                Some(at) => self.set_alarm(at),
                None => self.clear_alarm(),
            }
        }
        let pending = self.wake.borrow().as_ref().map(|(at, _)| *at);
        match (next, pending) {
            (Some(at), Some(wake_at)) if wake_at <= at => {}
            (Some(at), _) => self.wake_at(at),
            (None, Some(_)) => {
                if let Some((_, handle)) = self.wake.borrow_mut().take() {
                    handle.abort();
                }
            }
            (None, None) => {}
        }
    }

    fn execute(self: &Rc<Self>, effects: Vec<Effect>) {
        if self.destroyed.get() {
            // Erased: nothing is written, sent or started again.
            return;
        }
        let refused = carry_out(effects, |step| match step {
            Step::Write(ops) => self.store.apply_all(ops).map_err(|(ops, e)| {
                self.log_line(
                    crate::log::LogLevel::Error,
                    &format!("storage write failed: {e}"),
                );
                (ops, e.to_string())
            }),
            Step::Do(effect) => {
                self.carry_out_one(effect);
                Ok(())
            }
        });
        if let Some((ops, error)) = refused {
            self.dispatch(Event::StoreWriteFailed { ops, error });
        }
        self.settled_waiters.wake(&self.core);
    }

    /// Any effect but a write (see `core::carry_out`).
    fn carry_out_one(self: &Rc<Self>, effect: Effect) {
        match effect {
            Effect::Send { to, frame } => self.send_frame(&to, &frame),
            Effect::SendTranscript { to, frame } => self.send_transcript(&to, &frame),
            // `carry_out` hands writes over as `Step::Write`; one arriving
            // here all the same goes through it.
            Effect::Store(op) => self.execute(vec![Effect::Store(op)]),
            Effect::CallModel { call, request } => {
                let host = self.clone();
                spawn_local(async move { host.run_model(call, *request).await });
            }
            Effect::AuthorAlarm => {
                let run = (self.on_author_alarm)(self.handle());
                spawn_local(self.child_call_scope(None).run(run));
            }
            Effect::RunSchedule {
                run,
                name,
                callback,
                payload,
            } => self.run_schedule(run, &name, &callback, payload),
            Effect::AbortModel { call } => {
                if let Some(controller) = self.model_calls.borrow_mut().remove(&call) {
                    controller.abort();
                }
            }
            Effect::RunTool {
                call,
                tool_call_id,
                tool_name,
                input,
            } => {
                let host = self.clone();
                let tool = self.tools.get(&tool_name).cloned();
                let mcp_tool = self.mcp_tool(&tool_name).filter(|_| tool.is_none());
                let signal = self.tool_runs.start(call);
                let ctx = ToolContext {
                    tool_call_id: tool_call_id.clone(),
                    abort: signal.clone(),
                    messages: self.core.borrow().turn_messages(),
                    env: Some(self.env.clone()),
                    agent: Some(self.handle()),
                };
                let turn = self.core.borrow().running_request_id();
                let scope = self.child_call_scope(turn.as_deref());
                spawn_local(scope.run(async move {
                    let result = match (tool, mcp_tool) {
                        (Some(tool), _) => tool.call_with(input, ctx).await,
                        (None, Some(target)) => host.call_mcp_tool(target, input, signal).await,
                        (None, None) => Err(format!("Tool '{tool_name}' is not available.")),
                    };
                    host.tool_runs.end(call);
                    host.dispatch(Event::ToolDone {
                        call,
                        tool_call_id,
                        result,
                    });
                }));
            }
            Effect::CallRemoteTool {
                call,
                conn,
                tool_call_id,
                tool_name,
                input,
            } => {
                let frame = rpc_tool_call(call, &tool_call_id, &tool_name, &input);
                if self.rpc.deliver(&conn, &frame) {
                    return;
                }
                if let Some(ws) = self.sockets.borrow().get(&conn) {
                    let _ = ws.send_with_str(&frame);
                }
            }
            Effect::AbortTools { calls } => self.tool_runs.abort(calls),
            Effect::PrepareTurn { turn, context } => {
                let host = self.clone();
                let before_turn = self.hooks.before_turn.clone();
                let agent = self.handle();
                #[cfg(feature = "debug-routes")]
                let echoed = (self.debug.tools
                    && (context.body.contains_key("echoBody")
                        || context.body.contains_key("structuredOutput")))
                .then(|| context.body.clone());
                spawn_local(async move {
                    host.mcp_ready_for_turn().await;
                    #[allow(unused_mut)]
                    let mut config = before_turn(context, agent).await;
                    #[cfg(feature = "debug-routes")]
                    if let Some(body) = echoed {
                        debug_author::echo_body(&body, &mut config);
                    }
                    host.dispatch(Event::TurnPrepared {
                        turn,
                        config: Box::new(config),
                    });
                });
            }
            Effect::DecideToolCall { call, tool } => {
                let host = self.clone();
                #[cfg(feature = "debug-routes")]
                let listed = (self.debug.tools).then(|| (tool.clone(), self.handle()));
                let decide = (self.hooks.before_tool_call)(tool, self.handle());
                spawn_local(async move {
                    #[allow(unused_mut)]
                    let mut decision = decide.await;
                    #[cfg(feature = "debug-routes")]
                    if let (crate::core::ToolCallDecision::Allow, Some((tool, agent))) =
                        (&decision, listed)
                    {
                        if let Some(blocked) = debug_author::decide(&tool, &agent).await {
                            decision = blocked;
                        }
                    }
                    host.dispatch(Event::ToolCallDecided { call, decision });
                });
            }
            Effect::RewriteToolResult { call, tool, result } => {
                let host = self.clone();
                #[cfg(feature = "debug-routes")]
                let listed =
                    (self.debug.tools).then(|| (tool.clone(), (*result).clone(), self.handle()));
                let rewrite = (self.hooks.after_tool_call)((tool, *result), self.handle());
                spawn_local(async move {
                    #[allow(unused_mut)]
                    let mut result = rewrite.await;
                    #[cfg(feature = "debug-routes")]
                    if let Some((tool, given, agent)) = listed {
                        if result == given {
                            if let Some(replaced) = debug_author::rewrite(&tool, &agent).await {
                                result = replaced;
                            }
                        }
                    }
                    host.dispatch(Event::ToolResultRewritten { call, result });
                });
            }
            Effect::DecideChatError { call, error } => {
                let host = self.clone();
                #[cfg(feature = "debug-routes")]
                let listed = (self.debug.tools).then(|| self.handle());
                let decide = (self.hooks.on_chat_error)(error, self.handle());
                spawn_local(async move {
                    #[allow(unused_mut)]
                    let mut disposition = decide.await;
                    #[cfg(feature = "debug-routes")]
                    if let (crate::core::ErrorDisposition::Fail, Some(agent)) =
                        (disposition, listed)
                    {
                        if let Some(retry) = debug_author::retry_error(&agent).await {
                            disposition = retry;
                        }
                    }
                    host.dispatch(Event::ChatErrorDecided { call, disposition });
                });
            }
            Effect::Summarize { call, request } => {
                let host = self.clone();
                let summarize = (self.hooks.summarize)(request, self.handle());
                spawn_local(async move {
                    let summary = summarize.await;
                    host.dispatch(Event::Summarized { call, summary });
                });
            }
            Effect::TurnEnded(response) => {
                self.rpc.turn_ended(&response);
                // Owed until the hook returns (an eviction meanwhile sends
                // it again after the restart).
                let host = self.clone();
                let on_chat_response = self.hooks.on_chat_response.clone();
                let request_id = response.request_id.clone();
                #[cfg(feature = "debug-routes")]
                let recorded = (self.debug.tools).then(|| (response.clone(), self.handle()));
                let run = on_chat_response(response, self.handle());
                spawn_local(async move {
                    run.await;
                    #[cfg(feature = "debug-routes")]
                    if let Some((response, agent)) = recorded {
                        debug_author::record_response(&response, &agent).await;
                    }
                    host.dispatch(Event::ChatResponseDelivered { request_id });
                });
            }
            Effect::StepEnded(report) => {
                let on_step_end = self.hooks.on_step_end.clone();
                spawn_local(on_step_end(report, self.handle()));
            }
            Effect::Author(call) => self.run_author_call(call),
        }
    }

    /// A schedule is due: its callback runs with its payload (a callback
    /// the definition does not register, or a payload it cannot read, is
    /// logged).
    /// Runs a schedule's callback and reports how it ended (the core keeps
    /// the run owed until then, so a run cut by an eviction starts again).
    fn run_schedule(
        self: &Rc<Self>,
        run: String,
        name: &str,
        callback: &str,
        payload: serde_json::Value,
    ) {
        let started = match self.schedule_callbacks.get(callback) {
            Some(registered) => registered.start(payload, self.handle()),
            None => Err(format!("no schedule callback `{callback}` is registered")),
        };
        let running = match started {
            Ok(running) => running,
            Err(e) => {
                self.log_line(
                    crate::log::LogLevel::Error,
                    &format!("schedule `{name}` could not run: {e}"),
                );
                let outcome = ScheduleOutcome::Unrunnable(e);
                self.dispatch(Event::ScheduleRan { run, outcome });
                return;
            }
        };
        let host = self.clone();
        spawn_local(self.child_call_scope(None).run(async move {
            let outcome = match running.await {
                Ok(()) => ScheduleOutcome::Done,
                Err(e) => ScheduleOutcome::Failed(e),
            };
            host.dispatch(Event::ScheduleRan { run, outcome });
        }));
    }

    /// The durable alarm outlives the isolate: a cut turn is woken by it.
    fn set_alarm(&self, at_ms: u64) {
        let storage = self.state.storage();
        let offset = at_ms.saturating_sub(now_ms()).max(1) as i64;
        spawn_local(async move {
            if let Err(e) = storage.set_alarm(offset).await {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("could not set the alarm: {e}"),
                );
            }
        });
    }

    fn clear_alarm(&self) {
        let storage = self.state.storage();
        spawn_local(async move {
            let _ = storage.delete_alarm().await;
        });
    }

    pub fn on_alarm(self: &Rc<Self>) {
        // The platform's alarm is spent once it fires: the next durable
        // deadline is asked for again even if it did not move.
        self.alarm_asked.set(None);
        self.dispatch(Event::Timer(Timer::Heartbeat));
    }

    /// Schedules the wake-up at `at_ms`, replacing a pending one.
    fn wake_at(self: &Rc<Self>, at_ms: u64) {
        let wait = at_ms.saturating_sub(now_ms());
        let (handle, registration) = AbortHandle::new_pair();
        if let Some((_, previous)) = self.wake.borrow_mut().replace((at_ms, handle)) {
            previous.abort();
        }
        let delay = Abortable::new(Delay::from(Duration::from_millis(wait)), registration);
        let host = Rc::downgrade(self);
        spawn_local(async move {
            // A replacement aborts this wait (checked before the wake-up is
            // seen), so an `Ok` means this is still the pending wake-up.
            if delay.await.is_err() {
                return;
            }
            if let Some(host) = host.upgrade() {
                host.wake.borrow_mut().take();
                host.on_wake();
            }
        });
    }
}

/// The agent's own code calling in (see `handle.rs`).
impl CoreHost for AgentHost {
    fn core(&self) -> &RefCell<Core> {
        &self.core
    }

    fn carry_out_effects(self: Rc<Self>) {
        let effects = self.core.borrow_mut().take_effects();
        self.execute(effects);
        self.schedule_timers();
    }

    fn env(&self) -> &Env {
        &self.env
    }

    fn now_ms(&self) -> u64 {
        now_ms()
    }

    fn add_mcp_server(self: Rc<Self>, server: crate::mcp::McpServer) -> Result<String, String> {
        AgentHost::add_mcp_server(&self, server)
    }

    fn remove_mcp_server(self: Rc<Self>, name: &str) -> Result<bool, String> {
        AgentHost::remove_mcp_server(&self, name)
    }

    fn mcp_servers(&self) -> Vec<crate::mcp::ServerInfo> {
        self.mcp_server_list()
    }

    fn author_storage(&self) -> super::author_storage::AuthorStorage {
        let sql = super::author_storage_sql::SqlAuthorStore::new(self.state.storage().sql());
        super::author_storage::AuthorStorage::new(Rc::new(sql))
    }

    fn generate_text(
        self: Rc<Self>,
        request: crate::model::ModelRequest,
    ) -> futures::future::LocalBoxFuture<'static, Result<String, crate::model::ModelFailure>> {
        Box::pin(AgentHost::generate_text(self, request))
    }

    fn settled(&self, id: &str) -> futures::future::LocalBoxFuture<'static, ()> {
        self.settled_waiters.wait(id)
    }

    fn connections(&self, tag: Option<&str>) -> Vec<Connection> {
        self.open_connections(tag)
    }

    fn destroy(self: Rc<Self>) -> futures::future::LocalBoxFuture<'static, Result<(), String>> {
        Box::pin(AgentHost::destroy(self))
    }

    fn search_history(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<crate::core::HistoryHit>, String> {
        self.store.search(query, limit).map_err(|e| e.to_string())
    }
}

fn stored_name(store: &SqlStore) -> String {
    store
        .config_value(crate::core::ConfigKey::InstanceName)
        .ok()
        .flatten()
        .unwrap_or_else(|| "default".to_string())
}
