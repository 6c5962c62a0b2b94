//! Provider-neutral vocabulary for talking to a language model: the messages we
//! send, the tools we offer, the events a streamed reply produces and the errors
//! it can end with. Everything here is sans-I/O; the adapter that owns the HTTP
//! connection feeds bytes in and gets [`ModelEvent`]s out.
//!
//! * [`sse`] turns a `text/event-stream` byte stream into [`sse::SseEvent`]s.
//! * [`openai`] speaks the OpenAI-compatible Chat Completions dialect: it builds
//!   the request body and decodes the streamed chunks.
//! * [`ModelFailure`] says why a call failed and whether a retry may help.

mod failure;
pub mod openai;
pub mod sse;

pub use failure::{is_transient_status, ModelFailure, MAX_RETRY_AFTER_MS};

/// One message of the conversation as the provider sees it (built by the caller
/// from the chat transcript).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelMessage {
    System {
        content: String,
    },
    User {
        content: String,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ModelToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call the assistant made earlier in the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text, exactly as the model produced them.
    pub arguments: String,
}

/// A tool the model may call; `parameters` is a JSON Schema object.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Per-request knobs. `None` leaves the provider's default in place.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelSettings {
    pub model: String,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

/// What the provider stream says, in provider-neutral terms.
///
/// Tool calls are identified by `index`: `ToolCallStarted` comes exactly once per
/// index, before any `ToolCallArgumentsDelta` for that index. Concatenating the
/// argument deltas of one index gives the complete JSON arguments text (which is
/// untrusted model output and may still be invalid JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    TextDelta(String),
    ReasoningDelta(String),
    ToolCallStarted {
        index: u32,
        id: String,
        name: String,
    },
    ToolCallArgumentsDelta {
        index: u32,
        delta: String,
    },
    /// The last event of a successful stream; emitted at most once.
    Finished {
        reason: FinishReason,
        usage: Option<Usage>,
    },
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other,
}

/// Token accounting reported by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Why a model call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The provider answered with a non-2xx status; `message` is a readable
    /// one-line summary (see [`openai::http_error_text`]).
    #[error("model provider HTTP error: {message}")]
    Http { status: u16, message: String },
    /// The provider reported an error inside the stream.
    #[error("model provider error: {0}")]
    Provider(String),
    /// The stream contained something we could not understand.
    #[error("malformed model stream: {0}")]
    Malformed(String),
    /// The stream ended before the provider said it was done.
    #[error("model stream ended before the reply was finished")]
    Truncated,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_render_as_readable_sentences() {
        let http = ModelError::Http {
            status: 429,
            message: "429 Too Many Requests: slow down".into(),
        };
        assert_eq!(
            http.to_string(),
            "model provider HTTP error: 429 Too Many Requests: slow down"
        );
        assert_eq!(
            ModelError::Truncated.to_string(),
            "model stream ended before the reply was finished"
        );
    }

    #[test]
    fn default_settings_leave_provider_defaults_alone() {
        let settings = ModelSettings::default();
        assert_eq!(settings.temperature, None);
        assert_eq!(settings.max_tokens, None);
    }
}
