//! Carrying out the core's effects: its writes as one transaction per run
//! (a refused write told back to the core), frames to tabs, model calls,
//! tool runs and their hooks, the author's alarm and schedules.

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;

use crate::core::{carry_out, Step};
use crate::core::{Effect, Event, ScheduleOutcome};
use crate::protocol::channel::rpc_tool_call;

use crate::agent::handle::schedule_callback::ScheduleContext;
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
        let refused = carry_out(effects, |step| match step {
            Step::Write(ops) => self.store.apply_all(ops).map_err(|(ops, e)| {
                self.log_line(
                    crate::log::LogLevel::Error,
                    &format!("storage write failed: {e}"),
                );
                (ops, e.to_string())
            }),
            Step::Do(effect) => {
                self.carry_out_one(effect);
                Ok(())
            }
        });
        if let Some((ops, error)) = refused {
            self.dispatch(Event::StoreWriteFailed { ops, error });
        }
        self.settled_waiters.wake(&self.core);
    }

    /// Any effect but a write (see `core::carry_out`).
    pub(super) fn carry_out_one(self: &Rc<Self>, effect: Effect) {
        match effect {
            Effect::Send { to, frame } => self.send_frame(&to, &frame),
            Effect::SendTranscript { to, frame } => self.send_transcript(&to, &frame),
            // `carry_out` hands writes over as `Step::Write`; one arriving
            // here all the same goes through it.
            Effect::Store(op) => self.execute(vec![Effect::Store(op)]),
            Effect::CallModel { call, request } => {
                let host = self.clone();
                spawn_local(async move { host.run_model(call, *request).await });
            }
            Effect::AuthorAlarm => {
                let run = (self.on_author_alarm)(self.handle());
                spawn_local(self.child_call_scope(None).run(run));
            }
            Effect::RunSchedule {
                run,
                name,
                callback,
                payload,
                attempt,
            } => self.run_schedule(run, &name, &callback, payload, attempt),
            Effect::AbortModel { call } => {
                if let Some(controller) = self.model_calls.borrow_mut().remove(&call) {
                    controller.abort();
                }
            }
            Effect::RunTool {
                call,
                tool_call_id,
                tool_name,
                input,
            } => {
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
            Effect::CallRemoteTool {
                call,
                conn,
                tool_call_id,
                tool_name,
                input,
            } => {
                let frame = rpc_tool_call(call, &tool_call_id, &tool_name, &input);
                if self.rpc.deliver(&conn, &frame) {
                    return;
                }
                if let Some(ws) = self.sockets.borrow().get(&conn) {
                    let _ = ws.send_with_str(&frame);
                }
            }
            Effect::AbortTools { calls } => self.tool_runs.abort(calls),
            Effect::PrepareTurn { turn, context } => {
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
            Effect::DecideToolCall { call, tool } => {
                let host = self.clone();
                #[cfg(feature = "debug-routes")]
                let listed = (self.debug.tools).then(|| (tool.clone(), self.handle()));
                let decide = (self.hooks.before_tool_call)(tool, self.handle());
                spawn_local(async move {
                    #[allow(unused_mut)]
                    let mut decision = decide.await;
                    #[cfg(feature = "debug-routes")]
                    if let (crate::core::ToolCallDecision::Allow, Some((tool, agent))) =
                        (&decision, listed)
                    {
                        if let Some(blocked) = debug_author::decide(&tool, &agent).await {
                            decision = blocked;
                        }
                    }
                    host.dispatch(Event::ToolCallDecided { call, decision });
                });
            }
            Effect::RewriteToolResult { call, tool, result } => {
                let host = self.clone();
                #[cfg(feature = "debug-routes")]
                let listed =
                    (self.debug.tools).then(|| (tool.clone(), (*result).clone(), self.handle()));
                let rewrite = (self.hooks.after_tool_call)((tool, *result), self.handle());
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
            Effect::DecideChatError { call, error } => {
                let host = self.clone();
                #[cfg(feature = "debug-routes")]
                let listed = (self.debug.tools).then(|| self.handle());
                let decide = (self.hooks.on_chat_error)(error, self.handle());
                spawn_local(async move {
                    #[allow(unused_mut)]
                    let mut disposition = decide.await;
                    #[cfg(feature = "debug-routes")]
                    if let (crate::core::ErrorDisposition::Fail, Some(agent)) =
                        (disposition, listed)
                    {
                        if let Some(retry) = debug_author::retry_error(&agent).await {
                            disposition = retry;
                        }
                    }
                    host.dispatch(Event::ChatErrorDecided { call, disposition });
                });
            }
            Effect::Summarize { call, request } => {
                let host = self.clone();
                let summarize = (self.hooks.summarize)(request, self.handle());
                spawn_local(async move {
                    let summary = summarize.await;
                    host.dispatch(Event::Summarized { call, summary });
                });
            }
            Effect::TurnEnded(response) => {
                self.rpc.turn_ended(&response);
                // Owed until the hook returns (an eviction meanwhile sends
                // it again after the restart).
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
            Effect::StepEnded(report) => {
                let on_step_end = self.hooks.on_step_end.clone();
                spawn_local(on_step_end(report, self.handle()));
            }
            Effect::Author(call) => self.run_author_call(call),
        }
    }

    /// A schedule is due: its callback runs with its payload and the run's
    /// attempt number (a callback the definition does not register, or a
    /// payload it cannot read, is logged), and how it ended is reported
    /// (the core keeps the run owed until then, so a run cut by an eviction
    /// starts again).
    pub(super) fn run_schedule(
        self: &Rc<Self>,
        run: String,
        name: &str,
        callback: &str,
        payload: serde_json::Value,
        attempt: u32,
    ) {
        let ctx = ScheduleContext {
            agent: self.handle(),
            schedule: name.to_string(),
            attempt,
        };
        let started = match self.schedule_callbacks.get(callback) {
            Some(registered) => registered.start(payload, ctx),
            None => Err(format!("no schedule callback `{callback}` is registered")),
        };
        let running = match started {
            Ok(running) => running,
            Err(e) => {
                self.log_line(
                    crate::log::LogLevel::Error,
                    &format!("schedule `{name}` could not run: {e}"),
                );
                let outcome = ScheduleOutcome::Unrunnable(e);
                self.dispatch(Event::ScheduleRan { run, outcome });
                return;
            }
        };
        let host = self.clone();
        spawn_local(self.child_call_scope(None).run(async move {
            let outcome = match running.await {
                Ok(()) => ScheduleOutcome::Done,
                Err(e) => ScheduleOutcome::Failed(e),
            };
            host.dispatch(Event::ScheduleRan { run, outcome });
        }));
    }
}
