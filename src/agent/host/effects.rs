//! Carrying out the core's effects in the Durable Object: its writes as one
//! transaction per run (a refused write told back to the core), frames to
//! tabs, model calls, tool runs and their hooks, the author's alarm and
//! schedules, and what the core asks of the author's code for the agent as
//! a whole (`AuthorCall`: a callable run for a connection, abortable until
//! the core cancels it; `on_state_changed`; `on_message` for frames of the
//! author's own types), each awaited off the event that asked for it. Which effect goes to which handler is
//! `agent::effect_handlers`, shared with the test kit's host.

use std::rc::Rc;

use serde_json::Value;
use wasm_bindgen_futures::spawn_local;

use crate::agent::effect_handlers::{carry_out_effects, EffectHandlers};
use crate::core::{CallId, ConnId, Event, Refused, ScheduleOutcome, StateSource, StoreOp};
use crate::core::{ChatError, ChatResponse, StepReport, SummaryRequest, ToolCall, ToolOutcome};
use crate::core::{Effect, TranscriptFrame, TurnContext};
use crate::model::ModelRequest;
use crate::protocol::channel::rpc_tool_call;

use crate::agent::callables::CallContext;
use crate::agent::handle::schedule_callback::start_registered;
use crate::agent::tools::context::ToolContext;

#[cfg(feature = "debug-routes")]
use super::debug_author;
use super::AgentHost;

impl AgentHost {
    pub(super) fn execute(self: &Rc<Self>, effects: Vec<Effect>) {
        if self.destroyed.get() {
            // Erased: nothing is written, sent or started again.
            return;
        }
        if let Some((ops, error)) = carry_out_effects(self, effects) {
            self.dispatch(Event::StoreWriteFailed { ops, error });
        }
        self.settled_waiters.wake(&self.core);
    }
}

impl EffectHandlers for AgentHost {
    fn write(&self, ops: Vec<StoreOp>) -> Result<(), Refused> {
        #[cfg(feature = "debug-routes")]
        let ops: Vec<StoreOp> = ops.into_iter().filter(|op| !self.debug.skips(op)).collect();
        self.store.apply_all(ops).map_err(|(ops, e)| {
            self.log_line(
                crate::log::LogLevel::Error,
                &format!("storage write failed: {e}"),
            );
            (ops, e.to_string())
        })
    }

    fn store(self: &Rc<Self>, op: StoreOp) {
        self.execute(vec![Effect::Store(op)]);
    }

    fn send(&self, to: &[ConnId], frame: &str) {
        self.send_frame(to, frame);
    }

    fn send_transcript(&self, to: &[ConnId], frame: &TranscriptFrame) {
        self.send_transcript_frame(to, frame);
    }

    fn note_list_matches(&self, conn: &ConnId, matches: bool) {
        self.note_socket_list_matches(conn, matches);
    }

    fn call_model(self: &Rc<Self>, call: CallId, request: ModelRequest) {
        let host = self.clone();
        spawn_local(async move { host.run_model(call, request).await });
    }

    fn abort_model(&self, call: CallId) {
        if let Some(controller) = self.model_calls.borrow_mut().remove(&call) {
            controller.abort();
        }
    }

    fn run_tool(
        self: &Rc<Self>,
        call: CallId,
        tool_call_id: String,
        tool_name: String,
        input: Value,
    ) {
        let host = self.clone();
        let tool = self.tools.get(&tool_name).cloned();
        let mcp_tool = self.mcp_tool(&tool_name).filter(|_| tool.is_none());
        let signal = self.tool_runs.start(call);
        let turn = self.core.borrow().running_request_id();
        let scope = self.child_call_scope(turn.as_deref());
        let ctx = ToolContext {
            tool_call_id: tool_call_id.clone(),
            abort: signal.clone(),
            messages: self.core.borrow().turn_messages(),
            env: Some(self.env.clone()),
            agent: Some(self.handle()),
            delegation_depth: scope.depth(),
        };
        spawn_local(scope.run(async move {
            let result = match (tool, mcp_tool) {
                (Some(tool), _) => tool.call_with(input, ctx).await,
                (None, Some(target)) => host.call_mcp_tool(target, input, signal).await,
                (None, None) => Err(format!("Tool '{tool_name}' is not available.")),
            };
            host.tool_runs.end(call);
            host.dispatch(Event::ToolDone {
                call,
                tool_call_id,
                result,
            });
        }));
    }

