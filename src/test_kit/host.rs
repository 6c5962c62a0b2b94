//! The test kit's host: one instance of an agent, natively. It feeds a core
//! the events a Durable Object would (tabs, model stream, tool results,
//! timers) and carries out its effects in memory: frames to the tabs,
//! writes to the in-memory store, model calls answered from the script, and
//! the definition's code (hooks, tools, callables, schedule callbacks, the
//! connection hooks) run as tasks on a single-threaded executor. Timers run
//! on the virtual clock; the driver (`TestAgent`) decides when they fire.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::rc::{Rc, Weak};

use futures::executor::LocalSpawner;
use futures::future::LocalBoxFuture;
use futures::task::LocalSpawnExt;
use serde_json::Value;

use crate::agent::author_hooks::AuthorHooks;
use crate::agent::callables::call_runs::CallRuns;
use crate::agent::connections::{checked_tags, Connection, ConnectionSocket};
use crate::agent::engine_config::{core_config, AsyncHooks};
use crate::agent::handle::connections::{DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON};
use crate::agent::handle::schedule_callback::{ScheduleCallback, ScheduleContext};
use crate::agent::handle::settled_waiters::SettledWaiters;
use crate::agent::handle::CoreHost;
use crate::agent::storage::AuthorStorage;
use crate::agent::tools::context::{AgentEnv, ToolContext, ToolRuns};
use crate::agent::{AgentDefinition, AgentHandle, CallContext, RequestInfo};
use crate::agent::{ServerTool, Vars};
use crate::core::{carry_out, AuthorCall, CallId, ConfigKey, ConnId, Core, Effect, Event, Step};
use crate::core::{ScheduleOutcome, StoreOp, Timer};
use crate::model::{ModelEvent, ModelFailure, ModelRequest};

use super::memory::Durable;
use super::reply::{End, Reply};

/// A model event (or failure) due at a virtual time.
pub(crate) struct Due {
    pub at: u64,
    pub order: u64,
    pub call: CallId,
    pub event: Result<ModelEvent, ModelFailure>,
}

type AlarmHook = Rc<dyn Fn(AgentHandle) -> LocalBoxFuture<'static, ()>>;

pub(crate) struct KitHost {
    durable: Rc<Durable>,
    core: RefCell<Core>,
    spawner: LocalSpawner,
    me: Weak<KitHost>,
    env: AgentEnv,
    tools: HashMap<String, ServerTool>,
    hooks: AsyncHooks,
    author: AuthorHooks,
    schedule_callbacks: HashMap<String, ScheduleCallback>,
    on_alarm: AlarmHook,
    /// Model events not delivered yet.
    pub(crate) due: RefCell<Vec<Due>>,
    /// The core's in-isolate timers: due time and the order they were armed in.
    pub(crate) timers: RefCell<BTreeMap<Timer, (u64, u64)>>,
    /// The durable deadline this instance last set the alarm for.
    alarm_asked: Cell<Option<u64>>,
    tool_runs: ToolRuns,
    call_runs: CallRuns,
    settled_waiters: SettledWaiters,
    /// `destroy` ran: no effect is carried out any more.
    destroyed: Cell<bool>,
}

