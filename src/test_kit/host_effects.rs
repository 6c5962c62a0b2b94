//! The test kit's host carrying out the core's effects in memory: frames to
//! the tabs, writes to the in-memory store, model calls answered from the
//! script on the virtual clock, and the definition's code (tools, hooks,
//! schedule callbacks, callables) run as tasks. Which effect goes to which
//! handler is `agent::effect_handlers`, shared with the Durable Object's host.

use std::rc::Rc;

use serde_json::Value;

use crate::agent::effect_handlers::EffectHandlers;
use crate::agent::handle::schedule_callback::start_registered;
use crate::agent::tools::context::ToolContext;
use crate::agent::CallContext;
use crate::core::{CallId, ConnId, Event, Refused, ScheduleOutcome, StateSource, StoreOp};
use crate::core::{ChatError, ChatResponse, StepReport, SummaryRequest, ToolCall, ToolOutcome};
use crate::core::{TranscriptFrame, TurnContext};
use crate::model::{ModelEvent, ModelRequest};

use super::super::reply::{End, Reply};
use super::{Due, KitHost};

impl EffectHandlers for KitHost {
    fn write(&self, ops: Vec<StoreOp>) -> Result<(), Refused> {
        let written = self.durable.store.borrow_mut().apply_all(&ops);
        written.map_err(|e| (ops, e))
    }

    fn store(self: &Rc<Self>, op: StoreOp) {
        if let Err((ops, error)) = self.write(vec![op]) {
            self.dispatch(Event::StoreWriteFailed { ops, error });
        }
    }

    fn send(&self, to: &[ConnId], frame: &str) {
        let value: Value = serde_json::from_str(frame).unwrap_or(Value::String(frame.into()));
        for conn in to {
            self.durable.deliver(conn, value.clone());
        }
    }

    fn note_list_matches(&self, conn: &ConnId, matches: bool) {
        if let Some(tab) = self.durable.tabs.borrow_mut().get_mut(conn) {
            tab.list_matches = matches;
        }
    }

    fn send_transcript(&self, to: &[ConnId], frame: &TranscriptFrame) {
        let text = frame.read(&*self.durable.store);
        self.send(to, &text);
    }

    /// Takes the next scripted reply and schedules its events on the clock.
    fn call_model(self: &Rc<Self>, call: CallId, request: ModelRequest) {
        let reply = {
            let mut model = self.durable.model.borrow_mut();
            model.requests.push(request);
            model.replies.pop_front()
        };
        let Some(reply) = reply else {
            panic!(
                "the model was called with no reply scripted (script one with \
                 `agent.model().reply_text(…)` before the turn runs)"
            );
        };
        let Reply {
            events,
            end,
            every_ms,
            usage,
        } = reply;
        let mut at = self.durable.now();
        let mut due = self.due.borrow_mut();
        let last = match end {
            End::Finish(reason) => Ok(ModelEvent::Finished { reason, usage }),
            End::Fail(failure) => Err(failure),
        };
        for event in events.into_iter().map(Ok).chain([last]) {
            at += every_ms;
            let order = self.durable.next_order();
            due.push(Due {
                at,
                order,
                call,
                event,
            });
        }
    }

    fn abort_model(&self, call: CallId) {
        self.due.borrow_mut().retain(|d| d.call != call);
    }

    fn run_tool(self: &Rc<Self>, call: CallId, tool_call_id: String, name: String, input: Value) {
        let tool = self.tools.get(&name).cloned();
        let ctx = ToolContext {
            tool_call_id: tool_call_id.clone(),
            abort: self.tool_runs.start(call),
            messages: self.core.borrow().turn_messages(),
            env: None,
            agent: Some(self.handle()),
            delegation_depth: self.core.borrow().running_delegation_depth(),
        };
        let host = self.clone();
        self.spawn(async move {
            let result = match tool {
                Some(tool) => tool.call_with(input, ctx).await,
                None => Err(format!("Tool '{name}' is not available.")),
            };
            host.tool_runs.end(call);
            host.dispatch(Event::ToolDone {
                call,
                tool_call_id,
                result,
            });
        });
    }

