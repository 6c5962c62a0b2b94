//! Which handler of a host carries out each core effect. A host (the
//! Durable Object's, or the test kit's in memory) implements
//! [`EffectHandlers`], one method per kind of effect, and hands the core's
//! effects to [`carry_out_effects`]: the one place that routes an effect to
//! its handler, so an effect the core gains is handled by every host or the
//! crate does not compile.

use std::rc::Rc;

use serde_json::Value;

use crate::core::{carry_out, AuthorCall, CallId, ConnId, Effect, Refused, Step, StoreOp};
use crate::core::{ChatError, ChatResponse, StepReport, SummaryRequest, ToolCall, ToolOutcome};
use crate::core::{StateSource, TranscriptFrame, TurnContext};
use crate::model::ModelRequest;

/// A host's handler for each kind of core effect (see the module header).
/// Handlers that start work (a model call, a tool, a hook) start it and
/// return; its answer reaches the core later as an event.
pub(crate) trait EffectHandlers {
    /// Writes `ops` as one transaction.
    fn write(&self, ops: Vec<StoreOp>) -> Result<(), Refused>;
    /// One write on its own (the core's `carry_out` hands writes over in
    /// runs; one arriving singly is written and a refusal told back).
    fn store(self: &Rc<Self>, op: StoreOp);
    fn send(&self, to: &[ConnId], frame: &str);
    fn send_transcript(&self, to: &[ConnId], frame: &TranscriptFrame);
    /// Keeps with `conn`'s socket whether its message list is the store's
    /// (given back in `Event::Adopted` after hibernation).
    fn note_list_matches(&self, conn: &ConnId, matches: bool);
    fn call_model(self: &Rc<Self>, call: CallId, request: ModelRequest);
    fn abort_model(&self, call: CallId);
    fn run_tool(self: &Rc<Self>, call: CallId, tool_call_id: String, name: String, input: Value);
    /// A tool the parent agent runs, asked of it over its connection.
    fn call_remote_tool(&self, call: CallId, conn: ConnId, id: String, name: String, input: Value);
    fn abort_tools(&self, calls: Vec<CallId>);
    fn run_author_alarm(self: &Rc<Self>);
    /// A schedule's callback, with its payload and which try of the run
    /// this is (`attempt`, from 1).
    fn run_schedule(
        self: &Rc<Self>,
        run: String,
        name: &str,
        callback: &str,
        payload: Value,
        attempt: u32,
    );
    fn prepare_turn(self: &Rc<Self>, turn: CallId, context: TurnContext);
    fn decide_tool_call(self: &Rc<Self>, call: CallId, tool: ToolCall);
    fn rewrite_tool_result(self: &Rc<Self>, call: CallId, tool: ToolCall, result: ToolOutcome);
    fn decide_chat_error(self: &Rc<Self>, call: CallId, error: ChatError);
    fn summarize(self: &Rc<Self>, call: CallId, request: SummaryRequest);
    fn turn_ended(self: &Rc<Self>, response: ChatResponse);
    fn step_ended(self: &Rc<Self>, report: StepReport);
    /// A callable run for a connection (its outcome told back as
    /// `Event::CallableDone`, unless the core cancels it first).
    fn run_callable(self: &Rc<Self>, conn: ConnId, id: String, method: String, args: Value);
    fn cancel_calls(&self, conn: ConnId, ids: Vec<String>);
    /// The author's `on_state_changed`.
    fn state_changed(self: &Rc<Self>, state: Rc<Value>, source: StateSource);
    /// The author's `on_message`, for a frame of the author's own types.
    fn other_frame(self: &Rc<Self>, conn: ConnId, text: String);
}

/// Carries out `effects` in order, each run of writes as one transaction
/// (see `core::carry_out`, which also holds back the frames announcing a
/// refused run); returns the writes refused, if any, for the core to be
/// told once all ran.
pub(crate) fn carry_out_effects<H: EffectHandlers>(
    host: &Rc<H>,
    effects: Vec<Effect>,
) -> Option<Refused> {
    carry_out(effects, |step| match step {
        Step::Write(ops) => host.write(ops),
        Step::Do(effect) => {
            carry_out_one(host, effect);
            Ok(())
        }
    })
}