impl KitHost {
    /// A new instance of `definition` on what `durable` kept: the core
    /// loads the store, adopts the open tabs and is told it woke.
    pub fn start<D: AgentDefinition>(
        definition: &Rc<D>,
        vars: &BTreeMap<String, String>,
        agent: &str,
        durable: &Rc<Durable>,
        spawner: LocalSpawner,
    ) -> Rc<KitHost> {
        let lookup = |name: &str| vars.get(name).cloned();
        let settings = definition.settings(&Vars(&lookup));
        let mut tools = definition.tools();
        tools.extend(crate::agent::builtin_tools::set_context::set_context_tool(
            definition.as_ref(),
        ));
        tools.extend(
            crate::agent::builtin_tools::search_context::search_context_tool(definition.as_ref()),
        );
        let (stored, name) = {
            let mut store = durable.store.borrow_mut();
            let name = store.config(ConfigKey::InstanceName).map(str::to_string);
            (store.load(), name.unwrap_or_else(|| "default".to_string()))
        };
        let mut config = core_config(definition, &settings, &tools, &name, agent);
        let author = AuthorHooks::of(definition);
        for refused in &author.refused_rpc_methods {
            crate::log::write(crate::log::LogLevel::Error, refused);
        }
        config.agent_api = author.agent_api(definition);
        let history: Rc<dyn crate::core::History> = durable.store.clone();
        let ids = Box::new(durable.ids.clone());
        let mut core = Core::new(config, stored, history, ids, durable.now());
        let declared = definition.scheduled_tasks();
        for refused in core.reconcile_declared_schedules(declared, durable.now()) {
            crate::log::write(crate::log::LogLevel::Error, &refused);
        }
        let alarms = definition.clone();
        let host = Rc::new_cyclic(|me| KitHost {
            durable: durable.clone(),
            core: RefCell::new(core),
            spawner,
            me: me.clone(),
            env: AgentEnv::default(),
            tools: tools
                .into_iter()
                .map(|t| (t.spec.name.clone(), t))
                .collect(),
            hooks: AsyncHooks::of(definition),
            author,
            schedule_callbacks: (definition.schedule_callbacks().into_iter())
                .map(|c| (c.name.clone(), c))
                .collect(),
            on_alarm: Rc::new(move |agent| {
                let alarms = alarms.clone();
                Box::pin(async move { alarms.on_alarm(agent).await })
            }),
            due: RefCell::new(Vec::new()),
            timers: RefCell::new(BTreeMap::new()),
            alarm_asked: Cell::new(None),
            tool_runs: ToolRuns::default(),
            call_runs: CallRuns::default(),
            settled_waiters: SettledWaiters::default(),
            destroyed: Cell::new(false),
        });
        host.carry_out();
        let open: Vec<ConnId> = (durable.tabs.borrow().iter())
            .filter(|(_, tab)| tab.open)
            .map(|(conn, _)| conn.clone())
            .collect();
        for conn in open {
            host.dispatch(Event::Adopted { conn });
        }
        host.dispatch(Event::Woke);
        // The definition's `on_start`, queued first: it runs before anything
        // a test does next.
        let starting = definition.clone();
        let agent = host.handle();
        host.spawn(async move { starting.on_start(agent).await });
        host
    }

    pub fn handle(self: &Rc<Self>) -> AgentHandle {
        AgentHandle::new(self.clone())
    }

    /// Starts the author's RPC method `name` (`None`: no such method).
    pub fn call_rpc(
        self: &Rc<Self>,
        name: &str,
        args: Value,
    ) -> Option<crate::agent::callables::CallFuture> {
        crate::agent::callables::rpc_methods::call(
            &self.author.rpc_methods,
            name,
            args,
            self.handle(),
        )
    }

