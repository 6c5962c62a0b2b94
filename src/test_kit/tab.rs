//! A tab connected to a test agent: it sends the frames `useAgentChat` and
//! the agent client send (a chat message, a state change, a call, an
//! approval, a client tool's result, a cancel) and records every frame it
//! receives — the real wire frames, so a test sees what the browser would.

use std::cell::Cell;
use std::rc::Rc;

use serde_json::{json, Value};

use crate::agent::CallContext;
use crate::core::ConnId;

use super::client_frames::{approval, cancel, chat_request, tool_result, user};
use super::kit::Kit;

/// The frame type of a chat turn's chunks and end.
const RESPONSE: &str = "cf_agent_use_chat_response";

/// One connected tab (see the module header).
pub struct Tab {
    pub(crate) kit: Rc<Kit>,
    pub(crate) conn: ConnId,
    pub(crate) sent: Cell<u32>,
}

impl Tab {
    /// The connection's id (the client's `_pk`).
    pub fn id(&self) -> &str {
        &self.conn
    }

    fn next_id(&self, kind: &str) -> String {
        self.sent.set(self.sent.get() + 1);
        format!("{}-{kind}-{}", self.conn, self.sent.get())
    }

    /// Sends one text frame as the tab would; the agent handles it (and the
    /// code it starts runs) before this returns. Virtual time does not move.
    pub fn send_frame(&self, text: &str) {
        let host = self.kit.host();
        let (conn, text) = (self.conn.clone(), text.to_string());
        let readonly = (self.kit.durable.tabs.borrow().get(&conn)).is_some_and(|t| t.readonly);
        host.dispatch(match readonly {
            true => crate::core::Event::ReadonlyFrame { conn, text },
            false => crate::core::Event::Frame { conn, text },
        });
        self.kit.run_tasks();
    }

    /// `sendMessage(text)`: a chat request carrying the transcript the tab
    /// holds and a new user message. Returns the request id (its chunks
    /// and end are `cf_agent_use_chat_response` frames with that id). Run
    /// the turn with `TestAgent::run_until_idle`.
    pub fn send_message(&self, text: &str) -> String {
        let id = self.next_id("req");
        let mut messages: Vec<Value> = (self.kit.host().core().messages().iter())
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect();
        messages.push(user(&self.next_id("msg"), text));
        self.send_frame(&chat_request(&id, &messages));
        id
    }

    /// `setState(state)` on the agent client.
    pub fn set_state(&self, state: Value) {
        self.send_frame(&json!({"type": "cf_agent_state", "state": state}).to_string());
    }

    /// `agent.call(method, args)`: sends the call, runs the agent until it
    /// is idle and returns the call's result, or the error its promise
    /// rejects with.
    pub fn call(&self, method: &str, args: Value) -> Result<Value, String> {
        let id = self.next_id("call");
        let frame = json!({"type": "rpc", "id": id, "method": method, "args": args});
        self.send_frame(&frame.to_string());
        self.kit.run_until_idle();
        let reply = self
            .frames()
            .into_iter()
            .rev()
            .find(|f| f["type"] == "rpc" && f["id"] == id.as_str() && f["done"] != false);
        match reply {
            Some(f) if f["success"] == true => Ok(f["result"].clone()),
            Some(f) => Err(f["error"].as_str().unwrap_or("call failed").to_string()),
            None => Err(format!("the call {method} has not ended")),
        }
    }

    /// Answers the approval the agent asked for tool call `tool_call_id`
    /// (`addToolApprovalResponse`); the turn goes on with the answer.
    pub fn approve(&self, tool_call_id: &str, approved: bool) {
        self.send_frame(&approval(tool_call_id, approved, true));
    }

    /// A client tool's output for tool call `tool_call_id` (`addToolOutput`).
    pub fn tool_result(&self, tool_call_id: &str, output: Value) {
        self.send_frame(&tool_result(tool_call_id, output, true));
    }

    /// Stops chat request `request_id` (`stop()`).
    pub fn cancel(&self, request_id: &str) {
        self.send_frame(&cancel(request_id));
    }

