//! What the core knows of the agent's MCP servers, as the host tells it
//! (`Core::set_mcp`): the `cf_agent_mcp_servers` frame a tab gets on
//! connect (and every tab when it changes), and the servers' tools, offered
//! after the agent's own tools and routed, approved and hooked like them.

use crate::core::contract::effects::Event;
use crate::core::vocab::tool_spec::ToolSpec;
use crate::core::Core;
use crate::protocol::server;

/// The MCP state the host last set.
#[derive(Debug, Default)]
pub struct McpView {
    /// The frame tabs get (`None`: no server yet, the empty frame).
    frame: Option<String>,
    /// How many of `config.tools` are the agent's own (the rest are MCP tools).
    own_tools: Option<usize>,
}

impl Core {
    /// Shorthand for `handle(Event::McpServersChanged { frame, tools }, now)`
    /// at the core's current time.
    pub fn set_mcp(&mut self, frame: String, tools: Vec<ToolSpec>) {
        let now = self.now;
        self.handle(Event::McpServersChanged { frame, tools }, now);
    }

    /// Replaces the MCP tools offered from the next model call on and the
    /// frame tabs get; every open tab is sent the new frame.
    pub(in crate::core) fn on_mcp_servers_changed(&mut self, frame: String, tools: Vec<ToolSpec>) {
        let own = *self.mcp.own_tools.get_or_insert(self.config.tools.len());
        self.config.tools.truncate(own);
        self.config.tools.extend(tools);
        let changed = self.mcp.frame.as_deref() != Some(frame.as_str());
        self.mcp.frame = Some(frame);
        if changed {
            let frame = self.mcp_frame();
            self.send_to(self.conns.all(), frame);
        }
    }

    /// The frame a connecting tab gets.
    pub(in crate::core) fn mcp_frame(&self) -> String {
        self.mcp.frame.clone().unwrap_or_else(server::mcp_servers)
    }
}
