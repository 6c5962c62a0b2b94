//! Which handler of a host carries out each core effect. A host (the
//! Durable Object's, or the test kit's in memory) implements
//! [`EffectHandlers`], one method per kind of effect, and hands the core's
//! effects to [`carry_out_effects`]: the one place that routes an effect to
//! its handler, so an effect the core gains is handled by every host or the
//! crate does not compile.

use std::rc::Rc;

use serde_json::Value;

use crate::core::{carry_out, AuthorCall, CallId, ConnId, Effect, Step, StoreOp};
use crate::core::{ChatError, ChatResponse, StepReport, SummaryRequest, ToolCall, ToolOutcome};
use crate::core::{StateSource, TranscriptFrame, TurnContext};
use crate::model::ModelRequest;

/// A write the store refused: its operations and the error.
pub(crate) type RefusedWrite = (Vec<StoreOp>, String);

/// A host's handler for each kind of core effect (see the module header).
/// Handlers that start work (a model call, a tool, a hook) start it and
/// return; its answer reaches the core later as an event.
pub(crate) trait EffectHandlers {
    /// Writes `ops` as one transaction.
    fn write(&self, ops: Vec<StoreOp>) -> Result<(), RefusedWrite>;
    /// One write on its own (the core's `carry_out` hands writes over in
    /// runs; one arriving singly is written and a refusal told back).
    fn store(self: &Rc<Self>, op: StoreOp);
    fn send(&self, to: &[ConnId], frame: &str);
    fn send_transcript(&self, to: &[ConnId], frame: &TranscriptFrame);
    fn call_model(self: &Rc<Self>, call: CallId, request: ModelRequest);
    fn abort_model(&self, call: CallId);
    fn run_tool(self: &Rc<Self>, call: CallId, tool_call_id: String, name: String, input: Value);
    /// A tool the parent agent runs, asked of it over its connection.
    fn call_remote_tool(&self, call: CallId, conn: ConnId, id: String, name: String, input: Value);
    fn abort_tools(&self, calls: Vec<CallId>);
    fn run_author_alarm(self: &Rc<Self>);
    fn run_schedule(self: &Rc<Self>, run: String, name: &str, callback: &str, payload: Value);
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

/// Carries out `effects` in order, runs of writes as one transaction each
/// (see `core::carry_out`); returns the write the store refused, if one was
/// (the effects after it are not carried out).
pub(crate) fn carry_out_effects<H: EffectHandlers>(
    host: &Rc<H>,
    effects: Vec<Effect>,
) -> Option<RefusedWrite> {
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
        } => host.run_schedule(run, &name, &callback, payload),
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
