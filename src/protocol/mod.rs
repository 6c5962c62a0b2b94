//! Wire types of the `useAgentChat` protocol: client frames, server frames,
//! `UIMessage` and `UIMessageChunk`, and the parent ↔ child channel of
//! sub-agents. Serde only; no behaviour.

pub mod agent_frames;
pub mod channel;
pub mod chunk;
pub mod client;
pub mod gate;
pub mod json_shape;
pub mod json_string;
pub mod message;
mod posted_message;
pub mod server;
pub mod types;

pub use chunk::UIMessageChunk;
pub use client::{
    parse_client_frame, ChatRequest, ClientFrame, ClientToolSchema, FrameError, ToolResult, Trigger,
};
pub use message::{Approval, Part, Role, TextPart, TextState, ToolPart, ToolState, UIMessage};
pub use server::{Outcome, ResponseFrame};
