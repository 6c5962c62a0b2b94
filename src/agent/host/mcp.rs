//! The host's side of the agent's MCP client: the servers (declared by the
//! definition, added and removed by the agent's code and stored), each
//! one's session and the connect in flight; connecting when first needed
//! (a request `authorize` let in, a turn, the agent's code adding or
//! removing a server, a sign-in coming back; never for a request refused)
//! and when a server is added (again after an eviction, from the stored rows), the
//! servers' tools and state handed to the core after every change, a
//! model's call sent to its server, and failed servers tried again when a
//! turn starts. The protocol itself is `crate::mcp`, sans-I/O.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use serde_json::Value;
use wasm_bindgen_futures::spawn_local;
use worker::Delay;

use crate::agent::tools::context::AbortSignal;
use crate::agent::tools::context::AbortSignal as CallAbort;
use crate::core::quoted;
use crate::log::LogLevel;
use crate::mcp::connect::MAX_TOOL_PAGES;
use crate::mcp::legacy_sse::should_fall_back;
use crate::mcp::servers::ServerInfo;
use crate::mcp::{
    tool_outcome, Connect, ConnectStep, McpError, McpRequest, McpServer, ServerRecord, ServerState,
    Servers, Session,
};
use crate::outbound::OutboundHosts;

use super::mcp_http::exchange;
use super::mcp_oauth::AfterUnauthorized;
use super::mcp_sse::SseLink;
use super::{now_ms, AgentHost};

/// The deadline of each request of a handshake.
const CONNECT_TIMEOUT_MS: u64 = 10_000;
/// The deadline of a call when its server sets none.
const CALL_TIMEOUT_MS: u64 = 60_000;
/// How long a starting turn (or a call) waits for servers still connecting.
const WAIT_FOR_CONNECTING_MS: u64 = 5_000;
/// A failed server is tried again by the first turn this long after it failed.
const RETRY_FAILED_AFTER_MS: u64 = 10_000;

/// The servers and their sessions (see the module header).
pub(super) struct McpClients {
    state: RefCell<McpState>,
    /// The hosts every fetch for the servers may reach (`crate::outbound`).
    hosts: OutboundHosts,
}

#[derive(Default)]
struct McpState {
    servers: Servers,
    sessions: HashMap<String, Session>,
    /// The generation of the connect in flight for a server (a newer
    /// connect, or the server's removal, makes an older one's outcome moot).
    connecting: HashMap<String, u64>,
    next_generation: u64,
    failed_at: HashMap<String, u64>,
    /// The event streams of servers on the older HTTP+SSE transport.
    links: HashMap<String, Rc<SseLink>>,
    /// The servers whose OAuth tokens are being refreshed.
    refreshing: HashSet<String>,
    /// The agent's own URL, the base of its OAuth callback.
    agent_url: Option<String>,
    /// The definition's servers until the servers are first needed (then
    /// `None`: they and the stored ones are added and connected).
    unstarted: Option<Vec<McpServer>>,
}

impl McpClients {
    /// No server yet; `own_tools` are names no MCP tool may take, `hosts`
    /// the hosts a server (and its sign-in) may be on.
    pub(super) fn new(
        own_tools: impl IntoIterator<Item = String>,
        hosts: OutboundHosts,
        declared: Vec<McpServer>,
    ) -> McpClients {
        McpClients {
            state: RefCell::new(McpState {
                servers: Servers::new(own_tools, hosts.clone()),
                unstarted: Some(declared),
                ..McpState::default()
            }),
            hosts,
        }
    }

    /// The hosts every fetch for the servers may reach.
    pub(super) fn hosts(&self) -> &OutboundHosts {
        &self.hosts
    }

    pub(super) fn set_agent_url(&self, url: String) {
        self.state.borrow_mut().agent_url = Some(url);
    }

    pub(super) fn agent_url(&self) -> Option<String> {
        self.state.borrow().agent_url.clone()
    }

    pub(super) fn is_refreshing(&self, id: &str) -> bool {
        self.state.borrow().refreshing.contains(id)
    }

    pub(super) fn set_refreshing(&self, id: &str, on: bool) {
        let mut state = self.state.borrow_mut();
        if on {
            state.refreshing.insert(id.to_string());
        } else {
            state.refreshing.remove(id);
        }
    }

    pub(super) fn server(&self, id: &str) -> Option<McpServer> {
        self.state.borrow().servers.server(id).cloned()
    }
}

