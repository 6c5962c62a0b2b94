//! Runs a core inside a Durable Object: feeds it platform events (sockets,
//! model stream, tool results, timers) and carries out its effects. Makes no
//! protocol decisions of its own.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use futures::future::AbortHandle;
use worker::{AbortController, Env, Request, Response, State, WebSocket};

use crate::core::{CallId, ConnId, Core, Event};
use crate::model::providers::{Provider, ProviderSet};
use crate::store::SqlStore;

use crate::agent::access::channel_auth::ChannelPolicy;
use crate::agent::access::{Refusal, RequestInfo};
use crate::agent::author_hooks::AuthorHooks;
use crate::agent::callables::call_runs::CallRuns;
use crate::agent::definition::AgentDefinition;
use crate::agent::engine_config::{core_config, AsyncHooks};
use crate::agent::handle::settled_waiters::SettledWaiters;
use crate::agent::handle::AgentHandle;
use crate::agent::ids::{random_token, RandomIds};
use crate::agent::settings::{env_value, Vars};
use crate::agent::subagents::child_calls::{ChildCallLimits, ChildCallScope, ChildCalls};
use crate::agent::tools::context::ToolRuns;
use crate::agent::tools::ServerTool;

mod all_messages;
mod body_pump;
mod connections;
mod core_host;
#[cfg(feature = "debug-routes")]
mod debug;
#[cfg(feature = "debug-routes")]
mod debug_author;
mod effects;
mod frames;
pub mod lazy;
mod mcp;
mod mcp_http;
mod mcp_oauth;
mod mcp_oauth_callback;
mod mcp_sse;
mod model_stream;
mod requests;
mod rpc_calls;
mod sockets;
mod timers;

/// The var naming (comma-separated) the hosts whose file links reach the
/// model's provider.
const FILE_LINK_HOSTS_VAR: &str = "FILE_LINK_HOSTS";

/// The var that shows a failed model call's full text to the tabs.
const MODEL_ERROR_DETAIL_VAR: &str = "MODEL_ERROR_DETAIL";

/// The var (`"1"`) that keeps serving the internal fetch paths (a parent's
/// WebSocket channel, `…/__chat-channel`, and the submission API,
/// `…/__chat-api`) for callers that do not use RPC yet; off by default, so
/// no request from outside reaches them.
pub const INTERNAL_FETCH_FALLBACK_VAR: &str = "INTERNAL_FETCH_FALLBACK";

type Authorizer = Box<dyn Fn(&RequestInfo) -> Result<(), Refusal>>;

type ResponseFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = worker::Result<Option<Response>>>>>;
/// The definition's `on_request` (the author's own routes).
type RequestHook = Box<dyn Fn(Request, AgentHandle) -> ResponseFuture>;
/// The definition's `on_alarm` (the alarm the author scheduled).
type AlarmHook =
    Box<dyn Fn(AgentHandle) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>>;

