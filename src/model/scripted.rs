//! The scripted model (`MODEL_PROVIDER=scripted`): a [`ModelProvider`] that
//! answers from the conversation alone, with no key, no network and no other
//! process, for development (`wrangler dev` with no key) and for tests. Its
//! reply is a pure function of the request, read by the rules of
//! `scripted/rules.rs` (the same directive syntax as the repository's scripted
//! model server): `[tool:NAME:{json}]` calls a tool, plain-language cases
//! (`weather in Paris`, `timezone`, `delete notes.txt`, …) call the matching
//! offered tool, a tool result is answered with `Tool results: …`, anything
//! else is echoed as `You said: …`. This file owns the provider and how a
//! planned reply becomes [`ModelEvent`]s; the directive syntax is in
//! docs/guides/configuration.md (“The scripted model”).

mod rules;

use super::openai::StreamDecoder;
use super::{
    CallPlan, FinishReason, LocalReply, ModelEvent, ModelFailure, ModelMessage, ModelProvider,
    ModelRequest, ResponseDecoder, Usage,
};
pub use rules::{plan_reply, ScriptedReply};

/// The scripted model as a provider. Every call is answered at once, in
/// the Worker's own isolate ([`CallPlan::Local`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptedModel;

impl ScriptedModel {
    pub fn new() -> ScriptedModel {
        ScriptedModel
    }

    /// The reply to `request`: the events a streamed answer produces, then
    /// how the stream ends (`Ok` after `Finished`, or the failure a
    /// directive such as `[stream-error]` asked for).
    pub fn reply(&self, request: &ModelRequest) -> LocalReply {
        let ids = CallIds::for_request(request);
        let prompt_tokens = request.messages.iter().map(message_words).sum::<u64>();
        let mut events = Vec::new();
        let (reason, end, completion_tokens) = match plan_reply(request) {
            ScriptedReply::Tools(calls) => {
                let count = calls.len() as u64;
                for (index, (name, arguments)) in calls.into_iter().enumerate() {
                    let index = index as u32;
                    events.push(ModelEvent::ToolCallStarted {
                        index,
                        id: ids.id(index),
                        name,
                    });
                    events.push(ModelEvent::ToolCallArgumentsDelta {
                        index,
                        delta: arguments,
                    });
                }
                (FinishReason::ToolCalls, Ok(()), count)
            }
            ScriptedReply::Text(text) => {
                let words = words_of(&text);
                let count = words.len() as u64;
                events.extend(words.into_iter().map(ModelEvent::TextDelta));
                (FinishReason::Stop, Ok(()), count)
            }
            ScriptedReply::Failure { said, failure } => {
                events.extend(words_of(&said).into_iter().map(ModelEvent::TextDelta));
                return LocalReply {
                    events,
                    end: Err(failure),
                };
            }
        };
        events.push(ModelEvent::Finished {
            reason,
            usage: Some(Usage {
                prompt_tokens,
                completion_tokens,
                cached_tokens: None,
                cache_write_tokens: None,
            }),
        });
        LocalReply { events, end }
    }
}

impl ModelProvider for ScriptedModel {
    fn plan(&self, request: &ModelRequest) -> CallPlan {
        CallPlan::Local(self.reply(request))
    }

    /// Unused: a local reply is events already, not a body to decode.
    fn decoder(&self) -> Box<dyn ResponseDecoder> {
        Box::new(StreamDecoder::new())
    }

    fn http_failure(
        &self,
        status: u16,
        body: &str,
        _header: &dyn Fn(&str) -> Option<String>,
    ) -> ModelFailure {
        ModelFailure::permanent(format!("scripted model: status {status}: {body}"))
    }
}

/// A reply's words, each with the whitespace after it (the pieces a
/// streamed answer arrives in).
fn words_of(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if !c.is_whitespace() && current.ends_with(char::is_whitespace) {
            words.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A rough token count of one message: its words, plus four.
fn message_words(message: &ModelMessage) -> u64 {
    let text = match message {
        ModelMessage::System { content } | ModelMessage::User { content, .. } => content.as_str(),
        ModelMessage::Assistant { content, .. } => content.as_deref().unwrap_or(""),
        ModelMessage::Tool { content, .. } => content.as_str(),
    };
    text.split_whitespace().count() as u64 + 4
}

/// Tool-call ids that differ between the steps of a conversation and stay
/// the same when one request is asked again (a retry, a recovery): a hash of
/// the whole conversation, then the call's place in the reply.
struct CallIds(u64);

impl CallIds {
    fn for_request(request: &ModelRequest) -> CallIds {
        let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
        let _ = std::fmt::Write::write_fmt(&mut hash, format_args!("{:?}", request.messages));
        CallIds(hash.0)
    }

    fn id(&self, index: u32) -> String {
        format!("call_{:012x}_{index}", self.0 & 0xffff_ffff_ffff)
    }
}

/// FNV-1a over text written to it (the messages' debug text, streamed, not
/// collected): the same in every build and isolate.
struct Fnv(u64);

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for byte in text.bytes() {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
