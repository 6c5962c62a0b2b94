//! What a model step reports when it ends (`StepReport`, for `on_step_end`)
//! and the metadata the author writes on the answer: the moments of its
//! stream at which the `MessageMetadata` hook is asked (the `start` chunk,
//! each step's end as a `message-metadata` chunk, the `finish` chunk), and
//! `standard_message_metadata`, a ready writer of `createdAt`, `model` and
//! the turn's token usage. What a moment's writer returns is merged into the
//! answer's `metadata` (shallow), by the tabs as by the stored message.

use std::rc::Rc;

use serde_json::{json, Map, Value};

use crate::model::{FinishReason, Usage};

use crate::core::vocab::turn_config::TurnTrigger;

/// A model step that ended, for `on_step_end`: the step's tool calls were
/// routed (server tools run) and its usage is known.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    pub request_id: String,
    pub trigger: TurnTrigger,
    /// The step's number in its turn, from 1.
    pub step: u32,
    /// The model the step asked.
    pub model: String,
    pub finish_reason: FinishReason,
    /// The names of the tools the model called in this step, in order.
    pub tool_calls: Vec<String>,
    /// What the provider reported for this step's call (`None`: nothing).
    pub usage: Option<Usage>,
    /// Whether another step follows.
    pub continues: bool,
}

/// Where in the answer's stream the metadata writer is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataMoment<'a> {
    /// The answer's stream starts (its `start` chunk), before `before_turn`
    /// chose the turn's model.
    Start {
        request_id: &'a str,
        trigger: TurnTrigger,
        /// The turn continues an earlier answer (same message).
        continuation: bool,
        /// The time, in ms since the Unix epoch.
        now_ms: u64,
    },
    /// A model step ended (a `message-metadata` chunk after `finish-step`).
    StepEnd(&'a StepReport),
    /// The turn completed (its `finish` chunk): the model it asked last and
    /// the usage of all its steps.
    Finish {
        request_id: &'a str,
        model: &'a str,
        steps: u32,
        usage: Option<Usage>,
        now_ms: u64,
    },
}

/// The writer: fields to merge into the answer's `metadata` at a moment
/// (`None` or an empty map: nothing is sent then).
pub type MessageMetadata = Rc<dyn Fn(&MetadataMoment<'_>) -> Option<Map<String, Value>>>;

/// A ready writer: `createdAt` (ms since the epoch) when the answer starts
/// (a continuation keeps the time its answer was first started);
/// `model` and `usage` (the turn's total: `inputTokens`, `outputTokens`,
/// `totalTokens`, and `cachedInputTokens` when the provider says) when the
/// turn finishes. Nothing at a step's end.
pub fn standard_message_metadata(moment: &MetadataMoment<'_>) -> Option<Map<String, Value>> {
    let mut fields = Map::new();
    match moment {
        MetadataMoment::Start {
            continuation: true, ..
        }
        | MetadataMoment::StepEnd(_) => return None,
        MetadataMoment::Start { now_ms, .. } => {
            fields.insert("createdAt".into(), json!(now_ms));
        }
        MetadataMoment::Finish { model, usage, .. } => {
            fields.insert("model".into(), json!(model));
            if let Some(usage) = usage {
                fields.insert("usage".into(), usage_json(usage));
            }
        }
    }
    Some(fields)
}

/// Token usage as the AI SDK names it: `inputTokens`, `outputTokens`,
/// `totalTokens`, and `cachedInputTokens` when known.
pub fn usage_json(usage: &Usage) -> Value {
    let mut fields = Map::new();
    fields.insert("inputTokens".into(), json!(usage.prompt_tokens));
    fields.insert("outputTokens".into(), json!(usage.completion_tokens));
    fields.insert("totalTokens".into(), json!(usage.total_tokens()));
    if let Some(cached) = usage.cached_tokens {
        fields.insert("cachedInputTokens".into(), json!(cached));
    }
    Value::Object(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_writer_stamps_the_start_time_then_model_and_usage() {
        let start = MetadataMoment::Start {
            request_id: "r1",
            trigger: TurnTrigger::Submit,
            continuation: false,
            now_ms: 1_700_000_000_000,
        };
        assert_eq!(
            standard_message_metadata(&start).map(Value::Object),
            Some(json!({"createdAt": 1_700_000_000_000u64}))
        );
        let continued = MetadataMoment::Start {
            request_id: "r2",
            trigger: TurnTrigger::AutoContinuation,
            continuation: true,
            now_ms: 1_700_000_000_900,
        };
        assert_eq!(standard_message_metadata(&continued), None);
        let usage = Usage {
            prompt_tokens: 30,
            completion_tokens: 5,
            cached_tokens: Some(16),
            cache_write_tokens: None,
        };
        let finish = MetadataMoment::Finish {
            request_id: "r1",
            model: "gpt-test",
            steps: 2,
            usage: Some(usage),
            now_ms: 1_700_000_000_500,
        };
        assert_eq!(
            standard_message_metadata(&finish).map(Value::Object),
            Some(json!({"model": "gpt-test", "usage": {
                "inputTokens": 30, "outputTokens": 5, "totalTokens": 35, "cachedInputTokens": 16
            }}))
        );
    }
}