pub struct AgentHost {
    state: State,
    authorize: Authorizer,
    on_request: RequestHook,
    on_author_alarm: AlarmHook,
    /// The definition's schedule callbacks, by name.
    schedule_callbacks: HashMap<String, crate::agent::handle::schedule_callback::ScheduleCallback>,
    store: SqlStore,
    core: RefCell<Core>,
    /// The providers model calls go to: the default one the settings
    /// chose (or the failure every call meets), the ones a turn picks by name.
    providers: ProviderSet,
    /// The Worker's environment (a model binding such as `AI` is called through it).
    env: Env,
    tools: HashMap<String, ServerTool>,
    /// The definition's awaited hooks (`before_turn`, `on_chat_response`).
    hooks: AsyncHooks,
    /// The definition's `on_start`, shared by every entry point that waits for it.
    started: RefCell<Option<futures::future::Shared<futures::future::LocalBoxFuture<'static, ()>>>>,
    /// The definition's callables, state and connection hooks.
    author: AuthorHooks,
    /// Abort signals of the server tool runs in flight.
    tool_runs: ToolRuns,
    /// Callable runs in flight, by connection and call id (a streaming one
    /// is aborted when the core cancels it).
    call_runs: CallRuns,
    /// The connections whose close was handled lately (see `on_close`).
    closed: RefCell<std::collections::VecDeque<ConnId>>,
    sockets: RefCell<HashMap<ConnId, WebSocket>>,
    model_calls: RefCell<HashMap<CallId, AbortController>>,
    /// The one pending in-isolate wake-up (when it is due, and the handle
    /// that cancels it) for the core's earliest timer. A deadline that moves
    /// later (the stall check follows every model event) leaves it alone: it
    /// fires early, finds nothing due, and the next one is scheduled.
    /// Replacing it aborts the wait, which drops its `Delay` (clearTimeout).
    wake: RefCell<Option<(u64, AbortHandle)>>,
    /// The durable deadline this instance last set the alarm for (an alarm
    /// set by an earlier instance is kept until this one asks otherwise).
    alarm_asked: std::cell::Cell<Option<u64>>,
    /// Whether an alarm may be stored (one set by an earlier instance may:
    /// `true` until this one deletes it or sees it fire).
    alarm_stored: std::cell::Cell<bool>,
    /// Ends the wait of the latest alarm set still pending (see
    /// `set_alarm_now`); an earlier one is overtaken by it.
    alarm_set_wait: RefCell<Option<AbortHandle>>,
    /// The test and benchmark switches (`debug-routes` builds only).
    #[cfg(feature = "debug-routes")]
    debug: debug::DebugSwitches,
    /// `MODEL_ERROR_DETAIL=tabs`: a failed model call's full text reaches
    /// the tabs (else only its status class; the log always has it).
    model_error_detail_to_tabs: bool,
    /// `FILE_LINK_HOSTS`: the hosts whose `http(s)` file links the model's
    /// provider is given (any other link becomes a text note).
    link_hosts: Vec<String>,
    /// `settings.mcp_sign_in_same_browser`: a sign-in is completed only by
    /// the browser that opened its link (`mcp_oauth_callback.rs`).
    sign_in_same_browser: bool,
    /// `AUTH_TOKEN`: the key a sign-in's `state` is signed with, for the
    /// router to check a callback (`mcp::oauth::signed_state`).
    sign_in_key: Option<String>,
    /// The credential a parent's channel and the submission API carry
    /// (see `access/channel_auth.rs`).
    channel_policy: ChannelPolicy,
    /// The MCP servers the agent is connected to (see `mcp.rs`).
    mcp: mcp::McpClients,
    /// Code waiting for a submission to be final (`AgentHandle::wait_for_submission`).
    settled_waiters: SettledWaiters,
    /// The calls over Durable Object RPC in flight (see `rpc_calls.rs`).
    rpc: rpc_calls::RpcCalls,
    /// `INTERNAL_FETCH_FALLBACK=1`: the internal fetch paths are served.
    internal_fetch: bool,
    /// `MAX_CONNECTIONS_PER_CLIENT`: the sockets one client address may
    /// hold (`None`: three quarters of `max_connections`; 0: no share).
    max_connections_per_client: Option<usize>,
    /// Calls to child agents in flight, per turn and in all (see `subagents/child_calls.rs`).
    child_calls: Rc<ChildCalls>,
    /// `destroy` ran: no effect is carried out any more (see `connections.rs`).
    destroyed: std::cell::Cell<bool>,
}

/// How many handled closes `AgentHost::closed` remembers.
const REMEMBERED_CLOSES: usize = 64;

pub(crate) fn now_ms() -> u64 {
    js_sys::Date::now() as u64
}

impl AgentHost {
    pub fn new<D: AgentDefinition>(
        state: State,
        env: Env,
        definition: D,
        agent: &str,
    ) -> worker::Result<Rc<Self>> {
        AgentHost::new_shared(state, env, Rc::new(definition), agent)
    }

