//! The servers an agent is connected to, by id: each one's description,
//! whether the definition declared it or the agent's code added it, its
//! state (connecting, ready, failed with a reason), what its handshake
//! learnt, and the names its tools are offered under. From it come the
//! tool specs the core offers the model, the server and tool a model's call
//! names, and the `cf_agent_mcp_servers` frame tabs see. The tools of all
//! servers together stay within `tool_caps::MAX_TOOL_SPECS_BYTES` (a server
//! that becomes ready gets the room the others leave); a ready server's
//! `error` names the tools left out. A server the agent's code adds is
//! refused (never stored, never fetched) when its URL is one the outbound
//! host policy refuses or over its length, or past `MAX_SERVERS`.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::core::{ApprovalRule, ToolSpec};
use crate::outbound::OutboundHosts;
use crate::protocol::types::MCP_SERVERS;

use super::connect::Connected;
use super::jsonrpc::McpError;
use super::names::{server_id, ToolNames};
use super::record::McpServer;
use super::tool_caps::{self, LeftOut, MAX_TOOL_SPECS_BYTES};

/// The most MCP servers one agent connects to (declared and added).
pub const MAX_SERVERS: usize = 16;
/// The most characters of a server's `error` the tabs and the agent's code see.
pub const MAX_ERROR_CHARS: usize = 1000;

