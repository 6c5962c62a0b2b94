//! The test agent's model: a queue of scripted replies, one per model call
//! (a turn's step, or `generate_text`), and every request the core built
//! for it, so a test can assert on the prompt, the messages and the tools
//! the model was offered.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::Value;

use crate::model::{ModelMessage, ModelRequest};

use super::memory::Durable;
use super::reply::Reply;

/// The scripted model of a [`TestAgent`](super::TestAgent) (clones share it).
#[derive(Clone)]
pub struct ScriptedModel {
    pub(crate) durable: Rc<Durable>,
    pub(crate) next_call: Rc<Cell<u32>>,
}

impl ScriptedModel {
    /// The next model call answers with `reply`.
    pub fn reply(&self, reply: Reply) -> &Self {
        self.durable.model.borrow_mut().replies.push_back(reply);
        self
    }

    /// The next model call streams `text` (word by word) and stops.
    pub fn reply_text(&self, text: &str) -> &Self {
        self.reply(Reply::text(text))
    }

    /// The next model call asks for tool `name` with `input` (the step ends
    /// with tool calls: the turn runs the tool and calls the model again).
    /// Returns the tool call's id (`call_1`, `call_2`, …).
    pub fn reply_tool_call(&self, name: &str, input: Value) -> String {
        let n = self.next_call.get() + 1;
        self.next_call.set(n);
        let id = format!("call_{n}");
        self.reply(Reply::tool_call(&id, name, input));
        id
    }

    /// Replies scripted and not used yet.
    pub fn pending(&self) -> usize {
        self.durable.model.borrow().replies.len()
    }

    /// Every request the model received, in order: the system prompt and
    /// messages, the tools offered, the model settings.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.durable.model.borrow().requests.clone()
    }

    /// What the model was last shown as the result of tool call
    /// `tool_call_id` (the tool message's content), if it was shown one.
    pub fn tool_result(&self, tool_call_id: &str) -> Option<String> {
        let model = self.durable.model.borrow();
        let messages = model.requests.iter().rev().flat_map(|r| &r.messages);
        messages.into_iter().find_map(|m| match m {
            ModelMessage::Tool {
                tool_call_id: id,
                content,
            } if id == tool_call_id => Some(content.clone()),
            _ => None,
        })
    }

    /// The last request the model received.
    pub fn last_request(&self) -> Option<ModelRequest> {
        self.durable.model.borrow().requests.last().cloned()
    }
}
