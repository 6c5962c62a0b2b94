//! The host's side of the agent's MCP client: the servers (declared by the
//! definition, added and removed by the agent's code and stored), each
//! one's session and the connect in flight; connecting when first needed
//! (a request `authorize` let in, a turn, the agent's code adding or
//! removing a server, a sign-in coming back; never for a request refused)
//! and when a server is added (again after an eviction, from the stored
//! rows), the servers' tools and state handed to the core after every
//! change, and failed servers tried again when a turn starts. The handshake
//! is `mcp_connect.rs`, a model's call to a server's tool
//! `mcp_tool_calls.rs`; the protocol itself is `crate::mcp`, sans-I/O.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::time::Duration;

use wasm_bindgen_futures::spawn_local;
use worker::Delay;

use crate::core::quoted;
use crate::log::LogLevel;
use crate::mcp::servers::ServerInfo;
use crate::mcp::{McpServer, ServerRecord, ServerState, Servers, Session};
use crate::outbound::OutboundHosts;

use super::mcp_http::exchange;
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

#[path = "mcp_connect.rs"]
mod connect;

#[path = "mcp_tool_calls.rs"]
mod tool_calls;
