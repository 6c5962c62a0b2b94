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
mod tests {
    use super::*;

    fn connected(tools: &[&str]) -> Connected {
        Connected {
            capabilities: json!({"tools": {}}),
            instructions: Some("hi".into()),
            tools: tools
                .iter()
                .map(|n| json!({"name": n, "description": format!("does {n}"), "inputSchema": {"type":"object","properties":{"a":{"type":"number"}}}}))
                .collect(),
            left_out: Vec::new(),
        }
    }

    #[test]
    fn the_tools_of_all_servers_share_one_cap_and_the_status_says_what_was_left_out() {
        let mut servers = Servers::default();
        let big = |name: &str| json!({"name": name, "description": "d".repeat(30_000)});
        let first = servers
            .add(McpServer::new("A", "http://a/"), false)
            .unwrap();
        let tools: Vec<_> = (0..6).map(|i| big(&format!("a{i}"))).collect();
        assert_eq!(
            servers.set_ready(
                &first,
                Connected {
                    tools,
                    ..connected(&[])
                }
            ),
            None
        );
        let second = servers
            .add(McpServer::new("B", "http://b/"), false)
            .unwrap();
        let tools: Vec<_> = (0..6).map(|i| big(&format!("b{i}"))).collect();
        let status = servers
            .set_ready(
                &second,
                Connected {
                    tools,
                    ..connected(&[])
                },
            )
            .unwrap();
        assert!(status.starts_with("4 tools left out: 'b2'"), "{status}");
        let offered = servers.tool_specs();
        assert_eq!(offered.len(), 8, "six of A, two of B");
        let bytes: usize = servers.entries.values().map(|e| e.tool_bytes).sum();
        assert!(bytes <= MAX_TOOL_SPECS_BYTES);
        let b = servers.list().into_iter().find(|s| s.id == "b").unwrap();
        assert_eq!(b.state, ServerState::Ready);
        assert_eq!(b.error.as_deref(), Some(status.as_str()));
        assert_eq!(b.tools, ["mcp_b_b0", "mcp_b_b1"]);
    }

