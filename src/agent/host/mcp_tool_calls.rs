//! A model's call to an MCP server's tool: sent on the server's session (a
//! session the server ended opened again once, an expired sign-in refreshed),
//! its result read as the tool's output, and every failure a tool error the
//! model reads.

use std::rc::Rc;

use serde_json::Value;

use crate::agent::tools::context::AbortSignal;
use crate::mcp::{tool_outcome, McpError};

use super::super::AgentHost;
use super::connect::send;
use super::CALL_TIMEOUT_MS;

impl AgentHost {
    /// A model's call to the server's tool `tool` (offered under another
    /// name). A session the server ended is opened again once; a server
    /// that cannot be reached is marked failed. Every failure is a tool
    /// error the model reads.
    pub(in crate::agent::host) async fn call_mcp_tool(
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
}
