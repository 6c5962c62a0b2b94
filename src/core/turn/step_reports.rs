//! What a step and a turn report as they go: the usage each step's model
//! call reported, summed over the turn; `on_step_end`'s report
//! (`Effect::StepEnded`) when a step ends; and the message metadata the
//! author's writer adds to the answer at its `start` chunk, after each
//! step (`message-metadata`) and at its `finish` chunk.

use serde_json::Value;

use crate::model::Usage;
use crate::protocol::UIMessageChunk;

use crate::core::contract::effects::Effect;
use crate::core::data::queue::QueuedTurn;
use crate::core::turn::active::StepEnd;
use crate::core::vocab::message_metadata::{MetadataMoment, StepReport};
use crate::core::Core;

impl Core {
    /// What the writer adds at the answer's `start` chunk.
    pub(in crate::core::turn) fn start_metadata(&self, turn: &QueuedTurn) -> Option<Value> {
        self.written_metadata(&MetadataMoment::Start {
            request_id: &turn.request_id,
            trigger: turn.trigger,
            continuation: turn.is_continuation(),
            now_ms: self.now,
        })
    }

    /// A step's model call finished with `usage`: counted in the turn's total.
    pub(in crate::core::turn) fn count_step_usage(&mut self, usage: Option<Usage>) {
        let (Some(active), Some(usage)) = (self.active.as_mut(), usage) else {
            return;
        };
        active.usage = Some(match active.usage {
            Some(total) => total.plus(usage),
            None => usage,
        });
    }

    /// The step `end` ended (its `finish-step` is sent) and `continues` says
    /// whether another follows: `on_step_end` is told, and what the writer
    /// adds for the step goes out as a `message-metadata` chunk.
    pub(in crate::core::turn) fn report_step_end(&mut self, end: &StepEnd, continues: bool) {
        let Some(active) = self.active.as_ref() else {
            return;
        };
        let report = StepReport {
            request_id: active.turn.request_id.clone(),
            trigger: active.turn.trigger,
            step: active.steps,
            model: active.step_settings().model.model.clone(),
            finish_reason: end.finish_reason,
            tool_calls: end.tool_names.clone(),
            usage: end.usage,
            continues,
        };
        if let Some(metadata) = self.written_metadata(&MetadataMoment::StepEnd(&report)) {
            self.emit(UIMessageChunk::MessageMetadata {
                message_metadata: metadata,
            });
        }
        self.effects.push(Effect::StepEnded(report));
    }

    /// What the writer adds at the answer's `finish` chunk.
    pub(in crate::core::turn) fn finish_metadata(&self) -> Option<Value> {
        let active = self.active.as_ref()?;
        self.written_metadata(&MetadataMoment::Finish {
            request_id: &active.turn.request_id,
            model: &active.step_settings().model.model,
            steps: active.steps,
            usage: active.usage,
            now_ms: self.now,
        })
    }

    fn written_metadata(&self, moment: &MetadataMoment<'_>) -> Option<Value> {
        let writer = self.config.hooks.message_metadata.as_ref()?;
        writer(moment)
            .filter(|fields| !fields.is_empty())
            .map(Value::Object)
    }
}
