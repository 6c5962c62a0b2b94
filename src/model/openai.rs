//! The OpenAI-compatible Chat Completions dialect (streaming), sans-I/O.
//!
//! This file owns the endpoint URL and the text for HTTP failures; the pieces
//! of the exchange live in submodules:
//!
//! * [`OpenAiCompatible`] (`openai/provider.rs`) is the
//!   [`ModelProvider`](super::ModelProvider): base URL, API key, headers;
//! * [`request_body`] (`openai/request.rs`) builds the POST body;
//! * [`CompletionDecoder`] (`openai/decoder.rs`) turns SSE events into
//!   [`ModelEvent`](super::ModelEvent)s, with tool-call bookkeeping in
//!   `openai/tool_calls.rs` and the chunk JSON shapes in `openai/wire.rs`;
//! * [`StreamDecoder`] (`openai/stream.rs`) chains the SSE parser and the
//!   decoder so an adapter can feed raw body bytes.

mod decoder;
pub(crate) mod errors;
mod provider;
mod request;
mod stream;
mod tool_calls;
mod wire;

pub use decoder::CompletionDecoder;
pub use errors::{chat_completions_url, http_error_text};
pub use provider::OpenAiCompatible;
pub use request::request_body;
pub(crate) use request::{message_json, tool_definition_json};
pub use stream::StreamDecoder;
pub(crate) use wire::usage_from_json;