impl AgentHost {
    /// The first time the servers are needed: the definition's servers and
    /// the stored ones, each connected. Later calls do nothing.
    pub(super) fn ensure_mcp(self: &Rc<Self>) {
        let unstarted = self.mcp.state.borrow_mut().unstarted.take();
        if let Some(declared) = unstarted {
            self.start_mcp(declared);
        }
    }

    fn start_mcp(self: &Rc<Self>, declared: Vec<McpServer>) {
        let mut ids = Vec::new();
        for server in declared {
            let name = server.name.clone();
            match self.mcp.state.borrow_mut().servers.add(server, true) {
                Ok(id) => ids.push(id),
                Err(e) => self.log_line(
                    LogLevel::Error,
                    &format!("mcp: server '{name}' refused: {}", quoted(&e.to_string())),
                ),
            }
        }
        let rows = self.store.mcp_server_rows().unwrap_or_else(|e| {
            self.log_line(
                LogLevel::Error,
                &format!("mcp: stored servers unreadable: {e}"),
            );
            Vec::new()
        });
        for (id, json) in rows {
            let added = ServerRecord::read(&json)
                .map_err(|e| e.to_string())
                .and_then(|r| {
                    self.mcp
                        .state
                        .borrow_mut()
                        .servers
                        .add(r.server, false)
                        .map_err(|e| e.to_string())
                });
            match added {
                Ok(id) => ids.push(id),
                Err(e) => self.log_line(
                    LogLevel::Error,
                    &format!("mcp: stored server '{id}' skipped: {}", quoted(&e)),
                ),
            }
        }
        if ids.is_empty() {
            return;
        }
        self.publish_mcp();
        for id in ids {
            self.connect_mcp(id);
        }
    }

    /// Adds (or updates) a server for good: stored, connected, announced.
    pub(crate) fn add_mcp_server(self: &Rc<Self>, server: McpServer) -> Result<String, String> {
        self.ensure_mcp();
        let record =
            serde_json::to_string(&ServerRecord::of(&server)).map_err(|e| e.to_string())?;
        let id = self
            .mcp
            .state
            .borrow_mut()
            .servers
            .add(server, false)
            .map_err(|e| e.to_string())?;
        if let Err(e) = self.store.put_mcp_server(&id, &record) {
            let _ = self.mcp.state.borrow_mut().servers.remove(&id);
            return Err(format!("the MCP server could not be stored: {e}"));
        }
        self.publish_mcp();
        self.connect_mcp(id.clone());
        Ok(id)
    }

    /// Removes a server the agent's code added: forgotten, its session ended.
    pub(crate) fn remove_mcp_server(self: &Rc<Self>, name: &str) -> Result<bool, String> {
        self.ensure_mcp();
        let (id, session) = {
            let mut state = self.mcp.state.borrow_mut();
            let Some(id) = state.servers.id_of(name) else {
                return Ok(false);
            };
            state.servers.remove(&id).map_err(|e| e.to_string())?;
            state.connecting.remove(&id);
            state.failed_at.remove(&id);
            if let Some(link) = state.links.remove(&id) {
                link.close();
            }
            (id.clone(), state.sessions.remove(&id))
        };
        self.store
            .delete_mcp_server(&id)
            .map_err(|e| format!("the MCP server could not be forgotten: {e}"))?;
        self.forget_mcp_credentials(&id);
        if let Some(end) = session.and_then(|s| s.end()) {
            let hosts = self.mcp.hosts().clone();
            spawn_local(async move {
                let _ = exchange(&end, &hosts, CONNECT_TIMEOUT_MS, None).await;
            });
        }
        self.publish_mcp();
        Ok(true)
    }

    /// The servers and where each stands.
    pub(crate) fn mcp_server_list(&self) -> Vec<ServerInfo> {
        self.mcp.state.borrow().servers.list()
    }

    /// The server and tool name behind the offered tool `name`, if it is an MCP tool.
    pub(super) fn mcp_tool(&self, name: &str) -> Option<(String, String)> {
        self.mcp.state.borrow().servers.resolve(name)
    }

    /// Before a turn's `before_turn`: failed servers are tried again (at
    /// most every `RETRY_FAILED_AFTER_MS`), and servers still connecting
    /// are waited for a little, so the turn is offered their tools.
    pub(super) async fn mcp_ready_for_turn(self: &Rc<Self>) {
        self.ensure_mcp();
        let now = now_ms();
        let retry: Vec<String> = {
            let state = self.mcp.state.borrow();
            state
                .servers
                .ids()
                .into_iter()
                .filter(|id| state.servers.state(id) == Some(ServerState::Failed))
                .filter(|id| !state.connecting.contains_key(id))
                .filter(|id| {
                    state
                        .failed_at
                        .get(id)
                        .is_none_or(|at| now.saturating_sub(*at) >= RETRY_FAILED_AFTER_MS)
                })
                .collect()
        };
        for id in retry {
            self.connect_mcp(id);
        }
        self.wait_for_connecting(None).await;
    }