    /// [`AgentHost::new`] with a definition held elsewhere too.
    pub(crate) fn new_shared<D: AgentDefinition>(
        state: State,
        env: Env,
        definition: Rc<D>,
        agent: &str,
    ) -> worker::Result<Rc<Self>> {
        let lookup = |name: &str| env_value(&env, name);
        #[cfg(feature = "debug-routes")]
        let debug = debug::DebugSwitches::from_vars(lookup);
        let channel_policy = ChannelPolicy::from_vars(lookup);
        let internal_fetch = lookup(INTERNAL_FETCH_FALLBACK_VAR).as_deref() == Some("1");
        let max_connections_per_client =
            lookup("MAX_CONNECTIONS_PER_CLIENT").and_then(|v| v.trim().parse::<usize>().ok());
        let model_error_detail_to_tabs = lookup(MODEL_ERROR_DETAIL_VAR).as_deref() == Some("tabs");
        let link_hosts = lookup(FILE_LINK_HOSTS_VAR)
            .unwrap_or_default()
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        let settings = definition.settings(&Vars(&lookup));
        let declared_mcp = definition.mcp_servers(&Vars(&lookup));
        crate::log::set_threshold(settings.turns.log_level);
        #[allow(unused_mut)]
        let mut tools = definition.tools();
        tools.extend(crate::agent::builtin_tools::set_context::set_context_tool(
            definition.as_ref(),
        ));
        tools.extend(
            crate::agent::builtin_tools::search_context::search_context_tool(definition.as_ref()),
        );
        #[cfg(feature = "debug-routes")]
        if debug.tools {
            tools.extend(crate::agent::debug_tools::tools());
            tools.extend(debug_author::tools());
        }
        let store = SqlStore::open(state.storage(), definition.searches_history())?;
        let stored = store.load()?;
        let name = stored_name(&store);
        let mut providers = settings.providers();
        for (name, provider) in definition.model_providers(&Vars(&lookup)) {
            providers = providers.with(&name, Provider::custom(provider));
        }
        if let Some(name) = lookup("MODEL_PROVIDER") {
            providers = providers.default_to(&name);
        }
        let providers = providers.with_workers_ai_ids(&random_token(10));
        let mut config = core_config(&definition, &settings, &tools, &name, agent);
        #[cfg(feature = "debug-routes")]
        if let Some(ms) = debug.heartbeat_ms {
            config.settings.recovery.heartbeat_ms = ms;
        }
        let author = AuthorHooks::of(&definition);
        for refused in &author.refused_rpc_methods {
            crate::log::write(crate::log::LogLevel::Error, refused);
        }
        config.agent_api = author.agent_api(&definition);
        let mcp = mcp::McpClients::new(
            tools.iter().map(|t| t.spec.name.clone()),
            settings.outbound_hosts.clone(),
            declared_mcp,
        );
        let child_calls = ChildCalls::new(ChildCallLimits {
            per_turn: settings.turns.limits.max_child_calls_per_turn,
            per_agent: settings.turns.limits.max_child_calls_per_agent,
            max_depth: settings.turns.limits.max_delegation_depth,
        });
        let history: Rc<dyn crate::core::History> = Rc::new(store.clone());
        let mut core = Core::new(config, stored, history, Box::new(RandomIds), now_ms());
        for refused in core.reconcile_declared_schedules(definition.scheduled_tasks(), now_ms()) {
            crate::log::write(crate::log::LogLevel::Error, &refused);
        }
        let (owner, allowed) = (definition.clone(), settings.clone());
        let authorize: Authorizer = Box::new(move |request| owner.authorize(request, &allowed));
        let routes = definition.clone();
        let on_request: RequestHook = Box::new(move |req, agent| {
            let routes = routes.clone();
            Box::pin(async move { routes.on_request(req, agent).await })
        });
        let alarms = definition.clone();
        let on_author_alarm: AlarmHook = Box::new(move |agent| {
            let alarms = alarms.clone();
            Box::pin(async move { alarms.on_alarm(agent).await })
        });
        #[allow(unused_mut)]
        let mut schedule_callbacks = definition.schedule_callbacks();
        #[cfg(feature = "debug-routes")]
        if debug.tools {
            schedule_callbacks.extend(debug_author::schedule_callbacks());
        }
        let host = Rc::new(AgentHost {
            state,
            authorize,
            on_request,
            on_author_alarm,
            schedule_callbacks: schedule_callbacks
                .into_iter()
                .map(|c| (c.name.clone(), c))
                .collect(),
            store,
            core: RefCell::new(core),
            providers,
            env: env.clone(),
            tools: tools
                .into_iter()
                .map(|t| (t.spec.name.clone(), t))
                .collect(),
            hooks: AsyncHooks::of(&definition),
            author,
            tool_runs: ToolRuns::default(),
            call_runs: CallRuns::default(),
            closed: RefCell::new(Default::default()),
            sockets: RefCell::new(HashMap::new()),
            model_calls: RefCell::new(HashMap::new()),
            wake: RefCell::new(None),
            alarm_asked: std::cell::Cell::new(None),
            alarm_stored: std::cell::Cell::new(true),
            alarm_set_wait: RefCell::new(None),
            #[cfg(feature = "debug-routes")]
            debug,
            channel_policy,
            model_error_detail_to_tabs,
            link_hosts,
            sign_in_same_browser: settings.mcp_sign_in_same_browser,
            sign_in_key: settings.auth_token.clone().filter(|t| !t.is_empty()),
            mcp,
            settled_waiters: SettledWaiters::default(),
            rpc: rpc_calls::RpcCalls::default(),
            internal_fetch,
            max_connections_per_client,
            child_calls,
            destroyed: std::cell::Cell::new(false),
            started: RefCell::new(None),
        });
        #[cfg(feature = "debug-routes")]
        debug::host_created();
        host.adopt_open_sockets();
        host.dispatch(Event::Woke);
        host.run_on_start(definition);
        Ok(host)
    }