    pub fn core(&self) -> std::cell::Ref<'_, Core> {
        self.core.borrow()
    }

    /// Any core event at the current virtual time, its effects carried out.
    pub fn dispatch(self: &Rc<Self>, event: Event) {
        self.core.borrow_mut().handle(event, self.durable.now());
        self.carry_out();
    }

    /// The in-isolate timers that are due fire.
    pub fn fire_timers(self: &Rc<Self>) {
        self.core.borrow_mut().handle_timeout(self.durable.now());
        self.carry_out();
    }

    /// The durable alarm fired.
    pub fn fire_alarm(self: &Rc<Self>) {
        self.alarm_asked.set(None);
        self.dispatch(Event::Timer(Timer::Heartbeat));
    }

    /// A tab connected: it is given its tags and readonly flag, the core is
    /// told, then `on_connect` runs.
    pub fn connect(self: &Rc<Self>, conn: &ConnId, request: RequestInfo) {
        let (tags, dropped) = checked_tags((self.author.connection_tags)(conn, &request));
        for reason in dropped {
            self.log_line(format!("tag dropped: {reason}"));
        }
        let readonly = (self.author.should_connection_be_readonly)(conn, &request);
        if let Some(tab) = self.durable.tabs.borrow_mut().get_mut(conn) {
            tab.tags = tags;
            tab.readonly = readonly;
        }
        self.dispatch(Event::Connected {
            conn: conn.clone(),
            client: None,
        });
        let run = (self.author.on_connect)((self.connection(conn), request), self.handle());
        self.spawn(run);
    }

    /// A tab's socket closed: the core is told, then `on_close` runs.
    pub fn disconnect(self: &Rc<Self>, conn: &ConnId) {
        self.dispatch(Event::Disconnected { conn: conn.clone() });
        let run = (self.author.on_close)(self.connection(conn), self.handle());
        self.spawn(run);
    }

    pub fn connection(self: &Rc<Self>, conn: &ConnId) -> Connection {
        let socket = TabSocket {
            conn: conn.clone(),
            host: self.me.clone(),
            durable: self.durable.clone(),
        };
        Connection::with_socket(conn, Rc::new(socket))
    }

    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        // Fails only once the instance is evicted (its executor dropped).
        let _ = self.spawner.spawn_local(task);
    }

    fn log_line(&self, line: String) {
        self.durable.log.borrow_mut().push(line);
    }

    fn carry_out(self: &Rc<Self>) {
        if self.destroyed.get() {
            return;
        }
        let effects = {
            let mut core = self.core.borrow_mut();
            let lines = core.take_log().into_iter().map(|e| e.to_string());
            self.durable.log.borrow_mut().extend(lines);
            core.take_effects()
        };
        let refused = carry_out(effects, |step| match step {
            Step::Write(ops) => self.write(ops),
            Step::Do(effect) => {
                self.carry_out_one(effect);
                Ok(())
            }
        });
        self.sync_timers();
        if let Some((ops, error)) = refused {
            self.dispatch(Event::StoreWriteFailed { ops, error });
        }
        self.settled_waiters.wake(&self.core);
    }

    fn write(&self, ops: Vec<StoreOp>) -> Result<(), (Vec<StoreOp>, String)> {
        let written = self.durable.store.borrow_mut().apply_all(&ops);
        written.map_err(|e| (ops, e))
    }

    /// Mirrors the core's timers: the in-isolate ones as the core has them,
    /// the durable alarm when this instance's deadline changes (an alarm
    /// an earlier instance set stays, as the Durable Object's does).
    fn sync_timers(&self) {
        let (armed, durable) = {
            let core = self.core.borrow();
            (core.armed_timers(), core.durable_deadline())
        };
        let mut timers = self.timers.borrow_mut();
        timers.retain(|t, _| armed.iter().any(|(a, _)| a == t));
        for (timer, at) in armed {
            if timer.is_durable() || timers.get(&timer).map(|(a, _)| *a) == Some(at) {
                continue;
            }
            timers.insert(timer, (at, self.durable.next_order()));
        }
        if durable != self.alarm_asked.get() {
            self.alarm_asked.set(durable);
            let alarm = durable.map(|at| (at, self.durable.next_order()));
            self.durable.alarm.set(alarm);
        }
    }

    /// Runs an awaited hook's future, then hands its answer to the core.
    fn answer<T: 'static>(
        self: &Rc<Self>,
        run: LocalBoxFuture<'static, T>,
        event: impl FnOnce(T) -> Event + 'static,
    ) {
        let host = self.clone();
        self.spawn(async move {
            let answer = run.await;
            host.dispatch(event(answer));
        });
    }

    fn carry_out_one(self: &Rc<Self>, effect: Effect) {
        let agent = self.handle();
        match effect {
            Effect::Send { to, frame } => self.send(&to, &frame),
            Effect::SendTranscript { to, frame } => {
                let text = frame.read(&*self.durable.store);
                self.send(&to, &text);
            }
            Effect::Store(op) => {
                if let Err((ops, error)) = self.write(vec![op]) {
                    self.dispatch(Event::StoreWriteFailed { ops, error });
                }
            }
            Effect::CallModel { call, request } => self.call_model(call, *request),
            Effect::AbortModel { call } => self.due.borrow_mut().retain(|d| d.call != call),
            Effect::AuthorAlarm => self.spawn((self.on_alarm)(agent)),
            Effect::RunSchedule {
                run,
                name,
                callback,
                payload,
                attempt,
            } => {
                let ctx = ScheduleContext {
                    agent,
                    schedule: name.clone(),
                    attempt,
                };
                let started = match self.schedule_callbacks.get(&callback) {
                    Some(registered) => registered.start(payload, ctx),
                    None => Err(format!("no schedule callback `{callback}` is registered")),
                };
                match started {
                    Ok(running) => self.answer(running, move |result| Event::ScheduleRan {
                        run,
                        outcome: match result {
                            Ok(()) => ScheduleOutcome::Done,
                            Err(e) => ScheduleOutcome::Failed(e),
                        },
                    }),
                    Err(e) => {
                        self.log_line(format!("schedule `{name}` could not run: {e}"));
                        let outcome = ScheduleOutcome::Unrunnable(e);
                        self.dispatch(Event::ScheduleRan { run, outcome });
                    }
                }
            }
            Effect::RunTool {
                call,
                tool_call_id,
                tool_name,
                input,
            } => self.run_tool(call, tool_call_id, tool_name, input),
            // No parent agent runs in the kit.
            Effect::CallRemoteTool { tool_name, .. } => {
                self.log_line(format!("no parent agent to run `{tool_name}`"))
            }
            Effect::AbortTools { calls } => self.tool_runs.abort(calls),
            Effect::PrepareTurn { turn, context } => {
                let run = (self.hooks.before_turn)(context, agent);
                self.answer(run, move |config| Event::TurnPrepared {
                    turn,
                    config: Box::new(config),
                });
            }
            Effect::DecideToolCall { call, tool } => {
                let run = (self.hooks.before_tool_call)(tool, agent);
                self.answer(run, move |decision| Event::ToolCallDecided {
                    call,
                    decision,
                });
            }
            Effect::RewriteToolResult { call, tool, result } => {
                let run = (self.hooks.after_tool_call)((tool, *result), agent);
                self.answer(run, move |result| Event::ToolResultRewritten {
                    call,
                    result,
                });
            }
            Effect::DecideChatError { call, error } => {
                let run = (self.hooks.on_chat_error)(error, agent);
                self.answer(run, move |disposition| Event::ChatErrorDecided {
                    call,
                    disposition,
                });
            }
            Effect::Summarize { call, request } => {
                let run = (self.hooks.summarize)(request, agent);
                self.answer(run, move |summary| Event::Summarized { call, summary });
            }
            Effect::TurnEnded(response) => {
                let request_id = response.request_id.clone();
                let run = (self.hooks.on_chat_response)(response, agent);
                self.answer(run, move |()| Event::ChatResponseDelivered { request_id });
            }
            Effect::StepEnded(report) => self.spawn((self.hooks.on_step_end)(report, agent)),
            Effect::Author(call) => self.run_author_call(call),
        }
    }

    fn send(&self, to: &[ConnId], frame: &str) {
        let value: Value = serde_json::from_str(frame).unwrap_or(Value::String(frame.into()));
        for conn in to {
            self.durable.deliver(conn, value.clone());
        }
    }

    /// Takes the next scripted reply and schedules its events on the clock.
    fn call_model(&self, call: CallId, request: ModelRequest) {
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

    fn run_author_call(self: &Rc<Self>, call: AuthorCall) {
        match call {
            AuthorCall::RunCallable {
                conn,
                id,
                method,
                args,
            } => {
                let open = self
                    .durable
                    .tabs
                    .borrow()
                    .get(&conn)
                    .is_some_and(|t| t.open);
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
            AuthorCall::CancelCalls { conn, ids } => self.call_runs.cancel(&conn, ids),
            AuthorCall::StateChanged { state, source } => {
                let run = (self.author.on_state_changed)((state, source), self.handle());
                self.spawn(run);
            }
            AuthorCall::OtherFrame { conn, text } => {
                let run = (self.author.on_message)((self.connection(&conn), text), self.handle());
                self.spawn(run);
            }
        }
    }

    /// Answers `generate_text` from the script: the reply's text, or its failure.
    fn scripted_text(&self, request: ModelRequest) -> Result<String, ModelFailure> {
        let reply = {
            let mut model = self.durable.model.borrow_mut();
            model.requests.push(request);
            model.replies.pop_front()
        };
        let reply = reply.ok_or_else(|| {
            ModelFailure::http(500, "no reply scripted for generate_text", None, None)
        })?;
        if let End::Fail(failure) = reply.end {
            return Err(failure);
        }
        let text = reply.events.into_iter().filter_map(|e| match e {
            ModelEvent::TextDelta(delta) => Some(delta),
            _ => None,
        });
        Ok(text.collect())
    }
}

/// The agent's own code calling in (see `agent/handle.rs`).
impl CoreHost for KitHost {
    fn core(&self) -> &RefCell<Core> {
        &self.core
    }

    fn carry_out_effects(self: Rc<Self>) {
        self.carry_out();
    }

    fn env(&self) -> &AgentEnv {
        &self.env
    }

    fn now_ms(&self) -> u64 {
        self.durable.now()
    }

    fn add_mcp_server(self: Rc<Self>, _server: crate::mcp::McpServer) -> Result<String, String> {
        Err("MCP servers are not reachable from the test kit".to_string())
    }

    fn remove_mcp_server(self: Rc<Self>, _name: &str) -> Result<bool, String> {
        Ok(false)
    }

    fn mcp_servers(&self) -> Vec<crate::mcp::ServerInfo> {
        Vec::new()
    }

    fn author_storage(&self) -> AuthorStorage {
        AuthorStorage::new(self.durable.author.clone())
    }

    fn settled(&self, id: &str) -> LocalBoxFuture<'static, ()> {
        self.settled_waiters.wait(id)
    }

    fn connections(&self, tag: Option<&str>) -> Vec<Connection> {
        let open: Vec<ConnId> = (self.durable.tabs.borrow().iter())
            .filter(|(_, tab)| tab.open && tag.is_none_or(|t| tab.tags.iter().any(|x| x == t)))
            .map(|(conn, _)| conn.clone())
            .collect();
        let me = self.me.upgrade();
        (open.iter())
            .filter_map(|conn| me.as_ref().map(|host| host.connection(conn)))
            .collect()
    }

    fn destroy(self: Rc<Self>) -> LocalBoxFuture<'static, Result<(), String>> {
        self.destroyed.set(true);
        self.durable
            .erase(DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON);
        Box::pin(async { Ok(()) })
    }

    fn generate_text(
        self: Rc<Self>,
        request: ModelRequest,
    ) -> LocalBoxFuture<'static, Result<String, ModelFailure>> {
        let answer = self.scripted_text(request);
        Box::pin(async move { answer })
    }

    /// In memory: the stored messages holding any of the query's words
    /// (case aside), newest first, each's text as its excerpt.
    fn search_history(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<crate::core::HistoryHit>, String> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let messages = self.durable.store.borrow().messages();
        let hits = messages
            .iter()
            .enumerate()
            .rev()
            .filter_map(|(seq, message)| {
                let text = crate::core::vocab::history_search::searchable_text(message);
                let lower = text.to_lowercase();
                words
                    .iter()
                    .any(|w| lower.contains(w))
                    .then(|| crate::core::HistoryHit {
                        message_id: message.id.clone(),
                        role: format!("{:?}", message.role).to_lowercase(),
                        seq: seq as u64,
                        excerpt: text,
                    })
            })
            .take(limit)
            .collect();
        Ok(crate::core::vocab::history_search::within_bytes(hits))
    }
}