    /// Waits (at most `WAIT_FOR_CONNECTING_MS`) while server `only` (or any
    /// server) is connecting.
    async fn wait_for_connecting(&self, only: Option<&str>) {
        let until = now_ms().saturating_add(WAIT_FOR_CONNECTING_MS);
        loop {
            let busy = {
                let state = self.mcp.state.borrow();
                match only {
                    Some(id) => state.connecting.contains_key(id),
                    None => !state.connecting.is_empty(),
                }
            };
            if !busy || now_ms() >= until {
                return;
            }
            Delay::from(Duration::from_millis(25)).await;
        }
    }

    /// Connects server `id` again (after a sign-in).
    pub(super) fn reconnect_mcp(self: &Rc<Self>, id: &str) {
        self.connect_mcp(id.to_string());
    }

    /// A sign-in to server `id` failed, or its URL is refused (`error` says why).
    pub(super) fn mcp_sign_in_failed(self: &Rc<Self>, id: &str, error: &str) {
        {
            let mut state = self.mcp.state.borrow_mut();
            state.servers.set_failed(id, error);
            state.failed_at.insert(id.to_string(), now_ms());
        }
        self.log_line(
            LogLevel::Warn,
            &format!("mcp: server '{id}': {}", quoted(error)),
        );
        self.publish_mcp();
    }

    /// Lists server `id`'s tools again on its open session (it said they
    /// changed); a listing that fails connects the server again instead.
    fn relist_mcp(self: &Rc<Self>, id: String) {
        let host = self.clone();
        spawn_local(async move { host.run_relist(id).await });
    }

    async fn run_relist(self: Rc<Self>, id: String) {
        let forked = {
            let mut state = self.mcp.state.borrow_mut();
            let link = state.links.get(&id).cloned();
            state
                .sessions
                .get_mut(&id)
                .map(|s| (s.fork(MAX_TOOL_PAGES as u64), link))
        };
        let Some((mut session, link)) = forked else {
            return;
        };
        let (mut listing, mut request) = Connect::relist(&mut session);
        let outcome = loop {
            let reply = send(
                link.as_ref(),
                self.mcp.hosts(),
                &request,
                CONNECT_TIMEOUT_MS,
                None,
            )
            .await;
            match listing.on_reply(&mut session, reply) {
                ConnectStep::Send(next) => request = next,
                ConnectStep::Done(outcome) => break outcome,
            }
        };
        match outcome {
            Ok(listed) => {
                {
                    let mut state = self.mcp.state.borrow_mut();
                    if state.connecting.contains_key(&id) || !state.sessions.contains_key(&id) {
                        return;
                    }
                    state.servers.set_tools(&id, listed.tools, listed.left_out);
                }
                self.log_line(
                    LogLevel::Info,
                    &format!("mcp: server '{id}' listed its tools again"),
                );
                self.publish_mcp();
            }
            Err(e) => {
                self.log_line(
                    LogLevel::Warn,
                    &format!(
                        "mcp: server '{id}' could not list its tools again: {}",
                        quoted(&e.to_string())
                    ),
                );
                self.connect_mcp(id);
            }
        }
    }

    fn connect_mcp(self: &Rc<Self>, id: String) {
        let host = self.clone();
        spawn_local(async move { host.run_connect(id).await });
    }

