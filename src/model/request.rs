//! What the agent asks a model, in provider-neutral terms: the model and its
//! sampling settings, the conversation, the tools on offer and any extra
//! headers. The core builds a [`ModelRequest`] for each step; a
//! [`ModelProvider`](super::ModelProvider) turns it into its own wire format.

/// One model call's request. The reply is always streamed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    /// The model and the sampling settings of this request.
    pub settings: ModelSettings,
    /// The conversation, system prompt first.
    pub messages: Vec<ModelMessage>,
    /// The tools the model may call (none: the model may only answer).
    pub tools: Vec<ToolDefinition>,
    /// Extra headers for a provider reached over HTTP, sent after the
    /// provider's own (so a header named here replaces the provider's).
    pub headers: Vec<(String, String)>,
    /// Whether and which tool the model must call (`None`: the provider's default, `auto`).
    pub tool_choice: Option<ToolChoice>,
}

/// Whether the model may, must or must not call a tool in its reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model answers in text only.
    None,
    /// The model calls at least one tool.
    Required,
    /// The model calls this tool.
    Tool(String),
}

impl ModelRequest {
    /// A request of one user message to `model`, with no tools.
    pub fn user_text(model: &str, text: &str) -> ModelRequest {
        ModelRequest {
            settings: ModelSettings {
                model: model.to_string(),
                ..ModelSettings::default()
            },
            messages: vec![ModelMessage::User {
                content: text.to_string(),
                files: Vec::new(),
            }],
            ..ModelRequest::default()
        }
    }
}

/// Which model to ask and how to sample. `None` (and empty) leaves the
/// provider's default in place.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelSettings {
    pub model: String,
    /// The provider, by the name the agent knows it under (`openai`,
    /// `anthropic`, `workers-ai`, or one the author registered); `None`:
    /// the agent's default (`MODEL_PROVIDER`).
    pub provider: Option<String>,
    /// Per-call metadata for an AI Gateway the call goes through (string,
    /// number or boolean values): the binding's `gateway.metadata`, or the
    /// `cf-aig-metadata` header of an HTTP call.
    pub gateway_metadata: serde_json::Map<String, serde_json::Value>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Nucleus sampling: only tokens within this probability mass.
    pub top_p: Option<f64>,
    /// Asks for a reproducible sample (where the provider honours it).
    pub seed: Option<i64>,
    /// The model stops before writing any of these (OpenAI takes up to 4).
    pub stop: Vec<String>,
    /// The answer must be JSON following this schema.
    pub structured_output: Option<StructuredOutput>,
    /// Further fields of the provider's request body, by their wire names
    /// (`reasoning_effort`, `service_tier`, …), added as they are. They
    /// never replace a field the agent writes itself (the model, the
    /// messages, streaming, tools, tool choice, and the sampling settings
    /// above when set): a key the body already has is left out.
    pub provider_options: serde_json::Map<String, serde_json::Value>,
}

/// Structured output: the answer is JSON that follows `schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOutput {
    /// The schema's name (OpenAI asks for one: letters, digits, `_` and `-`).
    pub name: String,
    /// A JSON Schema object.
    pub schema: serde_json::Value,
    /// OpenAI's strict mode: the schema is followed exactly (it must then
    /// list every property as required and forbid others).
    pub strict: bool,
}

impl StructuredOutput {
    /// A strict schema named `name`.
    pub fn new(name: &str, schema: serde_json::Value) -> StructuredOutput {
        StructuredOutput {
            name: name.to_string(),
            schema,
            strict: true,
        }
    }
}

impl ModelSettings {
    /// Adds the provider options to a request body: each key the body does
    /// not have yet, in the options' order.
    pub fn add_provider_options(&self, body: &mut serde_json::Map<String, serde_json::Value>) {
        for (key, value) in &self.provider_options {
            if !body.contains_key(key) {
                body.insert(key.clone(), value.clone());
            }
        }
    }
}

/// One message of the conversation as the provider sees it (built by the caller
/// from the chat transcript).
#[derive(Debug, Clone, PartialEq)]
pub enum ModelMessage {
    System {
        content: String,
    },
    User {
        content: String,
        /// Files the user attached (AI SDK `file` parts), after the text.
        files: Vec<ModelFile>,
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

/// A file a user attached to a message (an AI SDK `file` part): `url` is a
/// `data:` URL holding the bytes or a link (`https:`) to them.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFile {
    pub media_type: String,
    pub url: String,
    pub filename: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_settings_leave_provider_defaults_alone() {
        let settings = ModelSettings::default();
        assert_eq!(settings.temperature, None);
        assert_eq!(settings.max_tokens, None);
    }
}
