//! Every frame `type` string of the wire protocol, in one place.

pub const USE_CHAT_REQUEST: &str = "cf_agent_use_chat_request";
pub const USE_CHAT_RESPONSE: &str = "cf_agent_use_chat_response";
pub const CHAT_MESSAGES: &str = "cf_agent_chat_messages";
pub const CHAT_CLEAR: &str = "cf_agent_chat_clear";
pub const CHAT_REQUEST_CANCEL: &str = "cf_agent_chat_request_cancel";
pub const TOOL_RESULT: &str = "cf_agent_tool_result";
pub const TOOL_APPROVAL: &str = "cf_agent_tool_approval";
pub const MESSAGE_UPDATED: &str = "cf_agent_message_updated";
pub const STREAM_RESUME_REQUEST: &str = "cf_agent_stream_resume_request";
pub const STREAM_RESUMING: &str = "cf_agent_stream_resuming";
pub const STREAM_RESUME_ACK: &str = "cf_agent_stream_resume_ack";
pub const STREAM_RESUME_NONE: &str = "cf_agent_stream_resume_none";
pub const STREAM_PENDING: &str = "cf_agent_stream_pending";
pub const CHAT_RECOVERING: &str = "cf_agent_chat_recovering";
pub const IDENTITY: &str = "cf_agent_identity";
pub const MCP_SERVERS: &str = "cf_agent_mcp_servers";
/// Our own frame for a request the agent refused (bad input, limits).
pub const CHAT_ERROR: &str = "cf_agent_chat_error";

// The parent ↔ child agent channel of `chat()` (see protocol/channel.rs).
pub const RPC_CHAT: &str = "cf_agent_rpc_chat";
pub const RPC_STARTED: &str = "cf_agent_rpc_started";
pub const RPC_TOOL_CALL: &str = "cf_agent_rpc_tool_call";
pub const RPC_TOOL_RESULT: &str = "cf_agent_rpc_tool_result";

// Frames of the agent as a whole (not of the chat): synced state and
// callable methods (see protocol/agent_frames.rs).
pub const STATE: &str = "cf_agent_state";
pub const STATE_ERROR: &str = "cf_agent_state_error";
pub const RPC: &str = "rpc";