    /// Starts the definition's `on_start`; every entry point waits for it
    /// (`ready`).
    fn run_on_start<D: AgentDefinition>(self: &Rc<Self>, definition: Rc<D>) {
        use futures::FutureExt;
        let agent = self.handle();
        #[cfg(feature = "debug-routes")]
        let debug_start = self.debug.tools.then(|| Rc::downgrade(self));
        let run = async move {
            definition.on_start(agent).await;
            // Test-only: a slow start of its own, then noted, for a test to
            // see that the first request waited for it.
            #[cfg(feature = "debug-routes")]
            if let Some(host) = debug_start {
                worker::Delay::from(std::time::Duration::from_millis(50)).await;
                if let Some(host) = host.upgrade() {
                    host.debug.started.set(true);
                }
            }
        }
        .boxed_local()
        .shared();
        wasm_bindgen_futures::spawn_local(run.clone());
        *self.started.borrow_mut() = Some(run);
    }

    /// Resolves once the definition's `on_start` has run.
    pub async fn ready(&self) {
        let started = self.started.borrow().clone();
        if let Some(started) = started {
            started.await;
        }
    }

    /// The agent's own turn (e.g. from a scheduled job or an HTTP route of
    /// yours): stored, queued and broadcast to every tab like a tab's turn.
    pub fn chat(self: &Rc<Self>, message: crate::protocol::UIMessage) {
        self.dispatch(Event::ProgrammaticChat {
            conn: None,
            message,
            tools: Vec::new(),
            executor: false,
        });
    }

    /// Where a child call made now by this agent's code counts: turn
    /// `turn`'s tools, or (`None`) the agent's code outside a turn.
    fn child_call_scope(&self, turn: Option<&str>) -> ChildCallScope {
        // A turn a parent's call started is as deep as the parent said
        // (the core keeps the depth with the turn).
        let depth = turn.map_or(0, |_| self.core.borrow().running_delegation_depth());
        ChildCallScope::new(self.child_calls.clone(), turn).at_depth(depth)
    }

    /// The agent as its own code reaches it.
    pub(crate) fn handle(self: &Rc<Self>) -> AgentHandle {
        AgentHandle::new(self.clone())
    }

    /// Forgets the history; every tab is told to clear.
    pub fn clear_messages(self: &Rc<Self>) {
        self.dispatch(Event::ClearHistory);
    }

    pub fn dispatch(self: &Rc<Self>, event: Event) {
        let effects = self.handle_event(event, now_ms());
        self.execute(effects);
        self.schedule_timers();
    }

    /// The core handles `event` at `now`: its log lines are written, the
    /// effects it asks for handed back (not yet carried out).
    fn handle_event(&self, event: Event, now: u64) -> Vec<crate::core::Effect> {
        let mut core = self.core.borrow_mut();
        core.handle(event, now);
        self.write_log(&mut core);
        core.take_effects()
    }

    /// The in-isolate wake-up fired: the core fires whatever is due.
    fn on_wake(self: &Rc<Self>) {
        let effects = {
            let mut core = self.core.borrow_mut();
            core.handle_timeout(now_ms());
            self.write_log(&mut core);
            core.take_effects()
        };
        self.execute(effects);
        self.schedule_timers();
    }

    /// Writes the core's log events, one line each, after the agent's prefix.
    fn write_log(&self, core: &mut Core) {
        let events = core.take_log();
        if events.is_empty() {
            return;
        }
        let prefix = crate::log::agent_prefix(&core.config().agent, &core.config().name);
        for event in events {
            crate::log::write_after_event(event.level(), &format!("{prefix} {event}"));
        }
    }

    /// One line of the host's own, after the agent's prefix.
    pub(super) fn log_line(&self, level: crate::log::LogLevel, text: &str) {
        if !level.shown_at(crate::log::threshold()) {
            return;
        }
        let core = self.core.borrow();
        let prefix = crate::log::agent_prefix(&core.config().agent, &core.config().name);
        crate::log::write_after_event(level, &format!("{prefix} {text}"));
    }
}

fn stored_name(store: &SqlStore) -> String {
    store
        .config_value(crate::core::ConfigKey::InstanceName)
        .ok()
        .flatten()
        .unwrap_or_else(|| "default".to_string())
}
