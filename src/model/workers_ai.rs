//! Workers AI over the Worker's `AI` binding: `env.AI.run(model, {messages,
//! tools, stream: true})` with the input built as JSON text (parsed by the
//! host with `JSON.parse`, so tool parameter schemas stay plain objects).
//! The streamed reply is server-sent events in either of the shapes Workers
//! AI models use: OpenAI-style `chat.completion.chunk`s (decoded by the
//! OpenAI decoder), or native lines `{"response": "...", "tool_calls": [...]}`
//! ended by `[DONE]`. Each event is read through the gate
//! (`gate::MODEL_EVENT`).

use std::cell::Cell;

use crate::model::ai_gateway::AiGateway;
use crate::protocol::gate::{self, MODEL_EVENT};
use serde_json::{json, Map, Value};

use super::openai::{message_json, tool_definition_json, usage_from_json, CompletionDecoder};
use super::sse::{SseEvent, SseParser};
use super::{
    BindingCall, CallPlan, FinishReason, ModelError, ModelEvent, ModelFailure, ModelProvider,
    ModelRequest, ResponseDecoder, ToolChoice, Usage,
};

/// The Workers AI provider.
#[derive(Debug, PartialEq)]
pub struct WorkersAi {
    binding: String,
    /// Prefix of the ids minted for native tool calls (which carry none);
    /// the host picks it at random so ids never repeat across instances.
    id_prefix: String,
    next_call: Cell<u64>,
    /// The AI Gateway calls go through, if any.
    gateway: Option<AiGateway>,
    /// Images in user messages go to the model as `image_url` parts (a
    /// vision model); else every file is a text note.
    images: bool,
}

impl WorkersAi {
    pub fn new(binding: &str, id_prefix: &str) -> Self {
        WorkersAi {
            binding: binding.to_string(),
            id_prefix: id_prefix.to_string(),
            next_call: Cell::new(0),
            gateway: None,
            images: false,
        }
    }

    /// The same provider sending images to the model (`WORKERS_AI_IMAGES`).
    pub fn with_images(self, images: bool) -> Self {
        WorkersAi { images, ..self }
    }

    /// The `run` input for `request` as this provider sends it (images as
    /// `image_url` parts when it sends images).
    pub fn input_for(&self, request: &ModelRequest) -> String {
        Self::input_with(request, self.images)
    }

    /// The same provider calling through AI Gateway `gateway`.
    pub fn with_gateway(self, gateway: Option<AiGateway>) -> Self {
        WorkersAi { gateway, ..self }
    }

    /// The same provider minting tool-call ids under `prefix`.
    pub fn with_id_prefix(self, prefix: &str) -> Self {
        WorkersAi {
            id_prefix: prefix.to_string(),
            ..self
        }
    }

    /// The `run` input for `request`. Files in user messages become text
    /// notes (see `model::files`). Sampling settings go as the binding
    /// names them; structured output is its JSON mode
    /// (`response_format: {type: "json_schema", json_schema}`); stop
    /// sequences are not part of the binding's input (a model that takes
    /// them gets them through the provider options, added as for OpenAI).
    pub fn input(request: &ModelRequest) -> String {
        Self::input_with(request, false)
    }

    fn input_with(request: &ModelRequest, images: bool) -> String {
        let mut input = Map::new();
        let message = |m: &super::ModelMessage| match m {
            super::ModelMessage::User { content, files } if images && !files.is_empty() => json!({
                "role": "user",
                "content": super::files::vision_content(content, files),
            }),
            other => text_only_message_json(other),
        };
        input.insert(
            "messages".into(),
            Value::Array(request.messages.iter().map(message).collect()),
        );
        // The binding has no `tool_choice`: `none` offers no tools and a
        // named tool is offered alone.
        let offered = request.tools.iter().filter(|t| match &request.tool_choice {
            Some(ToolChoice::None) => false,
            Some(ToolChoice::Tool(name)) => &t.name == name,
            _ => true,
        });
        let tools: Vec<Value> = offered.map(tool_definition_json).collect();
        if !tools.is_empty() {
            input.insert("tools".into(), Value::Array(tools));
        }
        input.insert("stream".into(), json!(true));
        if let Some(temperature) = request.settings.temperature {
            input.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = request.settings.max_tokens {
            input.insert("max_tokens".into(), json!(max_tokens));
        }
        if let Some(top_p) = request.settings.top_p {
            input.insert("top_p".into(), json!(top_p));
        }
        if let Some(seed) = request.settings.seed {
            input.insert("seed".into(), json!(seed));
        }
        if let Some(output) = &request.settings.structured_output {
            input.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": output.schema}),
            );
        }
        request.settings.add_provider_options(&mut input);
        Value::Object(input).to_string()
    }
}

impl ModelProvider for WorkersAi {
    /// A gateway model slug (`openai/gpt-4o-mini`, `anthropic/claude-…`)
    /// goes through the AI Gateway (`AI_GATEWAY_ID`, else the account's
    /// `default` gateway) with images as `image_url` parts; the call's
    /// gateway metadata rides in the gateway options.
    fn plan(&self, request: &ModelRequest) -> CallPlan {
        let model = request.settings.model.trim();
        let slug = is_gateway_slug(model);
        let gateway = match (&self.gateway, slug) {
            (Some(gateway), _) => Some(gateway.clone()),
            (None, true) => Some(AiGateway::new(DEFAULT_GATEWAY)),
            (None, false) => None,
        };
        CallPlan::Binding(BindingCall {
            binding: self.binding.clone(),
            model: model.to_string(),
            input: Self::input_with(request, self.images || slug),
            options: gateway.map(|g| g.run_options_with(&request.settings.gateway_metadata)),
        })
    }

