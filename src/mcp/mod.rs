//! The agent's MCP client, sans-I/O: JSON-RPC messages of the Model Context
//! Protocol over its Streamable HTTP transport described as requests the
//! host sends and replies it hands back (`jsonrpc`, `session`), the
//! connection handshake as a step machine (`connect`), what a tool result
//! becomes for the model (`content`), the names the model sees
//! (`names`), the servers an agent is connected to with their state and
//! the `cf_agent_mcp_servers` frame (`servers`), the older HTTP+SSE
//! transport for servers that speak only that (`legacy_sse`), what the tool
//! specs kept may cost (`tool_caps`), their stored rows (`record`), and OAuth for servers that ask a person to sign in
//! (`oauth`). The host (`agent::mcp`) carries the requests out with `fetch`.

pub mod connect;
pub mod content;
pub mod jsonrpc;
pub mod legacy_sse;
pub mod names;
pub mod oauth;
pub mod record;
pub mod servers;
pub mod session;
pub mod tool_caps;

pub use connect::{Connect, ConnectStep, Connected};
pub use content::tool_outcome;
pub use jsonrpc::{McpError, McpReply, McpRequest};
pub use names::{server_id, ToolNames, MCP_TOOL_PREFIX};
pub use record::{McpServer, ServerRecord};
pub use servers::{ServerInfo, ServerState, Servers};
pub use session::Session;
