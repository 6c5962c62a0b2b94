//! Provider-neutral vocabulary for talking to a language model: the request we
//! send ([`ModelRequest`]: messages, tools, settings), the events a streamed
//! reply produces and the errors it can end with, and the [`ModelProvider`]
//! trait a model service implements. Everything here is sans-I/O; the host
//! that owns the connection carries out a provider's [`CallPlan`], feeds the
//! body bytes in and gets [`ModelEvent`]s out.
//!
//! * [`sse`] turns a `text/event-stream` byte stream into [`sse::SseEvent`]s.
//! * [`anthropic`] speaks Anthropic's Messages API (tool use blocks,
//!   images, prompt-cache breakpoints, cache usage).
//! * [`openai`] speaks the OpenAI-compatible Chat Completions dialect: it builds
//!   the request body and decodes the streamed chunks.
//! * [`scripted`] is a model with no I/O, answering from the conversation
//!   (`MODEL_PROVIDER=scripted`).
//! * [`providers`] holds the agent's providers by name (built-in and the
//!   author's own) and picks the one a request names.
//! * [`ModelFailure`] says why a call failed and whether a retry may help.
//! * [`join_deltas`] joins the deltas of one read of a body that continue
//!   one another, so a fast stream is not one frame per token.

pub mod ai_gateway;
pub mod anthropic;
mod event;
mod failure;
pub mod files;
mod http_service;
mod joined_deltas;
pub mod openai;
mod provider;
pub mod providers;
mod request;
pub mod scripted;
pub mod sse;
pub mod workers_ai;

pub use event::{FinishReason, ModelError, ModelEvent, Usage};
pub use failure::{ModelFailure, MAX_RETRY_AFTER_MS};
pub use joined_deltas::{join_deltas, MAX_JOINED_BYTES};
pub use provider::{
    BindingCall, CallPlan, HttpRequest, LocalReply, ModelProvider, ResponseDecoder,
};

pub use request::{
    ModelFile, ModelMessage, ModelRequest, ModelSettings, ModelToolCall, StructuredOutput,
    ToolChoice, ToolDefinition,
};