/// `text` cut to `MAX_ERROR_CHARS` characters (`…` marks the cut).
fn capped(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Where a server stands (the `state` the `agents` client knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerState {
    Connecting,
    /// Waiting for a person to sign in at `auth_url`.
    Authenticating,
    Ready,
    Failed,
}

/// One server and what is known of it.
#[derive(Debug, Clone)]
struct Entry {
    server: McpServer,
    declared: bool,
    state: ServerState,
    error: Option<String>,
    /// Where a person signs in while the state is `Authenticating`.
    auth_url: Option<String>,
    /// The host of the authorization server that issues the sign-in.
    auth_issuer: Option<String>,
    capabilities: Option<Value>,
    instructions: Option<String>,
    /// The server's tools as it listed them, within the caps.
    tools: Vec<Value>,
    /// The JSON bytes of `tools`.
    tool_bytes: usize,
    /// The name each tool is offered under, in the order of `tools`.
    offered: Vec<String>,
}

/// A server as the agent's code sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerInfo {
    pub id: String,
    pub name: String,
    pub url: String,
    pub state: ServerState,
    pub error: Option<String>,
    /// Where a person signs in, while the server waits for that.
    pub auth_url: Option<String>,
    /// The host of the authorization server that issues that sign-in.
    pub auth_issuer: Option<String>,
    /// Declared by the definition (not removable at run time).
    pub declared: bool,
    /// The names its tools are offered to the model under.
    pub tools: Vec<String>,
}

/// The servers (see the module header).
#[derive(Debug, Default)]
pub struct Servers {
    entries: BTreeMap<String, Entry>,
    /// The agent's own tool names, which no MCP tool may take.
    own_tools: HashSet<String>,
    /// The hosts a server the agent's code adds may be on.
    hosts: OutboundHosts,
}

impl Servers {
    pub fn new(own_tools: impl IntoIterator<Item = String>, hosts: OutboundHosts) -> Servers {
        Servers {
            entries: BTreeMap::new(),
            own_tools: own_tools.into_iter().collect(),
            hosts,
        }
    }

    /// Adds `server` (state connecting) and returns its id. A server of the
    /// same id and URL is updated in place (its headers and options); one
    /// with another URL is refused, as is a declared one changed at run time.
    /// One the agent's code adds is refused on a host the outbound policy
    /// refuses (a declared one is listed and fails when it is connected), and
    /// a new one past `MAX_SERVERS`.
    pub fn add(&mut self, server: McpServer, declared: bool) -> Result<String, McpError> {
        server.check().map_err(McpError::Malformed)?;
        if !declared {
            self.hosts
                .check(server.url.trim(), "MCP server URL")
                .map_err(McpError::Refused)?;
        }
        let id = server_id(&server.name)?;
        if !self.entries.contains_key(&id) && self.entries.len() >= MAX_SERVERS {
            return Err(McpError::Refused(format!(
                "an agent connects to at most {MAX_SERVERS} MCP servers"
            )));
        }
        if let Some(entry) = self.entries.get_mut(&id) {
            if entry.server.url != server.url {
                return Err(McpError::Malformed(format!(
                    "an MCP server named '{}' is already connected to {}",
                    entry.server.name, entry.server.url
                )));
            }
            if entry.declared && !declared {
                return Err(McpError::Malformed(format!(
                    "the MCP server '{}' is declared by the agent's definition",
                    entry.server.name
                )));
            }
            entry.server = server;
            entry.state = ServerState::Connecting;
            entry.error = None;
            entry.auth_url = None;
            entry.auth_issuer = None;
            return Ok(id);
        }
        self.entries.insert(
            id.clone(),
            Entry {
                server,
                declared,
                state: ServerState::Connecting,
                error: None,
                auth_url: None,
                auth_issuer: None,
                capabilities: None,
                instructions: None,
                tools: Vec::new(),
                tool_bytes: 0,
                offered: Vec::new(),
            },
        );
        Ok(id)
    }

    /// Removes the server named (or of id) `name`, if the agent's code added it.
    pub fn remove(&mut self, name: &str) -> Result<Option<McpServer>, McpError> {
        let Some(id) = self.id_of(name) else {
            return Ok(None);
        };
        if self.entries.get(&id).is_some_and(|e| e.declared) {
            return Err(McpError::Malformed(format!(
                "the MCP server '{name}' is declared by the agent's definition"
            )));
        }
        let removed = self.entries.remove(&id).map(|e| e.server);
        self.rename();
        Ok(removed)
    }

    /// The id of the server named (or of id) `name`.
    pub fn id_of(&self, name: &str) -> Option<String> {
        let id = server_id(name).ok()?;
        self.entries.contains_key(&id).then_some(id)
    }

    pub fn server(&self, id: &str) -> Option<&McpServer> {
        self.entries.get(id).map(|e| &e.server)
    }

    pub fn state(&self, id: &str) -> Option<ServerState> {
        self.entries.get(id).map(|e| e.state)
    }

    pub fn ids(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    pub fn set_connecting(&mut self, id: &str) {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.state = ServerState::Connecting;
            entry.error = None;
            entry.auth_url = None;
            entry.auth_issuer = None;
        }
    }

    /// The server waits for a person to sign in at `auth_url`, with the
    /// authorization server on host `issuer` (shown next to the URL, so a
    /// person sees who asks before following it).
    pub fn set_authenticating(&mut self, id: &str, auth_url: &str, issuer: &str) {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.state = ServerState::Authenticating;
            entry.error = None;
            entry.auth_url = Some(auth_url.to_string());
            entry.auth_issuer = Some(issuer.to_string());
        }
    }

    /// A handshake finished: the server's tools are offered from now on.
    /// Returns what its status says of the tools left out, if any.
    pub fn set_ready(&mut self, id: &str, connected: Connected) -> Option<String> {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.state = ServerState::Ready;
            entry.auth_url = None;
            entry.auth_issuer = None;
            entry.capabilities = Some(connected.capabilities);
            entry.instructions = connected.instructions;
        }
        self.set_tools(id, connected.tools, connected.left_out)
    }

    /// A ready server's tools (listed again), within the room the other
    /// ready servers' tools leave; those left out (`left_out`, and any over
    /// that room) are named in its status, which is returned.
    pub fn set_tools(
        &mut self,
        id: &str,
        tools: Vec<Value>,
        mut left_out: Vec<LeftOut>,
    ) -> Option<String> {
        let used: usize = self
            .entries
            .iter()
            .filter(|(other, e)| *other != id && e.state == ServerState::Ready)
            .map(|(_, e)| e.tool_bytes)
            .sum();
        let room = MAX_TOOL_SPECS_BYTES.saturating_sub(used);
        let (tools, bytes) = tool_caps::keep_within(tools, room, &mut left_out);
        let status = tool_caps::status(&left_out).map(|s| capped(&s));
        if let Some(entry) = self.entries.get_mut(id) {
            entry.tools = tools;
            entry.tool_bytes = bytes;
            entry.error = status.clone();
        }
        self.rename();
        status
    }

    /// The server failed (`error` says why, cut to `MAX_ERROR_CHARS`): its
    /// tools are withdrawn.
    pub fn set_failed(&mut self, id: &str, error: &str) {
        if let Some(entry) = self.entries.get_mut(id) {
            entry.state = ServerState::Failed;
            entry.error = Some(capped(error));
            entry.auth_url = None;
            entry.auth_issuer = None;
        }
    }

    /// Gives every tool its offered name, servers in id order.
    fn rename(&mut self) {
        let mut taken = self.own_tools.clone();
        for (id, entry) in self.entries.iter_mut() {
            let mut names = ToolNames::new(id, &mut taken);
            entry.offered = entry
                .tools
                .iter()
                .map(|t| names.name(t.get("name").and_then(Value::as_str).unwrap_or_default()))
                .collect();
        }
    }

    /// The tools of the ready servers, as the core offers them.
    pub fn tool_specs(&self) -> Vec<ToolSpec> {
        let mut out = Vec::new();
        for entry in self
            .entries
            .values()
            .filter(|e| e.state == ServerState::Ready)
        {
            for (tool, name) in entry.tools.iter().zip(&entry.offered) {
                let text = |key: &str| tool.get(key).and_then(Value::as_str);
                let description = text("description").or(text("title")).unwrap_or_default();
                let parameters = match tool.get("inputSchema") {
                    Some(schema @ Value::Object(_)) => schema.clone(),
                    _ => json!({"type": "object"}),
                };
                let mut spec = ToolSpec::new(name, description, parameters).not_overridable();
                if entry.server.needs_approval {
                    spec = spec.needs_approval(ApprovalRule::Always);
                }
                if let Some(ms) = entry.server.timeout_ms {
                    spec = spec.timeout_ms(ms);
                }
                out.push(spec);
            }
        }
        out
    }

    /// The server id and the server's own name of the tool offered as `offered`.
    pub fn resolve(&self, offered: &str) -> Option<(String, String)> {
        self.entries.iter().find_map(|(id, entry)| {
            let at = entry.offered.iter().position(|n| n == offered)?;
            let tool = entry.tools.get(at)?.get("name")?.as_str()?;
            Some((id.clone(), tool.to_string()))
        })
    }

    /// The servers as the agent's code sees them.
    pub fn list(&self) -> Vec<ServerInfo> {
        self.entries
            .iter()
            .map(|(id, e)| ServerInfo {
                id: id.clone(),
                name: e.server.name.clone(),
                url: e.server.url.clone(),
                state: e.state,
                error: e.error.clone(),
                auth_url: e.auth_url.clone(),
                auth_issuer: e.auth_issuer.clone(),
                declared: e.declared,
                tools: match e.state {
                    ServerState::Ready => e.offered.clone(),
                    _ => Vec::new(),
                },
            })
            .collect()
    }

    /// The `cf_agent_mcp_servers` frame: every server by id, and the ready
    /// servers' tools (each with its `serverId`).
    pub fn frame(&self) -> String {
        let mut servers = Map::new();
        let mut tools = Vec::new();
        for (id, e) in &self.entries {
            servers.insert(
                id.clone(),
                json!({
                    "name": e.server.name,
                    "server_url": shown_url(&e.server.url),
                    "auth_url": e.auth_url,
                    "auth_issuer": e.auth_issuer,
                    "state": e.state,
                    "capabilities": e.capabilities,
                    "instructions": e.instructions,
                    "error": e.error,
                }),
            );
            if e.state == ServerState::Ready {
                for tool in &e.tools {
                    let mut tool = tool.clone();
                    if let Some(map) = tool.as_object_mut() {
                        map.insert("serverId".into(), json!(id));
                    }
                    tools.push(tool);
                }
            }
        }
        json!({
            "type": MCP_SERVERS,
            "mcp": {"servers": servers, "tools": tools, "prompts": [], "resources": []},
        })
        .to_string()
    }
}

/// A server URL as the tabs are shown it: without userinfo, query or
/// fragment, which often carry a credential (`https://mcp.example/mcp`).
fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string()
        }
        Err(_) => String::new(),
    }
}

#[cfg(test)]
#[path = "servers_tests.rs"]
mod tests;
