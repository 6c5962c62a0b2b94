//! The Messages API event stream in, [`ModelEvent`]s out: text and
//! thinking deltas, `tool_use` blocks as tool calls (numbered in the order
//! they start, their `input_json_delta`s as argument deltas), the stop
//! reason, and usage from `message_start` and `message_delta` (input tokens
//! counted with the cache reads and writes, which are reported apart).
//! Each event is read through the gate (`gate::MODEL_EVENT`).

use std::collections::HashMap;

use serde_json::Value;

use crate::model::openai::errors::describe_error_value;
use crate::model::sse::{SseEvent, SseParser};
use crate::model::{FinishReason, ModelError, ModelEvent, ModelFailure, ResponseDecoder, Usage};
use crate::protocol::gate::{self, MODEL_EVENT};

/// Decodes one streamed Messages API response body.
#[derive(Debug, Default)]
pub struct MessagesDecoder {
    parser: SseParser,
    pending: Vec<SseEvent>,
    /// Content block index → tool call index, for `tool_use` blocks.
    tools: HashMap<u64, ToolBlock>,
    next_tool: u32,
    input_tokens: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    output_tokens: Option<u64>,
    stop_reason: Option<FinishReason>,
    finished: bool,
}

#[derive(Debug)]
struct ToolBlock {
    index: u32,
    /// Whether any argument text was sent (a call with none gets `{}`).
    has_input: bool,
}