/// A tab's socket as a connection holds it.
struct TabSocket {
    conn: ConnId,
    host: Weak<KitHost>,
    durable: Rc<Durable>,
}

impl ConnectionSocket for TabSocket {
    fn tags(&self) -> Vec<String> {
        (self.durable.tabs.borrow().get(&self.conn)).map_or_else(Vec::new, |t| t.tags.clone())
    }

    fn readonly(&self) -> bool {
        (self.durable.tabs.borrow().get(&self.conn)).is_some_and(|t| t.readonly)
    }

    fn set_readonly(&self, readonly: bool) -> Result<(), String> {
        match self.durable.tabs.borrow_mut().get_mut(&self.conn) {
            Some(tab) => {
                tab.readonly = readonly;
                Ok(())
            }
            None => Err("no such connection".to_string()),
        }
    }

    fn state_text(&self) -> Option<String> {
        self.durable.tabs.borrow().get(&self.conn)?.state.clone()
    }

    fn set_state_text(&self, text: Option<String>) -> Result<(), String> {
        match self.durable.tabs.borrow_mut().get_mut(&self.conn) {
            Some(tab) => {
                tab.state = text;
                Ok(())
            }
            None => Err("no such connection".to_string()),
        }
    }

    fn send_text(&self, text: &str) -> Result<(), String> {
        let frame = serde_json::from_str(text).unwrap_or(Value::String(text.into()));
        match self.durable.deliver(&self.conn, frame) {
            true => Ok(()),
            false => Err("connection closed".to_string()),
        }
    }

    fn close(&self, code: u16, reason: &str) {
        let was_open = match self.durable.tabs.borrow_mut().get_mut(&self.conn) {
            Some(tab) if tab.open => {
                tab.open = false;
                tab.closed_with = Some((code, reason.to_string()));
                true
            }
            _ => false,
        };
        if let (true, Some(host)) = (was_open, self.host.upgrade()) {
            let conn = self.conn.clone();
            let closing = host.clone();
            host.spawn(async move { closing.disconnect(&conn) });
        }
    }
}
