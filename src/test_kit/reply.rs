//! A scripted model reply: what the test kit's model (and the core's own
//! simulator) streams back for one model call — text words, tool calls, a
//! provider failure or a stream cut off — as the core's `ModelEvent`s, with
//! the finish and the usage it reports.

use serde_json::Value;

use crate::model::{FinishReason, ModelEvent, ModelFailure, Usage};

/// How a reply ends.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// The model finishes for this reason.
    Finish(FinishReason),
    /// The call fails (HTTP error or broken stream) as described.
    Fail(ModelFailure),
}

/// One scripted model reply. Events are delivered `every_ms` apart in virtual
/// time, starting `every_ms` after the call (all at once when 0).
#[derive(Debug, Clone)]
pub struct Reply {
    pub events: Vec<ModelEvent>,
    pub end: End,
    pub every_ms: u64,
    /// The usage reported with the finish.
    pub usage: Option<Usage>,
}

impl Reply {
    /// Text split into words (each word after the first keeps its leading space).
    pub fn text(text: &str) -> Reply {
        let mut events = Vec::new();
        for (i, word) in text.split(' ').enumerate() {
            let delta = if i == 0 {
                word.to_string()
            } else {
                format!(" {word}")
            };
            events.push(ModelEvent::TextDelta(delta));
        }
        Reply {
            events,
            end: End::Finish(FinishReason::Stop),
            every_ms: 0,
            usage: None,
        }
    }

    /// `n` text tokens: `w0 w1 w2 …`.
    pub fn words(n: usize) -> Reply {
        let words: Vec<String> = (0..n).map(|i| format!("w{i}")).collect();
        Reply::text(&words.join(" "))
    }

    pub fn tool_call(id: &str, name: &str, args: Value) -> Reply {
        Reply::tool_calls(&[(id, name, args)])
    }

    /// Several tool calls in one step (parallel calls).
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
        let mut reply = Reply {
            events: Vec::new(),
            end: End::Finish(FinishReason::ToolCalls),
            every_ms: 0,
            usage: None,
        };
        for (id, name, args) in calls {
            reply = reply.and_tool_call(id, name, args.clone());
        }
        reply
    }

    /// The provider answers with an HTTP error before streaming anything
    /// (429 and 5xx are transient and retried; other statuses are not).
    pub fn http_error(status: u16, text: &str) -> Reply {
        Reply::failure(ModelFailure::http(status, text, None, None))
    }

    /// The call fails as `failure` says, before streaming anything.
    pub fn failure(failure: ModelFailure) -> Reply {
        Reply {
            events: Vec::new(),
            end: End::Fail(failure),
            every_ms: 0,
            usage: None,
        }
    }

    /// Adds a tool call after what the reply already streams; the step ends with tool calls.
    pub fn and_tool_call(mut self, id: &str, name: &str, args: Value) -> Reply {
        let index = self
            .events
            .iter()
            .filter(|e| matches!(e, ModelEvent::ToolCallStarted { .. }))
            .count() as u32;
        self.events.push(ModelEvent::ToolCallStarted {
            index,
            id: id.to_string(),
            name: name.to_string(),
        });
        let text = args.to_string();
        let mid = text
            .char_indices()
            .map(|(i, _)| i)
            .nth(text.chars().count() / 2)
            .unwrap_or(0);
        for piece in [&text[..mid], &text[mid..]] {
            if !piece.is_empty() {
                self.events.push(ModelEvent::ToolCallArgumentsDelta {
                    index,
                    delta: piece.to_string(),
                });
            }
        }
        self.end = End::Finish(FinishReason::ToolCalls);
        self
    }

    /// The provider reports these token counts with the finish.
    pub fn with_usage(mut self, prompt: u64, completion: u64, cached: Option<u64>) -> Reply {
        self.usage = Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cached_tokens: cached,
            cache_write_tokens: None,
        });
        self
    }

    pub fn every(mut self, ms: u64) -> Reply {
        self.every_ms = ms;
        self
    }

    /// Streams what it has, then the provider reports a transient error.
    pub fn then_fail(mut self, text: &str) -> Reply {
        self.end = End::Fail(ModelFailure::transient(text));
        self
    }

    /// Streams what it has, then the connection breaks off (no finish).
    pub fn then_cut(mut self) -> Reply {
        self.end = End::Fail(ModelFailure::cut_off(
            "Model stream failed: connection reset",
        ));
        self
    }
}