    fn decoder(&self) -> Box<dyn ResponseDecoder> {
        let call = self.next_call.get();
        self.next_call.set(call + 1);
        Box::new(WorkersAiDecoder {
            id_prefix: format!("{}-{call}", self.id_prefix),
            ..WorkersAiDecoder::default()
        })
    }

    fn http_failure(
        &self,
        status: u16,
        body: &str,
        _header: &dyn Fn(&str) -> Option<String>,
    ) -> ModelFailure {
        ModelFailure::http(
            status,
            format!("Workers AI answered {status}: {body}"),
            None,
            None,
        )
    }
}

/// The gateway a model slug goes through when no `AI_GATEWAY_ID` is set.
pub const DEFAULT_GATEWAY: &str = "default";

/// A model named `provider/model` (no leading `@`, as Workers AI's own
/// `@cf/…` models are): one the AI Gateway runs at that provider.
pub fn is_gateway_slug(model: &str) -> bool {
    !model.starts_with('@')
        && model
            .split_once('/')
            .is_some_and(|(provider, name)| !provider.is_empty() && !name.is_empty())
}

/// Reads a failed `run` (the binding threw): capacity and rate limits may
/// pass on a second try.
pub fn binding_failure(message: &str) -> ModelFailure {
    let text = format!("Workers AI failed: {message}");
    let lower = message.to_ascii_lowercase();
    if [
        "capacity",
        "rate limit",
        "429",
        "timeout",
        "timed out",
        "overloaded",
    ]
    .iter()
    .any(|m| lower.contains(m))
    {
        ModelFailure::transient(text)
    } else {
        ModelFailure::permanent(text)
    }
}

/// Decodes one Workers AI stream, in whichever shape it comes.
#[derive(Debug, Default)]
pub struct WorkersAiDecoder {
    parser: SseParser,
    pending: Vec<SseEvent>,
    /// Set by the first OpenAI-style chunk: the rest goes to this decoder.
    openai: Option<CompletionDecoder>,
    id_prefix: String,
    native_calls: u32,
    /// The token counts a native event reported (the last one, before `[DONE]`).
    usage: Option<Usage>,
    finished: bool,
}

impl WorkersAiDecoder {
    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.finished {
            return Ok(());
        }
        if let Some(openai) = self.openai.as_mut() {
            openai.on_event(event, out)?;
            self.finished = openai.is_finished();
            return Ok(());
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(());
        }
        if data.is_empty() || event.is_oversized() {
            return Ok(());
        }
        let chunk = gate::read_value(data, &MODEL_EVENT)
            .map_err(|e| ModelError::Malformed(format!("{e} (a Workers AI event)")))?;
        if chunk.get("choices").is_some() {
            let mut openai = CompletionDecoder::new();
            openai.on_event(event, out)?;
            self.finished = openai.is_finished();
            self.openai = Some(openai);
            return Ok(());
        }
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let text = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_string);
            return Err(ModelError::Provider(text));
        }
        if let Some(text) = chunk.get("response").and_then(Value::as_str) {
            if !text.is_empty() {
                out.push(ModelEvent::TextDelta(text.to_string()));
            }
        }
        if let Some(usage) = chunk.get("usage").and_then(usage_from_json) {
            self.usage = Some(usage);
        }
        for call in chunk
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.native_tool_call(call, out);
        }
        Ok(())
    }

    /// A native tool call arrives whole: `{name, arguments}` (arguments an
    /// object or JSON text), or the same under `function`.
    fn native_tool_call(&mut self, call: &Value, out: &mut Vec<ModelEvent>) {
        let function = call.get("function").unwrap_or(call);
        let Some(name) = function.get("name").and_then(Value::as_str) else {
            return;
        };
        let arguments = match function.get("arguments") {
            Some(Value::String(text)) => text.clone(),
            Some(Value::Null) | None => "{}".to_string(),
            Some(other) => other.to_string(),
        };
        let index = self.native_calls;
        self.native_calls += 1;
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map_or_else(|| format!("{}-{index}", self.id_prefix), str::to_string);
        out.push(ModelEvent::ToolCallStarted {
            index,
            id,
            name: name.to_string(),
        });
        out.push(ModelEvent::ToolCallArgumentsDelta {
            index,
            delta: arguments,
        });
    }

    fn finish(&mut self, out: &mut Vec<ModelEvent>) {
        let reason = if self.native_calls > 0 {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        out.push(ModelEvent::Finished {
            reason,
            usage: self.usage,
        });
        self.finished = true;
    }

    fn decode_pending(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        for event in std::mem::take(&mut self.pending) {
            self.on_event(&event, out)?;
        }
        Ok(())
    }
}

impl ResponseDecoder for WorkersAiDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure> {
        self.parser.feed(bytes, &mut self.pending);
        self.decode_pending(out).map_err(ModelFailure::from)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure> {
        self.parser.finish(&mut self.pending);
        self.decode_pending(out).map_err(ModelFailure::from)?;
        match self.openai.as_mut() {
            Some(openai) => openai.finish(out).map_err(ModelFailure::from),
            None if self.finished => Ok(()),
            None => Err(ModelFailure::from(ModelError::Truncated)),
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests;

/// A message as the binding takes it: a user message's files as text notes.
fn text_only_message_json(message: &super::ModelMessage) -> Value {
    match message {
        super::ModelMessage::User { content, files } if !files.is_empty() => json!({
            "role": "user",
            "content": super::files::text_with_notes(content, files),
        }),
        other => message_json(other),
    }
}