    /// One handshake with server `id`; its outcome is the server's new state.
    async fn run_connect(self: Rc<Self>, id: String) {
        let refused = {
            let state = self.mcp.state.borrow();
            let url = state.servers.server(&id).map(|s| s.url.clone());
            url.and_then(|url| self.mcp.hosts.check(&url, "MCP server URL").err())
        };
        if let Some(why) = refused {
            // A declared server on a host the policy refuses: never fetched.
            self.mcp_sign_in_failed(&id, &why);
            return;
        }
        let started = {
            let mut state = self.mcp.state.borrow_mut();
            let Some(server) = state.servers.server(&id).cloned() else {
                return;
            };
            state.next_generation += 1;
            let generation = state.next_generation;
            state.connecting.insert(id.clone(), generation);
            state.sessions.remove(&id);
            if let Some(link) = state.links.remove(&id) {
                link.close();
            }
            state.servers.set_connecting(&id);
            (generation, server)
        };
        let (generation, server) = started;
        self.publish_mcp();
        let mut session = Session::new(&server.url, &server.headers);
        let mut may_refresh = true;
        let mut link = None;
        let mut outcome = loop {
            if let Some(token) = self.mcp_bearer(&id, &server).await {
                session.set_bearer(&token);
            }
            let outcome = handshake(&mut session, self.mcp.hosts(), None).await;
            let Err(McpError::Unauthorized { challenge, .. }) = &outcome else {
                break outcome;
            };
            if server.has_authorization() {
                break outcome;
            }
            match self
                .mcp_unauthorized(&id, &server, challenge.clone(), may_refresh)
                .await
            {
                AfterUnauthorized::Retry => may_refresh = false,
                AfterUnauthorized::Failed(e) => break Err(e),
                AfterUnauthorized::SignIn { url, issuer } => {
                    {
                        let mut state = self.mcp.state.borrow_mut();
                        if state.connecting.get(&id) != Some(&generation) {
                            return;
                        }
                        state.connecting.remove(&id);
                        state.servers.set_authenticating(&id, &url, &issuer);
                    }
                    self.publish_mcp();
                    return;
                }
            }
        };
        if matches!(&outcome, Err(e) if should_fall_back(e)) {
            // A server that speaks only the older HTTP+SSE transport?
            let bearer = self.mcp_bearer(&id, &server).await;
            let mut headers = server.headers.clone();
            if let Some(token) = &bearer {
                headers.push(("authorization".into(), format!("Bearer {token}")));
            }
            if let Ok((opened, post_url)) =
                SseLink::open(&server.url, &headers, self.mcp.hosts(), CONNECT_TIMEOUT_MS).await
            {
                let mut legacy = Session::new(&post_url, &server.headers);
                if let Some(token) = &bearer {
                    legacy.set_bearer(token);
                }
                outcome = handshake(&mut legacy, self.mcp.hosts(), Some(&opened)).await;
                session = legacy;
                link = Some(opened);
            }
        }
        {
            let mut state = self.mcp.state.borrow_mut();
            if state.connecting.get(&id) != Some(&generation) {
                if let Some(link) = link {
                    link.close();
                }
                return;
            }
            state.connecting.remove(&id);
            match outcome {
                Ok(connected) => {
                    self.log_line(
                        LogLevel::Info,
                        &format!(
                            "mcp: server '{id}' ready with {} tools",
                            connected.tools.len()
                        ),
                    );
                    if let Some(note) = state.servers.set_ready(&id, connected) {
                        self.log_line(
                            LogLevel::Warn,
                            &format!("mcp: server '{id}': {}", quoted(&note)),
                        );
                    }
                    state.sessions.insert(id.clone(), session);
                    if let Some(link) = link {
                        let (host, server) = (Rc::downgrade(&self), id.clone());
                        link.on_end(move |why| {
                            if let Some(host) = host.upgrade() {
                                host.mark_mcp_failed(&server, &why);
                            }
                        });
                        state.links.insert(id.clone(), link);
                    }
                    state.failed_at.remove(&id);
                }
                Err(e) => {
                    if let Some(link) = link {
                        link.close();
                    }
                    self.log_line(
                        LogLevel::Warn,
                        &format!("mcp: server '{id}' failed: {}", quoted(&e.to_string())),
                    );
                    state.servers.set_failed(&id, &e.to_string());
                    state.failed_at.insert(id.clone(), now_ms());
                }
            }
        }
        self.publish_mcp();
    }