/// Routes one effect to its handler.
fn carry_out_one<H: EffectHandlers>(host: &Rc<H>, effect: Effect) {
    match effect {
        Effect::Send { to, frame } => host.send(&to, &frame),
        Effect::SendTranscript { to, frame } => host.send_transcript(&to, &frame),
        Effect::NoteListMatches { conn, matches } => host.note_list_matches(&conn, matches),
        Effect::Store(op) => host.store(op),
        Effect::CallModel { call, request } => host.call_model(call, *request),
        Effect::AbortModel { call } => host.abort_model(call),
        Effect::RunTool {
            call,
            tool_call_id,
            tool_name,
            input,
        } => host.run_tool(call, tool_call_id, tool_name, input),
        Effect::CallRemoteTool {
            call,
            conn,
            tool_call_id,
            tool_name,
            input,
        } => host.call_remote_tool(call, conn, tool_call_id, tool_name, input),
        Effect::AbortTools { calls } => host.abort_tools(calls),
        Effect::AuthorAlarm => host.run_author_alarm(),
        Effect::RunSchedule {
            run,
            name,
            callback,
            payload,
            attempt,
        } => host.run_schedule(run, &name, &callback, payload, attempt),
        Effect::PrepareTurn { turn, context } => host.prepare_turn(turn, context),
        Effect::DecideToolCall { call, tool } => host.decide_tool_call(call, tool),
        Effect::RewriteToolResult { call, tool, result } => {
            host.rewrite_tool_result(call, tool, *result)
        }
        Effect::DecideChatError { call, error } => host.decide_chat_error(call, error),
        Effect::Summarize { call, request } => host.summarize(call, request),
        Effect::TurnEnded(response) => host.turn_ended(response),
        Effect::StepEnded(report) => host.step_ended(report),
        Effect::Author(call) => match call {
            AuthorCall::RunCallable {
                conn,
                id,
                method,
                args,
            } => host.run_callable(conn, id, method, args),
            AuthorCall::CancelCalls { conn, ids } => host.cancel_calls(conn, ids),
            AuthorCall::StateChanged { state, source } => host.state_changed(state, source),
            AuthorCall::OtherFrame { conn, text } => host.other_frame(conn, text),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    /// Names each handler called, in order; refuses every write when asked.
    #[derive(Default)]
    struct Recorder {
        refuse_writes: bool,
        calls: RefCell<Vec<String>>,
    }

    impl Recorder {
        fn note(&self, call: impl Into<String>) {
            self.calls.borrow_mut().push(call.into());
        }
    }

    impl EffectHandlers for Recorder {
        fn write(&self, ops: Vec<StoreOp>) -> Result<(), Refused> {
            self.note(format!("write {}", ops.len()));
            match self.refuse_writes {
                true => Err((ops, "disk full".into())),
                false => Ok(()),
            }
        }
        fn store(self: &Rc<Self>, _: StoreOp) {
            self.note("store");
        }
        fn send(&self, _: &[ConnId], frame: &str) {
            self.note(format!("send {frame}"));
        }
        fn note_list_matches(&self, _: &ConnId, matches: bool) {
            self.note(format!("note_list_matches {matches}"));
        }
        fn send_transcript(&self, _: &[ConnId], _: &TranscriptFrame) {
            self.note("send_transcript");
        }
        fn call_model(self: &Rc<Self>, call: CallId, _: ModelRequest) {
            self.note(format!("call_model {call}"));
        }
        fn abort_model(&self, call: CallId) {
            self.note(format!("abort_model {call}"));
        }
        fn run_tool(self: &Rc<Self>, _: CallId, _: String, name: String, _: Value) {
            self.note(format!("run_tool {name}"));
        }
        fn call_remote_tool(&self, _: CallId, _: ConnId, _: String, name: String, _: Value) {
            self.note(format!("call_remote_tool {name}"));
        }
        fn abort_tools(&self, calls: Vec<CallId>) {
            self.note(format!("abort_tools {calls:?}"));
        }
        fn run_author_alarm(self: &Rc<Self>) {
            self.note("run_author_alarm");
        }
        fn run_schedule(self: &Rc<Self>, _: String, name: &str, _: &str, _: Value, _: u32) {
            self.note(format!("run_schedule {name}"));
        }
        fn prepare_turn(self: &Rc<Self>, _: CallId, _: TurnContext) {
            self.note("prepare_turn");
        }
        fn decide_tool_call(self: &Rc<Self>, _: CallId, _: ToolCall) {
            self.note("decide_tool_call");
        }
        fn rewrite_tool_result(self: &Rc<Self>, _: CallId, _: ToolCall, _: ToolOutcome) {
            self.note("rewrite_tool_result");
        }
        fn decide_chat_error(self: &Rc<Self>, _: CallId, _: ChatError) {
            self.note("decide_chat_error");
        }
        fn summarize(self: &Rc<Self>, _: CallId, _: SummaryRequest) {
            self.note("summarize");
        }
        fn turn_ended(self: &Rc<Self>, _: ChatResponse) {
            self.note("turn_ended");
        }
        fn step_ended(self: &Rc<Self>, _: StepReport) {
            self.note("step_ended");
        }
        fn run_callable(self: &Rc<Self>, _: ConnId, _: String, method: String, _: Value) {
            self.note(format!("run_callable {method}"));
        }
        fn cancel_calls(&self, _: ConnId, ids: Vec<String>) {
            self.note(format!("cancel_calls {ids:?}"));
        }
        fn state_changed(self: &Rc<Self>, _: Rc<Value>, _: StateSource) {
            self.note("state_changed");
        }
        fn other_frame(self: &Rc<Self>, _: ConnId, text: String) {
            self.note(format!("other_frame {text}"));
        }
    }

    fn delete(id: &str) -> Effect {
        Effect::Store(StoreOp::DeleteMessage { id: id.into() })
    }

    fn send(frame: &str) -> Effect {
        Effect::Send {
            to: vec!["tab".into()],
            frame: frame.into(),
        }
    }

    #[test]
    fn each_effect_reaches_its_handler_in_order_and_a_run_of_writes_is_one_write() {
        let host = Rc::new(Recorder::default());
        let conn: ConnId = "tab".into();
        let effects = vec![
            delete("m1"),
            delete("m2"),
            send("f1"),
            Effect::AbortModel { call: 7 },
            Effect::AbortTools { calls: vec![3] },
            Effect::AuthorAlarm,
            Effect::Author(AuthorCall::RunCallable {
                conn: conn.clone(),
                id: "c1".into(),
                method: "add".into(),
                args: Value::Null,
            }),
            Effect::Author(AuthorCall::CancelCalls {
                conn: conn.clone(),
                ids: vec!["c1".into()],
            }),
            Effect::Author(AuthorCall::OtherFrame {
                conn,
                text: "ping".into(),
            }),
            Effect::Author(AuthorCall::StateChanged {
                state: Rc::new(Value::Null),
                source: StateSource::Server,
            }),
        ];
        assert_eq!(carry_out_effects(&host, effects), None);
        assert_eq!(
            *host.calls.borrow(),
            [
                "write 2",
                "send f1",
                "abort_model 7",
                "abort_tools [3]",
                "run_author_alarm",
                "run_callable add",
                "cancel_calls [\"c1\"]",
                "other_frame ping",
                "state_changed",
            ]
        );
    }

    #[test]
    fn a_refused_write_is_handed_back_and_the_frames_announcing_it_are_held() {
        let host = Rc::new(Recorder {
            refuse_writes: true,
            ..Recorder::default()
        });
        let effects = vec![delete("m1"), send("announces m1"), delete("m2")];
        let refused = carry_out_effects(&host, effects).expect("refused");
        assert_eq!(refused.1, "disk full");
        assert!(!host.calls.borrow().iter().any(|c| c.starts_with("send")));
    }
}
