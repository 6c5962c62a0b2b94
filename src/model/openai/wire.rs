//! The JSON shapes of a streamed Chat Completions chunk, and the lenient
//! conversions from their loosely-typed fields (servers vary) to plain values.

use serde::Deserialize;
use serde_json::Value;

use super::tool_calls::ToolCallFragment;
use crate::model::{FinishReason, Usage};

/// One `data:` payload. Missing and `null` fields both decode as `None`;
/// unknown fields are ignored.
#[derive(Deserialize)]
pub(super) struct ChunkWire {
    pub(super) choices: Option<Vec<ChoiceWire>>,
    pub(super) usage: Option<UsageWire>,
    pub(super) error: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct ChoiceWire {
    pub(super) delta: Option<DeltaWire>,
    pub(super) finish_reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct DeltaWire {
    pub(super) content: Option<Value>,
    pub(super) reasoning_content: Option<Value>,
    pub(super) reasoning: Option<Value>,
    pub(super) tool_calls: Option<Vec<ToolCallWire>>,
}

#[derive(Deserialize)]
pub(super) struct ToolCallWire {
    index: Option<u32>,
    id: Option<String>,
    function: Option<FunctionWire>,
}

#[derive(Deserialize, Default)]
struct FunctionWire {
    name: Option<String>,
    arguments: Option<Value>,
}

/// `usage` of a chunk; servers vary in how they name the cached part of the
/// prompt (`prompt_tokens_details.cached_tokens`, OpenAI's; or a flat
/// `cached_tokens`).
#[derive(Deserialize)]
pub(super) struct UsageWire {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptTokensWire>,
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptTokensWire {
    cached_tokens: Option<u64>,
}

impl ToolCallWire {
    pub(super) fn into_fragment(self) -> ToolCallFragment {
        let function = self.function.unwrap_or_default();
        ToolCallFragment {
            index: self.index,
            id: self.id,
            name: function.name,
            arguments: function.arguments.and_then(arguments_text),
        }
    }
}

impl UsageWire {
    /// Missing counts are reported as zero; cached tokens only when given.
    pub(super) fn into_usage(self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.unwrap_or(0),
            completion_tokens: self.completion_tokens.unwrap_or(0),
            cached_tokens: self
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(self.cached_tokens),
            cache_write_tokens: None,
        }
    }
}

/// A `usage` object as any of the dialects' streams report it.
pub(crate) fn usage_from_json(value: &Value) -> Option<Usage> {
    serde_json::from_value::<UsageWire>(value.clone())
        .ok()
        .map(UsageWire::into_usage)
}

pub(super) fn finish_reason_from_wire(reason: &str) -> FinishReason {
    match reason {
        "stop" | "end_turn" | "stop_sequence" => FinishReason::Stop,
        "length" | "max_tokens" => FinishReason::Length,
        "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Other,
    }
}

pub(super) fn non_empty_string(value: Option<Value>) -> Option<String> {
    match value {
        Some(Value::String(text)) if !text.is_empty() => Some(text),
        _ => None,
    }
}

/// `delta.content` is normally a string; some servers send an array of parts,
/// of which the `text` ones count.
pub(super) fn content_text(content: Value) -> Option<String> {
    let text = match content {
        Value::String(text) => text,
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part.get("type").is_none_or(|kind| kind == "text"))
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

/// `function.arguments` should be JSON text; tolerate servers that send the
/// JSON value itself.
fn arguments_text(arguments: Value) -> Option<String> {
    match arguments {
        Value::Null => None,
        Value::String(text) => Some(text),
        other => Some(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_given_as_parts_yields_only_its_text_parts() {
        let parts = json!([{"type": "text", "text": "a"}, {"type": "image_url"}, {"text": "b"}]);
        assert_eq!(content_text(parts), Some("ab".into()));
    }

    #[test]
    fn empty_or_odd_content_yields_nothing() {
        assert_eq!(content_text(json!("")), None);
        assert_eq!(content_text(json!(7)), None);
        assert_eq!(
            content_text(json!([{"type": "thinking", "text": "x"}])),
            None
        );
    }

    #[test]
    fn arguments_sent_as_a_json_value_become_json_text() {
        assert_eq!(arguments_text(json!({"a": 1})), Some(r#"{"a":1}"#.into()));
        assert_eq!(arguments_text(json!("{\"a\"")), Some("{\"a\"".into()));
        assert_eq!(arguments_text(Value::Null), None);
    }

    #[test]
    fn finish_reasons_map_to_neutral_ones_and_unknown_become_other() {
        assert_eq!(finish_reason_from_wire("stop"), FinishReason::Stop);
        assert_eq!(finish_reason_from_wire("length"), FinishReason::Length);
        assert_eq!(
            finish_reason_from_wire("tool_calls"),
            FinishReason::ToolCalls
        );
        assert_eq!(
            finish_reason_from_wire("function_call"),
            FinishReason::ToolCalls
        );
        assert_eq!(
            finish_reason_from_wire("content_filter"),
            FinishReason::ContentFilter
        );
        assert_eq!(finish_reason_from_wire("weird"), FinishReason::Other);
    }

    #[test]
    fn reasoning_must_be_a_non_empty_string() {
        assert_eq!(non_empty_string(Some(json!("r"))), Some("r".into()));
        assert_eq!(non_empty_string(Some(json!(""))), None);
        assert_eq!(non_empty_string(Some(json!({"text": "r"}))), None);
        assert_eq!(non_empty_string(None), None);
    }
}
