//! The test kit's host: one instance of an agent, natively. It feeds a core
//! the events a Durable Object would (tabs, model stream, tool results,
//! timers) and carries out its effects in memory: frames to the tabs,
//! writes to the in-memory store, model calls answered from the script, and
//! the definition's code (hooks, tools, callables, schedule callbacks, the
//! connection hooks) run as tasks on a single-threaded executor. Timers run
//! on the virtual clock; the driver (`TestAgent`) decides when they fire.
//! The effects are carried out in `host_effects.rs`, the agent's own calls
//! answered in `host_agent_calls.rs`, a tab's socket is `host_tab_socket.rs`.

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
use crate::agent::connections::{checked_tags, Connection};
use crate::agent::effect_handlers::carry_out_effects;
use crate::agent::engine_config::{core_config, AsyncHooks};
use crate::agent::handle::schedule_callback::ScheduleCallback;
use crate::agent::handle::settled_waiters::SettledWaiters;
use crate::agent::tools::context::{AgentEnv, ToolRuns};
use crate::agent::{AgentDefinition, AgentHandle, RequestInfo};
use crate::agent::{ServerTool, Vars};
use crate::core::{CallId, ConfigKey, ConnId, Core, Event, Timer};
use crate::model::{ModelEvent, ModelFailure};

use super::memory::Durable;

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
        let open: Vec<(ConnId, bool)> = (durable.tabs.borrow().iter())
            .filter(|(_, tab)| tab.open)
            .map(|(conn, tab)| (conn.clone(), tab.list_matches))
            .collect();
        for (conn, list_matches) in open {
            host.dispatch(Event::Adopted { conn, list_matches });
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
        let refused = carry_out_effects(self, effects);
        self.sync_timers();
        if let Some((ops, error)) = refused {
            self.dispatch(Event::StoreWriteFailed { ops, error });
        }
        self.settled_waiters.wake(&self.core);
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
}

#[path = "host_agent_calls.rs"]
mod agent_calls;
#[path = "host_effects.rs"]
mod effects;
#[path = "host_tab_socket.rs"]
mod tab_socket;
use tab_socket::TabSocket;