    /// A model's call to the server's tool `tool` (offered under another
    /// name). A session the server ended is opened again once; a server
    /// that cannot be reached is marked failed. Every failure is a tool
    /// error the model reads.
    pub(super) async fn call_mcp_tool(
        self: &Rc<Self>,
        (id, tool): (String, String),
        input: Value,
        abort: AbortSignal,
    ) -> Result<Value, String> {
        let name = self
            .mcp
            .state
            .borrow()
            .servers
            .server(&id)
            .map(|s| s.name.clone())
            .unwrap_or_else(|| id.clone());
        let server = self.mcp.server(&id);
        for attempt in 0..2 {
            self.wait_for_connecting(Some(&id)).await;
            if let Some(server) = &server {
                if let Some(token) = self.mcp_bearer(&id, server).await {
                    if let Some(session) = self.mcp.state.borrow_mut().sessions.get_mut(&id) {
                        session.set_bearer(&token);
                    }
                }
            }
            let prepared = {
                let mut state = self.mcp.state.borrow_mut();
                let timeout = state
                    .servers
                    .server(&id)
                    .and_then(|s| s.timeout_ms)
                    .unwrap_or(CALL_TIMEOUT_MS);
                state.sessions.get_mut(&id).map(|session| {
                    (
                        session.call_tool(&tool, input.clone()),
                        session.clone(),
                        timeout,
                    )
                })
            };
            let Some((request, mut reader, timeout)) = prepared else {
                return Err(format!("The MCP server '{name}' is not connected."));
            };
            let link = self.mcp.state.borrow().links.get(&id).cloned();
            let sent = send(
                link.as_ref(),
                self.mcp.hosts(),
                &request,
                timeout,
                Some(abort.clone()),
            )
            .await;
            let read = match sent {
                Ok(reply) => reader.read(&request, &reply),
                Err(e) => Err(e),
            };
            match read {
                Ok(result) => {
                    let stream_said = link.as_ref().is_some_and(|l| l.take_tools_changed());
                    if reader.take_tools_changed() || stream_said {
                        self.relist_mcp(id.clone());
                    }
                    return tool_outcome(&result);
                }
                Err(McpError::SessionExpired) if attempt == 0 => {
                    self.clone().run_connect(id.clone()).await;
                }
                Err(McpError::Unauthorized { .. })
                    if server.as_ref().is_some_and(|s| !s.has_authorization()) =>
                {
                    let refreshed = match (&server, attempt) {
                        (Some(server), 0) => self.refresh_mcp_tokens(&id, server).await.is_ok(),
                        _ => false,
                    };
                    if !refreshed {
                        // A new sign-in: the server shows where in its state.
                        self.connect_mcp(id.clone());
                        return Err(format!("The MCP server '{name}' needs a new sign-in."));
                    }
                }
                Err(e) if e.is_transport() => {
                    self.mark_mcp_failed(&id, &e);
                    return Err(format!("The MCP server '{name}' failed: {e}"));
                }
                Err(e) => return Err(format!("The MCP tool '{tool}' of '{name}' failed: {e}")),
            }
        }
        Err(format!("The MCP server '{name}' ended the session again."))
    }

    fn mark_mcp_failed(self: &Rc<Self>, id: &str, error: &McpError) {
        {
            let mut state = self.mcp.state.borrow_mut();
            if state.connecting.contains_key(id) {
                return;
            }
            state.sessions.remove(id);
            if let Some(link) = state.links.remove(id) {
                link.close();
            }
            state.servers.set_failed(id, &error.to_string());
            state.failed_at.insert(id.to_string(), now_ms());
        }
        self.log_line(
            LogLevel::Warn,
            &format!("mcp: server '{id}' failed: {}", quoted(&error.to_string())),
        );
        self.publish_mcp();
    }

    /// Hands the servers' tools and frame to the core (which tells the tabs
    /// when the frame changed).
    fn publish_mcp(self: &Rc<Self>) {
        let (frame, tools) = {
            let state = self.mcp.state.borrow();
            (state.servers.frame(), state.servers.tool_specs())
        };
        let effects = {
            let mut core = self.core.borrow_mut();
            core.set_mcp(frame, tools);
            core.take_effects()
        };
        self.execute(effects);
        self.schedule_timers();
    }
}

/// `initialize`, `initialized` and the tool listing on `session`.
async fn handshake(
    session: &mut Session,
    hosts: &OutboundHosts,
    link: Option<&Rc<SseLink>>,
) -> Result<crate::mcp::Connected, McpError> {
    let (mut connect, mut request) = Connect::start(session);
    loop {
        let reply = send(link, hosts, &request, CONNECT_TIMEOUT_MS, None).await;
        match connect.on_reply(session, reply) {
            ConnectStep::Send(next) => request = next,
            ConnectStep::Done(outcome) => return outcome,
        }
    }
}

/// One exchange over the server's transport: its event stream when it has
/// one (the older HTTP+SSE transport), a plain POST otherwise.
async fn send(
    link: Option<&Rc<SseLink>>,
    hosts: &OutboundHosts,
    request: &McpRequest,
    timeout_ms: u64,
    abort: Option<CallAbort>,
) -> Result<crate::mcp::McpReply, McpError> {
    match link {
        Some(link) => link.send(request, timeout_ms, abort).await,
        None => exchange(request, hosts, timeout_ms, abort).await,
    }
}