    fn call_remote_tool(&self, call: CallId, conn: ConnId, id: String, name: String, input: Value) {
        let frame = rpc_tool_call(call, &id, &name, &input);
        if self.rpc.deliver(&conn, &frame) {
            return;
        }
        if let Some(ws) = self.sockets.borrow().get(&conn) {
            let _ = ws.send_with_str(&frame);
        }
    }

    fn abort_tools(&self, calls: Vec<CallId>) {
        self.tool_runs.abort(calls);
    }

    fn run_author_alarm(self: &Rc<Self>) {
        let run = (self.on_author_alarm)(self.handle());
        spawn_local(self.child_call_scope(None).run(run));
    }

    /// A schedule is due: its callback runs with its payload and the run's
    /// attempt number (a callback the definition does not register, or a
    /// payload it cannot read, is reported as unrunnable, which the core
    /// logs as given up), and how it ended is reported
    /// (the core keeps the run owed until then, so a run cut by an eviction
    /// starts again).
    fn run_schedule(
        self: &Rc<Self>,
        run: String,
        name: &str,
        callback: &str,
        payload: Value,
        attempt: u32,
    ) {
        let callbacks = &self.schedule_callbacks;
        let started = start_registered(
            callbacks,
            (name, callback),
            (payload, attempt),
            self.handle(),
        );
        let running = match started {
            Ok(running) => running,
            // The core logs the run given up, with `e` as the reason.
            Err(e) => {
                let outcome = ScheduleOutcome::Unrunnable(e);
                return self.dispatch(Event::ScheduleRan { run, outcome });
            }
        };
        let host = self.clone();
        spawn_local(self.child_call_scope(None).run(async move {
            let outcome = ScheduleOutcome::of(running.await);
            host.dispatch(Event::ScheduleRan { run, outcome });
        }));
    }

    fn prepare_turn(self: &Rc<Self>, turn: CallId, context: TurnContext) {
        let host = self.clone();
        let before_turn = self.hooks.before_turn.clone();
        let agent = self.handle();
        #[cfg(feature = "debug-routes")]
        let echoed = (self.debug.tools
            && (context.body.contains_key("echoBody")
                || context.body.contains_key("structuredOutput")))
        .then(|| context.body.clone());
        spawn_local(async move {
            host.mcp_ready_for_turn().await;
            #[allow(unused_mut)]
            let mut config = before_turn(context, agent).await;
            #[cfg(feature = "debug-routes")]
            if let Some(body) = echoed {
                debug_author::echo_body(&body, &mut config);
            }
            host.dispatch(Event::TurnPrepared {
                turn,
                config: Box::new(config),
            });
        });
    }

    fn decide_tool_call(self: &Rc<Self>, call: CallId, tool: ToolCall) {
        let host = self.clone();
        #[cfg(feature = "debug-routes")]
        let listed = (self.debug.tools).then(|| (tool.clone(), self.handle()));
        let decide = (self.hooks.before_tool_call)(tool, self.handle());
        spawn_local(async move {
            #[allow(unused_mut)]
            let mut decision = decide.await;
            #[cfg(feature = "debug-routes")]
            if let (crate::core::ToolCallDecision::Allow, Some((tool, agent))) = (&decision, listed)
            {
                if let Some(blocked) = debug_author::decide(&tool, &agent).await {
                    decision = blocked;
                }
            }
            host.dispatch(Event::ToolCallDecided { call, decision });
        });
    }

