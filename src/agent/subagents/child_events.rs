//! What a parent hears from a child agent's `chat()`, independent of the
//! transport: the `ChatCallback` an author implements, the events a child
//! sends through Think's `StreamCallback` shape (`onStart`, `onEvent`,
//! `onDone`, `onError`, `onInterrupted`), the client tool calls it asks the
//! parent to run, and `EventRelay`, which hands those events to the
//! callback in order and decides what the end of the call means.

use std::rc::Rc;

use serde::Deserialize;
use serde_json::Value;

use crate::agent::tools::ToolFuture;

/// Runs a child's calls to the parent's client tools.
pub type ClientToolExecutor = Rc<dyn Fn(ClientToolCall) -> ToolFuture>;

/// Receives the child's turn as it happens.
pub trait ChatCallback {
    fn on_start(&mut self, _request_id: &str) {}
    /// Each `UIMessageChunk`, as the same JSON a tab receives.
    fn on_event(&mut self, _chunk_json: &str) {}
    fn on_done(&mut self) {}
    fn on_error(&mut self, _text: &str) {}
}

/// A client tool call the child's model made, for the parent's executor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientToolCall {
    pub tool_name: String,
    #[serde(default)]
    pub tool_call_id: String,
    #[serde(default)]
    pub input: Value,
}

/// One call of the child on the parent's stream callback.
#[derive(Debug, Clone, PartialEq)]
pub enum ChildEvent {
    /// `onStart({requestId})`: the child accepted the turn under this id.
    Start(String),
    /// `onEvent(json)`: one `UIMessageChunk`.
    Chunk(String),
    /// `onDone()`: the turn completed.
    Done,
    /// `onError(text)`: the turn failed.
    Error(String),
    /// `onInterrupted()`: this call will not carry the turn's end (the
    /// child finishes it later, elsewhere, or gave up).
    Interrupted,
}

/// How the child's `chat()` call itself ended.
#[derive(Debug, Clone, PartialEq)]
pub enum CallEnd {
    /// Its promise resolved.
    Returned,
    /// Its promise rejected (the child threw, or the call broke).
    Failed(String),
    /// The parent stopped waiting: its deadline passed.
    TimedOut(u64),
}

/// Hands a child's events to a callback and reports the call's end once.
#[derive(Debug, Default)]
pub struct EventRelay {
    request_id: Option<String>,
    /// `on_done` or a terminal `on_error` was reported.
    ended: bool,
}

impl EventRelay {
    /// The child's request id, once it said it.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// Whether the callback already heard the turn's end.
    pub fn ended(&self) -> bool {
        self.ended
    }

    pub fn relay(&mut self, event: ChildEvent, callback: &mut dyn ChatCallback) {
        if self.ended {
            return;
        }
        match event {
            ChildEvent::Start(id) => {
                if self.request_id.is_none() {
                    callback.on_start(&id);
                    self.request_id = Some(id);
                }
            }
            ChildEvent::Chunk(json) => callback.on_event(&json),
            ChildEvent::Done => {
                self.ended = true;
                callback.on_done();
            }
            ChildEvent::Error(text) => {
                self.ended = true;
                callback.on_error(&text);
            }
            ChildEvent::Interrupted => {
                self.ended = true;
                callback.on_error("the child agent's turn was interrupted before it ended");
            }
        }
    }

    /// The call is over (every event it sent was relayed first). A call
    /// that returns without an end was aborted: the callback hears nothing
    /// more, as with an abort on any other path.
    pub fn finish(&mut self, end: CallEnd, callback: &mut dyn ChatCallback) {
        if self.ended {
            return;
        }
        match end {
            CallEnd::Returned => {}
            CallEnd::Failed(reason) => {
                self.ended = true;
                callback.on_error(&format!("the child agent failed: {reason}"));
            }
            CallEnd::TimedOut(ms) => {
                self.ended = true;
                callback.on_error(&format!("the child agent did not finish within {ms} ms"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<String>);
    impl ChatCallback for Log {
        fn on_start(&mut self, id: &str) {
            self.0.push(format!("start {id}"));
        }
        fn on_event(&mut self, json: &str) {
            self.0.push(format!("event {json}"));
        }
        fn on_done(&mut self) {
            self.0.push("done".into());
        }
        fn on_error(&mut self, text: &str) {
            self.0.push(format!("error {text}"));
        }
    }

    fn run(events: Vec<ChildEvent>, end: CallEnd) -> Vec<String> {
        let mut log = Log::default();
        let mut relay = EventRelay::default();
        for e in events {
            relay.relay(e, &mut log);
        }
        relay.finish(end, &mut log);
        log.0
    }

    #[test]
    fn a_completed_turn_reaches_the_callback_in_order() {
        let log = run(
            vec![
                ChildEvent::Start("r1".into()),
                ChildEvent::Chunk(r#"{"type":"start"}"#.into()),
                ChildEvent::Chunk(r#"{"type":"text-delta","id":"t","delta":"hi"}"#.into()),
                ChildEvent::Done,
            ],
            CallEnd::Returned,
        );
        assert_eq!(
            log,
            [
                "start r1",
                r#"event {"type":"start"}"#,
                r#"event {"type":"text-delta","id":"t","delta":"hi"}"#,
                "done"
            ]
        );
    }

    #[test]
    fn nothing_after_the_end_reaches_the_callback() {
        let log = run(
            vec![
                ChildEvent::Error("model failed".into()),
                ChildEvent::Chunk("{}".into()),
                ChildEvent::Done,
            ],
            CallEnd::Failed("late".into()),
        );
        assert_eq!(log, ["error model failed"]);
    }

    #[test]
    fn a_rejected_call_without_an_end_is_an_error() {
        let log = run(
            vec![ChildEvent::Start("r1".into())],
            CallEnd::Failed("Durable Object reset".into()),
        );
        assert_eq!(
            log,
            [
                "start r1",
                "error the child agent failed: Durable Object reset"
            ]
        );
    }

    #[test]
    fn an_aborted_call_returns_without_done_or_error() {
        let log = run(
            vec![
                ChildEvent::Start("r1".into()),
                ChildEvent::Chunk("{}".into()),
            ],
            CallEnd::Returned,
        );
        assert_eq!(log, ["start r1", "event {}"]);
    }

    #[test]
    fn a_deadline_and_an_interruption_are_errors() {
        assert_eq!(
            run(vec![], CallEnd::TimedOut(50)),
            ["error the child agent did not finish within 50 ms"]
        );
        assert_eq!(
            run(vec![ChildEvent::Interrupted], CallEnd::Returned),
            ["error the child agent's turn was interrupted before it ended"]
        );
    }

    #[test]
    fn a_second_start_is_ignored() {
        let mut relay = EventRelay::default();
        let mut log = Log::default();
        relay.relay(ChildEvent::Start("a".into()), &mut log);
        relay.relay(ChildEvent::Start("b".into()), &mut log);
        assert_eq!(relay.request_id(), Some("a"));
        assert_eq!(log.0, ["start a"]);
    }

    #[test]
    fn a_tool_call_reads_thinks_shape() {
        let call: ClientToolCall = serde_json::from_str(
            r#"{"toolName":"get_user_timezone","input":{"a":1},"toolCallId":"c1"}"#,
        )
        .unwrap();
        assert_eq!(call.tool_name, "get_user_timezone");
        assert_eq!(call.tool_call_id, "c1");
        assert_eq!(call.input, serde_json::json!({"a": 1}));
    }
}