    /// Closes the tab's socket: the agent's `on_close` runs.
    pub fn close(&self) {
        let was_open = {
            let mut tabs = self.kit.durable.tabs.borrow_mut();
            tabs.get_mut(&self.conn)
                .is_some_and(|t| std::mem::replace(&mut t.open, false))
        };
        if was_open {
            self.kit.host().disconnect(&self.conn);
            self.kit.run_tasks();
        }
    }

    /// Every frame the tab received, in order (JSON; a frame of the
    /// author's own that is not JSON is a string).
    pub fn frames(&self) -> Vec<Value> {
        let tabs = self.kit.durable.tabs.borrow();
        tabs.get(&self.conn)
            .map(|t| t.frames.clone())
            .unwrap_or_default()
    }

    /// The frames received since the last call, forgotten as they are read.
    pub fn take_frames(&self) -> Vec<Value> {
        let mut tabs = self.kit.durable.tabs.borrow_mut();
        tabs.get_mut(&self.conn)
            .map(|t| std::mem::take(&mut t.frames))
            .unwrap_or_default()
    }

    /// The frames of type `kind` received, in order.
    pub fn frames_of(&self, kind: &str) -> Vec<Value> {
        let frames = self.frames().into_iter();
        frames.filter(|f| f["type"] == kind).collect()
    }

    /// The chunks (`UIMessageChunk`s, parsed) of every chat turn's stream
    /// the tab received, replayed ones included, in order.
    pub fn chunks(&self) -> Vec<Value> {
        let frames = self.frames_of(RESPONSE).into_iter();
        let bodies = frames.filter_map(|f| f["body"].as_str().map(str::to_string));
        bodies
            .filter_map(|body| serde_json::from_str(&body).ok())
            .collect()
    }

    /// The text the tab saw streamed live (every `text-delta`, joined).
    pub fn stream_text(&self) -> String {
        let frames = self.frames_of(RESPONSE).into_iter();
        let live = frames.filter(|f| f.get("replay").is_none());
        let bodies = live.filter_map(|f| f["body"].as_str().map(str::to_string));
        let chunks = bodies.filter_map(|b| serde_json::from_str::<Value>(&b).ok());
        let deltas = chunks.filter(|c| c["type"] == "text-delta");
        deltas
            .map(|c| c["delta"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The agent's synced state as this tab last received it.
    pub fn state(&self) -> Option<Value> {
        let last = self.frames_of("cf_agent_state").pop()?;
        Some(last["state"].clone())
    }

    /// The tool call ids the agent asked this tab to approve
    /// (`approval-requested` tool parts), in order.
    pub fn approvals_requested(&self) -> Vec<String> {
        let chunks = self.chunks().into_iter();
        let asked = chunks.filter(|c| c["type"] == "tool-approval-request");
        asked
            .filter_map(|c| c["toolCallId"].as_str().map(str::to_string))
            .collect()
    }

    /// The context a call from this tab gets: to run a callable's closure
    /// directly (`callable.call_with(args, tab.call_context())`).
    pub fn call_context(&self) -> CallContext {
        let host = self.kit.host();
        CallContext {
            connection: host.connection(&self.conn),
            agent: host.handle(),
        }
    }

    /// The connection's own state (`Connection::set_state`).
    pub fn connection_state(&self) -> Option<Value> {
        let tabs = self.kit.durable.tabs.borrow();
        let text = tabs.get(&self.conn)?.state.clone()?;
        serde_json::from_str(&text).ok()
    }

    /// Whether the tab's socket is open.
    pub fn is_open(&self) -> bool {
        (self.kit.durable.tabs.borrow().get(&self.conn)).is_some_and(|t| t.open)
    }

    /// The close code and reason the agent closed the tab with, if it did.
    pub fn closed_with(&self) -> Option<(u16, String)> {
        self.kit
            .durable
            .tabs
            .borrow()
            .get(&self.conn)?
            .closed_with
            .clone()
    }

    /// The tags the tab was given when it connected.
    pub fn tags(&self) -> Vec<String> {
        let tabs = self.kit.durable.tabs.borrow();
        tabs.get(&self.conn)
            .map(|t| t.tags.clone())
            .unwrap_or_default()
    }
}