    fn call_remote_tool(&self, _call: CallId, _conn: ConnId, _id: String, name: String, _: Value) {
        // No parent agent runs in the kit.
        self.log_line(format!("no parent agent to run `{name}`"));
    }

    fn abort_tools(&self, calls: Vec<CallId>) {
        self.tool_runs.abort(calls);
    }

    fn run_author_alarm(self: &Rc<Self>) {
        self.spawn((self.on_alarm)(self.handle()));
    }

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
        match started {
            Ok(running) => self.answer(running, move |result| Event::ScheduleRan {
                run,
                outcome: ScheduleOutcome::of(result),
            }),
            // The core logs the run given up, with `e` as the reason.
            Err(e) => self.dispatch(Event::ScheduleRan {
                run,
                outcome: ScheduleOutcome::Unrunnable(e),
            }),
        }
    }

    fn prepare_turn(self: &Rc<Self>, turn: CallId, context: TurnContext) {
        let run = (self.hooks.before_turn)(context, self.handle());
        self.answer(run, move |config| Event::TurnPrepared {
            turn,
            config: Box::new(config),
        });
    }

    fn decide_tool_call(self: &Rc<Self>, call: CallId, tool: ToolCall) {
        let run = (self.hooks.before_tool_call)(tool, self.handle());
        self.answer(run, move |decision| Event::ToolCallDecided {
            call,
            decision,
        });
    }

    fn rewrite_tool_result(self: &Rc<Self>, call: CallId, tool: ToolCall, result: ToolOutcome) {
        let run = (self.hooks.after_tool_call)((tool, result), self.handle());
        self.answer(run, move |result| Event::ToolResultRewritten {
            call,
            result,
        });
    }

    fn decide_chat_error(self: &Rc<Self>, call: CallId, error: ChatError) {
        let run = (self.hooks.on_chat_error)(error, self.handle());
        self.answer(run, move |disposition| Event::ChatErrorDecided {
            call,
            disposition,
        });
    }

    fn summarize(self: &Rc<Self>, call: CallId, request: SummaryRequest) {
        let run = (self.hooks.summarize)(request, self.handle());
        self.answer(run, move |summary| Event::Summarized { call, summary });
    }

    fn turn_ended(self: &Rc<Self>, response: ChatResponse) {
        let request_id = response.request_id.clone();
        let run = (self.hooks.on_chat_response)(response, self.handle());
        self.answer(run, move |()| Event::ChatResponseDelivered { request_id });
    }

    fn step_ended(self: &Rc<Self>, report: StepReport) {
        self.spawn((self.hooks.on_step_end)(report, self.handle()));
    }

    fn run_callable(self: &Rc<Self>, conn: ConnId, id: String, method: String, args: Value) {
        let open = (self.durable.tabs.borrow().get(&conn)).is_some_and(|t| t.open);
        let ctx = open.then(|| CallContext {
            connection: self.connection(&conn),
            agent: self.handle(),
        });
        let callables = &self.author.callables;
        let run = (self.call_runs).start(callables, (&conn, &id), (&method, args), ctx);
        let host = self.clone();
        self.spawn(async move {
            if let Some(result) = run.await {
                host.dispatch(Event::CallableDone { conn, id, result });
            }
        });
    }

    fn cancel_calls(&self, conn: ConnId, ids: Vec<String>) {
        self.call_runs.cancel(&conn, ids);
    }

    fn state_changed(self: &Rc<Self>, state: Rc<Value>, source: StateSource) {
        let run = (self.author.on_state_changed)((state, source), self.handle());
        self.spawn(run);
    }

    fn other_frame(self: &Rc<Self>, conn: ConnId, text: String) {
        let run = (self.author.on_message)((self.connection(&conn), text), self.handle());
        self.spawn(run);
    }
}