    fn rewrite_tool_result(self: &Rc<Self>, call: CallId, tool: ToolCall, result: ToolOutcome) {
        let host = self.clone();
        #[cfg(feature = "debug-routes")]
        let listed = (self.debug.tools).then(|| (tool.clone(), result.clone(), self.handle()));
        let rewrite = (self.hooks.after_tool_call)((tool, result), self.handle());
        spawn_local(async move {
            #[allow(unused_mut)]
            let mut result = rewrite.await;
            #[cfg(feature = "debug-routes")]
            if let Some((tool, given, agent)) = listed {
                if result == given {
                    if let Some(replaced) = debug_author::rewrite(&tool, &agent).await {
                        result = replaced;
                    }
                }
            }
            host.dispatch(Event::ToolResultRewritten { call, result });
        });
    }

    fn decide_chat_error(self: &Rc<Self>, call: CallId, error: ChatError) {
        let host = self.clone();
        #[cfg(feature = "debug-routes")]
        let listed = (self.debug.tools).then(|| self.handle());
        let decide = (self.hooks.on_chat_error)(error, self.handle());
        spawn_local(async move {
            #[allow(unused_mut)]
            let mut disposition = decide.await;
            #[cfg(feature = "debug-routes")]
            if let (crate::core::ErrorDisposition::Fail, Some(agent)) = (disposition, listed) {
                if let Some(retry) = debug_author::retry_error(&agent).await {
                    disposition = retry;
                }
            }
            host.dispatch(Event::ChatErrorDecided { call, disposition });
        });
    }

    fn summarize(self: &Rc<Self>, call: CallId, request: SummaryRequest) {
        let host = self.clone();
        let summarize = (self.hooks.summarize)(request, self.handle());
        spawn_local(async move {
            let summary = summarize.await;
            host.dispatch(Event::Summarized { call, summary });
        });
    }

    fn turn_ended(self: &Rc<Self>, response: ChatResponse) {
        self.rpc.turn_ended(&response);
        // Owed until the hook returns (an eviction meanwhile sends it again
        // after the restart).
        let host = self.clone();
        let on_chat_response = self.hooks.on_chat_response.clone();
        let request_id = response.request_id.clone();
        #[cfg(feature = "debug-routes")]
        let recorded = (self.debug.tools).then(|| (response.clone(), self.handle()));
        let run = on_chat_response(response, self.handle());
        spawn_local(async move {
            run.await;
            #[cfg(feature = "debug-routes")]
            if let Some((response, agent)) = recorded {
                debug_author::record_response(&response, &agent).await;
            }
            host.dispatch(Event::ChatResponseDelivered { request_id });
        });
    }

    fn step_ended(self: &Rc<Self>, report: StepReport) {
        let on_step_end = self.hooks.on_step_end.clone();
        spawn_local(on_step_end(report, self.handle()));
    }

    fn run_callable(self: &Rc<Self>, conn: ConnId, id: String, method: String, args: Value) {
        let socket = self.sockets.borrow().get(&conn).cloned();
        let ctx = socket.map(|ws| CallContext {
            connection: self.connection_on(&conn, ws),
            agent: self.handle(),
        });
        let callables = &self.author.callables;
        let run = (self.call_runs).start(callables, (&conn, &id), (&method, args), ctx);
        let host = self.clone();
        spawn_local(async move {
            // `None`: cancelled; the core already forgot it.
            if let Some(result) = run.await {
                host.dispatch(Event::CallableDone { conn, id, result });
            }
        });
    }

    fn cancel_calls(&self, conn: ConnId, ids: Vec<String>) {
        self.call_runs.cancel(&conn, ids);
    }

    fn state_changed(self: &Rc<Self>, state: Rc<Value>, source: StateSource) {
        spawn_local((self.author.on_state_changed)(
            (state, source),
            self.handle(),
        ));
    }

    fn other_frame(self: &Rc<Self>, conn: ConnId, text: String) {
        let Some(ws) = self.sockets.borrow().get(&conn).cloned() else {
            return;
        };
        let connection = self.connection_on(&conn, ws);
        spawn_local((self.author.on_message)((connection, text), self.handle()));
    }
}