impl MessagesDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn decode_pending(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        for event in std::mem::take(&mut self.pending) {
            if self.finished {
                break;
            }
            self.on_event(&event, out)?;
        }
        Ok(())
    }

    fn on_event(&mut self, event: &SseEvent, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if event.is_oversized() {
            return Err(ModelError::Malformed("an event over the size limit".into()));
        }
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value = gate::read_value(data, &MODEL_EVENT)
            .map_err(|e| ModelError::Malformed(format!("{e} in a Messages API event")))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(usage) = value.get("message").and_then(|m| m.get("usage")) {
                    self.read_usage(usage);
                }
            }
            "content_block_start" => self.block_start(&value, out),
            "content_block_delta" => self.block_delta(&value, out),
            "content_block_stop" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(tool) = self.tools.get_mut(&index) {
                    if !tool.has_input {
                        tool.has_input = true;
                        out.push(ModelEvent::ToolCallArgumentsDelta {
                            index: tool.index,
                            delta: "{}".into(),
                        });
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.stop_reason = Some(finish_reason(reason));
                }
                if let Some(usage) = value.get("usage") {
                    self.read_usage(usage);
                }
            }
            "message_stop" => self.emit_finished(out),
            "error" => {
                let error = value.get("error").unwrap_or(&value);
                return Err(ModelError::Provider(describe_error_value(error)));
            }
            // `ping` and any event type added later.
            _ => {}
        }
        Ok(())
    }

    fn block_start(&mut self, value: &Value, out: &mut Vec<ModelEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(block) = value.get("content_block") else {
            return;
        };
        let text = |field: &str| block.get(field).and_then(Value::as_str).unwrap_or("");
        match text("type") {
            "text" if !text("text").is_empty() => {
                out.push(ModelEvent::TextDelta(text("text").to_string()))
            }
            "thinking" if !text("thinking").is_empty() => {
                out.push(ModelEvent::ReasoningDelta(text("thinking").to_string()))
            }
            "tool_use" => {
                let tool = ToolBlock {
                    index: self.next_tool,
                    has_input: false,
                };
                self.next_tool += 1;
                out.push(ModelEvent::ToolCallStarted {
                    index: tool.index,
                    id: text("id").to_string(),
                    name: text("name").to_string(),
                });
                let tool_index = tool.index;
                self.tools.insert(index, tool);
                // A block that carries its whole input (not streamed).
                if let Some(input) = block
                    .get("input")
                    .and_then(Value::as_object)
                    .filter(|input| !input.is_empty())
                {
                    if let Some(tool) = self.tools.get_mut(&index) {
                        tool.has_input = true;
                    }
                    out.push(ModelEvent::ToolCallArgumentsDelta {
                        index: tool_index,
                        delta: Value::Object(input.clone()).to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    fn block_delta(&mut self, value: &Value, out: &mut Vec<ModelEvent>) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        let Some(delta) = value.get("delta") else {
            return;
        };
        let text = |field: &str| delta.get(field).and_then(Value::as_str).unwrap_or("");
        match text("type") {
            "text_delta" if !text("text").is_empty() => {
                out.push(ModelEvent::TextDelta(text("text").to_string()))
            }
            "thinking_delta" if !text("thinking").is_empty() => {
                out.push(ModelEvent::ReasoningDelta(text("thinking").to_string()))
            }
            "input_json_delta" if !text("partial_json").is_empty() => {
                if let Some(tool) = self.tools.get_mut(&index) {
                    tool.has_input = true;
                    out.push(ModelEvent::ToolCallArgumentsDelta {
                        index: tool.index,
                        delta: text("partial_json").to_string(),
                    });
                }
            }
            _ => {}
        }
    }

    /// Counts as the API reports them: each field is the total so far.
    fn read_usage(&mut self, usage: &Value) {
        let field = |name: &str| usage.get(name).and_then(Value::as_u64);
        if let Some(n) = field("input_tokens") {
            self.input_tokens = Some(n);
        }
        if let Some(n) = field("cache_read_input_tokens") {
            self.cache_read = Some(n);
        }
        if let Some(n) = field("cache_creation_input_tokens") {
            self.cache_write = Some(n);
        }
        if let Some(n) = field("output_tokens") {
            self.output_tokens = Some(n);
        }
    }

    fn usage(&self) -> Option<Usage> {
        if self.input_tokens.is_none() && self.output_tokens.is_none() {
            return None;
        }
        Some(Usage {
            prompt_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(self.cache_read.unwrap_or(0))
                .saturating_add(self.cache_write.unwrap_or(0)),
            completion_tokens: self.output_tokens.unwrap_or(0),
            cached_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
        })
    }

    fn emit_finished(&mut self, out: &mut Vec<ModelEvent>) {
        if self.finished {
            return;
        }
        self.finished = true;
        out.push(ModelEvent::Finished {
            reason: self.stop_reason.unwrap_or(FinishReason::Stop),
            usage: self.usage(),
        });
    }
}

fn finish_reason(wire: &str) -> FinishReason {
    match wire {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

impl ResponseDecoder for MessagesDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure> {
        self.parser.feed(bytes, &mut self.pending);
        self.decode_pending(out).map_err(ModelFailure::from)
    }

    /// A body that ended after its stop reason but before `message_stop`
    /// is finished; one that ended before either was cut off.
    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure> {
        self.parser.finish(&mut self.pending);
        self.decode_pending(out).map_err(ModelFailure::from)?;
        if self.finished {
            return Ok(());
        }
        if self.stop_reason.is_none() {
            return Err(ModelFailure::from(ModelError::Truncated));
        }
        self.emit_finished(out);
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL_REPLY: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":30,\"cache_read_input_tokens\":900,\"output_tokens\":1}}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Grüße 🌍 \"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_9\",\"name\":\"lookup\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"q\\\":\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"café\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_10\",\"name\":\"now\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":25}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    fn decode_in_chunks(body: &str, size: usize) -> (Vec<ModelEvent>, Result<(), ModelFailure>) {
        let mut decoder = MessagesDecoder::new();
        let mut out = Vec::new();
        for chunk in body.as_bytes().chunks(size) {
            if let Err(failure) = decoder.decode(chunk, &mut out) {
                return (out, Err(failure));
            }
        }
        let end = decoder.end(&mut out);
        (out, end)
    }

    #[test]
    fn text_tool_use_and_cache_usage_decode_the_same_for_every_split() {
        for size in [1, 3, 7, 64, TOOL_REPLY.len()] {
            let (events, end) = decode_in_chunks(TOOL_REPLY, size);
            assert_eq!(end, Ok(()), "chunk size {size}");
            let text: String = events
                .iter()
                .filter_map(|e| match e {
                    ModelEvent::TextDelta(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(text, "Grüße 🌍 ");
            let starts: Vec<(u32, &str, &str)> = events
                .iter()
                .filter_map(|e| match e {
                    ModelEvent::ToolCallStarted { index, id, name } => {
                        Some((*index, id.as_str(), name.as_str()))
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(
                starts,
                vec![(0, "toolu_9", "lookup"), (1, "toolu_10", "now")]
            );
            let arguments = |wanted: u32| -> String {
                events
                    .iter()
                    .filter_map(|e| match e {
                        ModelEvent::ToolCallArgumentsDelta { index, delta } if *index == wanted => {
                            Some(delta.as_str())
                        }
                        _ => None,
                    })
                    .collect()
            };
            assert_eq!(arguments(0), r#"{"q":"café"}"#);
            assert_eq!(
                arguments(1),
                "{}",
                "a call with no input gets an empty object"
            );
            assert_eq!(
                events.last(),
                Some(&ModelEvent::Finished {
                    reason: FinishReason::ToolCalls,
                    usage: Some(Usage {
                        prompt_tokens: 942,
                        completion_tokens: 25,
                        cached_tokens: Some(900),
                        cache_write_tokens: Some(30),
                    }),
                })
            );
        }
    }

    #[test]
    fn a_cut_stream_is_cut_off_and_an_error_event_is_the_providers() {
        let cut = &TOOL_REPLY[..TOOL_REPLY.len() / 2];
        let (_, end) = decode_in_chunks(cut, 16);
        let failure = end.expect_err("cut");
        assert!(failure.cut && failure.transient, "{failure:?}");

        let body = concat!(
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n",
            "event: error\n",
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        let (events, end) = decode_in_chunks(body, 5);
        assert_eq!(events, vec![ModelEvent::TextDelta("a".into())]);
        assert_eq!(
            end,
            Err(ModelFailure::from(ModelError::Provider(
                "Overloaded".into()
            )))
        );
        let (_, end) = decode_in_chunks("data: <html>\n\n", 4);
        assert!(end.is_err());
    }

    #[test]
    fn thinking_is_reasoning_and_a_stop_without_message_stop_finishes() {
        let body = concat!(
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"x\"}}\n\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":3}}\n\n",
        );
        let (events, end) = decode_in_chunks(body, 9);
        assert_eq!(end, Ok(()));
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta("hmm".into()),
                ModelEvent::Finished {
                    reason: FinishReason::Length,
                    usage: Some(Usage {
                        prompt_tokens: 0,
                        completion_tokens: 3,
                        cached_tokens: None,
                        cache_write_tokens: None,
                    }),
                },
            ]
        );
    }
}