    #[test]
    fn only_ready_servers_offer_tools_under_their_prefix() {
        let mut servers = Servers::new(["get_weather".to_string()], OutboundHosts::default());
        let id = servers
            .add(McpServer::new("Demo", "http://m/mcp"), false)
            .unwrap();
        assert!(
            servers.tool_specs().is_empty(),
            "connecting servers offer nothing"
        );
        servers.set_ready(&id, connected(&["add", "echo"]));
        let specs = servers.tool_specs();
        let names: Vec<_> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["mcp_demo_add", "mcp_demo_echo"]);
        assert!(
            !specs[0].is_overridable(),
            "a client tool never replaces an MCP tool"
        );
        assert_eq!(specs[0].description, "does add");
        assert_eq!(
            servers.resolve("mcp_demo_echo"),
            Some(("demo".into(), "echo".into()))
        );
        servers.set_failed(&id, "gone");
        assert!(servers.tool_specs().is_empty());
        assert_eq!(servers.resolve("get_weather"), None);
    }

    #[test]
    fn a_server_needing_approval_offers_tools_that_need_it() {
        let mut servers = Servers::default();
        let id = servers
            .add(
                McpServer::new("ops", "http://m/")
                    .needs_approval()
                    .timeout_ms(900),
                false,
            )
            .unwrap();
        servers.set_ready(&id, connected(&["restart"]));
        let spec = &servers.tool_specs()[0];
        assert!(spec.approval.required_for(&json!({})));
        assert_eq!(spec.timeout_ms, Some(900));
    }

    #[test]
    fn the_same_name_with_another_url_is_refused_and_declared_servers_stay() {
        let mut servers = Servers::default();
        servers
            .add(McpServer::new("Demo", "http://a/"), true)
            .unwrap();
        assert!(servers
            .add(McpServer::new("demo", "http://b/"), false)
            .is_err());
        assert!(servers
            .add(McpServer::new("demo", "http://a/"), false)
            .is_err());
        assert!(servers.remove("Demo").is_err());
        assert_eq!(servers.remove("other").unwrap(), None);
    }

    #[test]
    fn tabs_are_shown_a_server_url_without_its_credentials() {
        assert_eq!(
            shown_url("https://user:secret@mcp.example/mcp?api_key=k#t"),
            "https://mcp.example/mcp"
        );
        assert_eq!(
            shown_url("http://127.0.0.1:8790/mcp"),
            "http://127.0.0.1:8790/mcp"
        );
    }

    #[test]
    fn the_frame_carries_each_server_and_the_ready_tools() {
        let mut servers = Servers::default();
        let ready = servers
            .add(McpServer::new("Demo", "http://a/mcp"), false)
            .unwrap();
        servers.set_ready(&ready, connected(&["add"]));
        let failed = servers
            .add(McpServer::new("Down", "http://b/mcp"), false)
            .unwrap();
        servers.set_failed(&failed, "could not reach the server: refused");
        let frame: Value = serde_json::from_str(&servers.frame()).unwrap();
        assert_eq!(frame["type"], "cf_agent_mcp_servers");
        let demo = &frame["mcp"]["servers"]["demo"];
        assert_eq!(demo["state"], "ready");
        assert_eq!(demo["server_url"], "http://a/mcp");
        assert_eq!(demo["instructions"], "hi");
        assert_eq!(demo["auth_url"], Value::Null);
        assert_eq!(frame["mcp"]["servers"]["down"]["state"], "failed");
        assert_eq!(
            frame["mcp"]["servers"]["down"]["error"],
            "could not reach the server: refused"
        );
        assert_eq!(
            frame["mcp"]["tools"],
            json!([{"name":"add","description":"does add","inputSchema":{"type":"object","properties":{"a":{"type":"number"}}},"serverId":"demo"}])
        );
        assert_eq!(frame["mcp"]["prompts"], json!([]));
    }

    #[test]
    fn a_server_waiting_for_a_sign_in_shows_where_and_offers_nothing() {
        let mut servers = Servers::default();
        let id = servers
            .add(McpServer::new("Locked", "http://a/mcp"), false)
            .unwrap();
        servers.set_authenticating(&id, "http://as/authorize?state=n.locked", "as");
        let frame: Value = serde_json::from_str(&servers.frame()).unwrap();
        let locked = &frame["mcp"]["servers"]["locked"];
        assert_eq!(locked["state"], "authenticating");
        assert_eq!(locked["auth_url"], "http://as/authorize?state=n.locked");
        assert_eq!(locked["auth_issuer"], "as");
        assert!(servers.tool_specs().is_empty());
        servers.set_ready(&id, connected(&["add"]));
        assert_eq!(servers.list()[0].auth_url, None);
        assert_eq!(servers.list()[0].auth_issuer, None);
        assert_eq!(servers.tool_specs().len(), 1);
    }

    #[test]
    fn a_server_on_a_refused_host_or_past_the_cap_is_refused_and_not_listed() {
        let mut servers = Servers::default();
        for url in [
            "http://127.0.0.1:8790/mcp",
            "http://169.254.169.254/latest",
            "http://localhost/mcp",
        ] {
            let err = servers
                .add(McpServer::new("local", url), false)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("the MCP server URL is refused: "), "{err}");
        }
        assert!(servers.list().is_empty());
        let mut allowed = Servers::new([], OutboundHosts::from_list("127.0.0.1"));
        assert!(allowed
            .add(McpServer::new("local", "http://127.0.0.1:8790/mcp"), false)
            .is_ok());
        for i in 1..MAX_SERVERS {
            allowed
                .add(
                    McpServer::new(&format!("s{i}"), "https://m.example/"),
                    false,
                )
                .unwrap();
        }
        let err = allowed
            .add(McpServer::new("one-more", "https://m.example/"), false)
            .unwrap_err();
        assert!(err.to_string().contains("at most 16 MCP servers"), "{err}");
        assert!(allowed
            .add(McpServer::new("s1", "https://m.example/"), false)
            .is_ok());
    }

    #[test]
    fn a_servers_error_is_cut_for_the_tabs() {
        let mut servers = Servers::default();
        let id = servers
            .add(McpServer::new("Loud", "https://m.example/"), false)
            .unwrap();
        servers.set_failed(&id, &"e".repeat(50_000));
        let frame: Value = serde_json::from_str(&servers.frame()).unwrap();
        let error = frame["mcp"]["servers"]["loud"]["error"].as_str().unwrap();
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS + 1);
        assert!(error.ends_with('…'));
    }
}
