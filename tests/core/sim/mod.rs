//! A deterministic host around `durable_chat::core::Core` for native tests:
//! a virtual clock, an in-memory store, tabs that record every frame, a
//! scripted model and scripted server tools, and the armed timers. Tests send
//! client frames, step virtual time (`step`, `advance`, `run_until_idle`) and
//! can drop the core and rebuild it from the store (`evict`).

pub mod frames;
pub mod model;
pub mod scenarios;
pub mod store;

pub use frames::*;
pub use model::*;
pub use scenarios::*;
pub use store::*;

use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use serde_json::{json, Value};

use durable_chat::core::{carry_out, Step};
use durable_chat::core::{
    ApprovalRule, AuthorCall, CallId, ChatError, ChatResponse, ConnId, Core, CoreConfig, Effect,
    ErrorDisposition, Event, LogEvent, ScheduleOutcome, StepReport, StoredState, SummaryRequest,
    Timer, ToolCall, ToolCallDecision, ToolOutcome, ToolSpec, TurnConfig, TurnContext,
};
use durable_chat::model::{ModelEvent, ModelFailure};
use durable_chat::testing::SharedIds;

#[derive(Debug)]
enum Work {
    Model {
        call: CallId,
        event: ModelEvent,
    },
    ModelFailed {
        call: CallId,
        failure: ModelFailure,
    },
    Tool {
        call: CallId,
        tool_call_id: String,
        result: Result<Value, String>,
    },
    Prepared {
        turn: CallId,
        config: Box<TurnConfig>,
    },
    /// The host's `before_tool_call` answered.
    Decided {
        call: CallId,
        decision: ToolCallDecision,
    },
    /// The host's summarizer answered.
    Summarized {
        call: CallId,
        summary: Option<String>,
    },
    /// The host's `on_chat_error` answered.
    ErrorDecided {
        call: CallId,
        disposition: ErrorDisposition,
    },
    /// The host's `after_tool_call` answered.
    Rewritten {
        call: CallId,
        result: ToolOutcome,
    },
    /// The host's `on_chat_response` returned for this turn.
    Delivered {
        request_id: String,
    },
    /// A schedule's callback returned.
    ScheduleRan {
        run: String,
        outcome: ScheduleOutcome,
    },
}

impl Work {
    /// The event the host's answer is.
    fn into_event(self) -> Event {
        match self {
            Work::Model { call, event } => Event::Model { call, event },
            Work::ModelFailed { call, failure } => Event::ModelFailed { call, failure },
            Work::Tool {
                call,
                tool_call_id,
                result,
            } => Event::ToolDone {
                call,
                tool_call_id,
                result,
            },
            Work::Prepared { turn, config } => Event::TurnPrepared { turn, config },
            Work::Delivered { request_id } => Event::ChatResponseDelivered { request_id },
            Work::ScheduleRan { run, outcome } => Event::ScheduleRan { run, outcome },
            Work::Decided { call, decision } => Event::ToolCallDecided { call, decision },
            Work::Rewritten { call, result } => Event::ToolResultRewritten { call, result },
            Work::ErrorDecided { call, disposition } => {
                Event::ChatErrorDecided { call, disposition }
            }
            Work::Summarized { call, summary } => Event::Summarized { call, summary },
        }
    }
    fn call(&self) -> Option<CallId> {
        match self {
            Work::Model { call, .. } | Work::ModelFailed { call, .. } | Work::Tool { call, .. } => {
                Some(*call)
            }
            Work::Prepared { turn, .. } => Some(*turn),
            Work::Decided { call, .. } => Some(*call),
            Work::Rewritten { call, .. } => Some(*call),
            Work::ErrorDecided { call, .. } => Some(*call),
            Work::Summarized { call, .. } => Some(*call),
            Work::Delivered { .. } | Work::ScheduleRan { .. } => None,
        }
    }
}

/// The host's `before_tool_call`, asked for every tool call: answered
/// `delay_ms` later (with none, at once) with what `hook` decides.
#[derive(Clone)]
pub struct Decider {
    pub delay_ms: u64,
    pub hook: Rc<dyn Fn(&ToolCall) -> ToolCallDecision>,
}

/// Rewrites a tool's result.
pub type RewriteHook = Rc<dyn Fn(&ToolCall, ToolOutcome) -> ToolOutcome>;

/// The host's `after_tool_call`, asked for every result: answered
/// `delay_ms` later (with none, at once) with what `hook` leaves of it.
#[derive(Clone)]
pub struct Rewriter {
    pub delay_ms: u64,
    pub hook: RewriteHook,
}

/// The host's `on_chat_error`, asked for every model call that failed for
/// good: answered `delay_ms` later (with none, at once) with what `hook`
/// decides.
#[derive(Clone)]
pub struct ErrorDecider {
    pub delay_ms: u64,
    pub hook: Rc<dyn Fn(&ChatError) -> ErrorDisposition>,
}

/// Writes a summary (`None`: declines).
pub type SummaryHook = Rc<dyn Fn(&SummaryRequest) -> Option<String>>;

/// The host's summarizer when the core asks (`CoreConfig::summarize_by_host`):
/// answered `delay_ms` later with what `hook` writes.
#[derive(Clone)]
pub struct Summarizer {
    pub delay_ms: u64,
    pub hook: SummaryHook,
}

/// The host's `before_turn`, asked for every turn: answered `delay_ms`
/// later (with none, at once) with what `hook` returns.
#[derive(Clone)]
pub struct Preparer {
    pub delay_ms: u64,
    pub hook: Rc<dyn Fn(&TurnContext) -> TurnConfig>,
}

#[derive(Debug)]
struct Scheduled {
    at: u64,
    order: u64,
    work: Work,
}

#[derive(Debug, Default)]
pub struct Tab {
    pub frames: Vec<Value>,
    pub connected: bool,
    /// What the core noted with the socket (`Effect::NoteListMatches`).
    pub list_matches: bool,
}

/// Steps `run_until_idle` may take before it decides the core is looping.
const MAX_STEPS: usize = 200_000;

pub struct Sim {
    core: Core,
    config: CoreConfig,
    ids: SharedIds,
    pub now: u64,
    pub store: SimStore,
    pub tabs: BTreeMap<String, Tab>,
    agenda: Vec<Scheduled>,
    /// Hook answers with no delay, handled once the current effects are.
    answered_now: VecDeque<Work>,
    /// The core's armed timers (and the durable alarm) with their due time
    /// and the order in which they were armed.
    timers: BTreeMap<Timer, (u64, u64)>,
    /// The durable deadline this core instance last asked for.
    alarm_asked: Option<u64>,
    order: u64,
    pub model: ScriptedModel,
    pub tools: ScriptedTools,
    /// Answers `Effect::PrepareTurn` (default: at once, changing nothing).
    pub preparer: Preparer,
    /// Contexts of the turns the core asked to prepare.
    pub prepared: Vec<TurnContext>,
    /// Answers `Effect::DecideToolCall` (default: at once, allowing).
    pub decider: Decider,
    /// The calls the core asked the host to decide, in order.
    pub decided: Vec<ToolCall>,
    /// Answers `Effect::RewriteToolResult` (default: at once, unchanged).
    pub rewriter: Rewriter,
    /// The calls and results the core asked the host to look at, in order.
    pub rewritten: Vec<(ToolCall, ToolOutcome)>,
    /// Answers `Effect::DecideChatError` (default: at once, failing).
    pub error_decider: ErrorDecider,
    /// The failed turns the core asked the host to decide, in order.
    pub errors_decided: Vec<ChatError>,
    /// Answers `Effect::Summarize` (default: at once, declining).
    pub summarizer: Summarizer,
    /// What the core asked the host to summarize, in order.
    pub summaries_asked: Vec<SummaryRequest>,
    /// What `Effect::TurnEnded` reported, in order.
    pub responses: Vec<ChatResponse>,
    /// How long the host's `on_chat_response` takes before it returns
    /// (`Event::ChatResponseDelivered`; default: at once).
    pub response_delay_ms: u64,
    /// What `Effect::StepEnded` reported, in order.
    pub step_reports: Vec<StepReport>,
    /// Server tool runs whose abort signal fired.
    pub aborted_tools: Vec<CallId>,
    /// Frames sent to a connection that is not open.
    pub misdelivered: Vec<(String, Value)>,
    /// The core's log events, in order (what the host writes as lines).
    pub log: Vec<LogEvent>,
    /// When the agent's own alarm ran (`Effect::AuthorAlarm`), in order.
    pub author_alarms: Vec<u64>,
    /// What the core asked of the author's code (`Effect::Author`), in order.
    pub author_calls: Vec<AuthorCall>,
    /// Schedules the core asked to run: (when, name, payload).
    pub schedule_runs: Vec<(u64, String, serde_json::Value)>,
    /// How long a schedule's callback runs before it returns (default: at
    /// once).
    pub schedule_run_ms: u64,
    /// The attempt number each schedule run started with, in run order.
    pub schedule_attempts: Vec<u32>,
    /// Each server tool run, with the delegation depth of the turn it ran
    /// in (what the host puts in its `ToolContext`), in order.
    pub tool_depths: Vec<(String, u32)>,
    /// How the next runs of a schedule end, by name, in order (default:
    /// `Done`).
    pub schedule_outcomes: BTreeMap<String, VecDeque<ScheduleOutcome>>,
}

/// The demo agent's shape: `get_weather` runs freely, `delete_file` needs approval.
pub fn demo_config() -> CoreConfig {
    let mut config = CoreConfig::new("room-1", "chat-agent");
    config.system_prompt = "You are a test agent.".into();
    config.settings.model.model = "test-model".into();
    // Scenarios send many requests within a simulated minute; the request
    // rates have their own tests (admit/request_rate.rs), which set them.
    config.settings.limits.max_requests_per_minute = 0;
    config.settings.limits.max_agent_requests_per_minute = 0;
    config.tools = vec![
        ToolSpec::new(
            "get_weather",
            "Weather for a city",
            json!({"type":"object","properties":{"city":{"type":"string"}}}),
        ),
        ToolSpec::new(
            "delete_file",
            "Deletes a file",
            json!({"type":"object","properties":{"path":{"type":"string"}}}),
        )
        .needs_approval(ApprovalRule::Always),
    ];
    config
}

impl Default for Sim {
    fn default() -> Self {
        Sim::new()
    }
}

impl Sim {
    pub fn new() -> Sim {
        Sim::with_config(demo_config())
    }

    /// The demo config, adjusted.
    pub fn with(adjust: impl FnOnce(&mut CoreConfig)) -> Sim {
        let mut config = demo_config();
        adjust(&mut config);
        Sim::with_config(config)
    }

    pub fn with_config(config: CoreConfig) -> Sim {
        let ids = SharedIds::default();
        let store = SimStore::default();
        let core = Core::new(
            config.clone(),
            StoredState::default(),
            store.history(),
            Box::new(ids.clone()),
            0,
        );
        Sim {
            core,
            config,
            ids,
            now: 0,
            store,
            tabs: BTreeMap::new(),
            agenda: Vec::new(),
            answered_now: VecDeque::new(),
            timers: BTreeMap::new(),
            alarm_asked: None,
            order: 0,
            model: ScriptedModel::default(),
            tools: ScriptedTools::default(),
            preparer: Preparer {
                delay_ms: 0,
                hook: Rc::new(|_| TurnConfig::default()),
            },
            prepared: Vec::new(),
            decider: Decider {
                delay_ms: 0,
                hook: Rc::new(|_| ToolCallDecision::Allow),
            },
            decided: Vec::new(),
            rewriter: Rewriter {
                delay_ms: 0,
                hook: Rc::new(|_, result| result),
            },
            rewritten: Vec::new(),
            error_decider: ErrorDecider {
                delay_ms: 0,
                hook: Rc::new(|_| ErrorDisposition::Fail),
            },
            errors_decided: Vec::new(),
            summarizer: Summarizer {
                delay_ms: 0,
                hook: Rc::new(|_| None),
            },
            summaries_asked: Vec::new(),
            responses: Vec::new(),
            response_delay_ms: 0,
            step_reports: Vec::new(),
            aborted_tools: Vec::new(),
            misdelivered: Vec::new(),
            log: Vec::new(),
            author_alarms: Vec::new(),
            author_calls: Vec::new(),
            schedule_runs: Vec::new(),
            schedule_run_ms: 0,
            schedule_attempts: Vec::new(),
            tool_depths: Vec::new(),
            schedule_outcomes: BTreeMap::new(),
        }
    }

    pub fn core(&self) -> &Core {
        &self.core
    }

    // ---- scripting ----

    pub fn script(&mut self, reply: Reply) -> &mut Sim {
        self.model.replies.push_back(reply);
        self
    }

    pub fn script_tool(&mut self, name: &str, reply: ToolReply) -> &mut Sim {
        self.tools
            .scripts
            .entry(name.to_string())
            .or_default()
            .push_back(reply);
        self
    }

    // ---- tabs ----

    pub fn connect(&mut self, tab: &str) {
        self.connect_from(tab, None);
    }

    /// A tab whose socket the host read `client`'s address for (`None`: unnamed).
    pub fn connect_from(&mut self, tab: &str, client: Option<&str>) {
        self.tabs.insert(
            tab.to_string(),
            Tab {
                frames: Vec::new(),
                connected: true,
                list_matches: false,
            },
        );
        self.handle(Event::Connected {
            conn: conn(tab),
            client: client.map(str::to_string),
        });
    }

    /// A parent agent's channel: gets frames like a tab but no connect frames.
    pub fn open_channel(&mut self, tab: &str) {
        self.tabs.insert(
            tab.to_string(),
            Tab {
                frames: Vec::new(),
                connected: true,
                list_matches: false,
            },
        );
        self.handle(Event::Adopted {
            conn: conn(tab),
            list_matches: false,
        });
    }

    pub fn disconnect(&mut self, tab: &str) {
        if let Some(t) = self.tabs.get_mut(tab) {
            t.connected = false;
        }
        self.handle(Event::Disconnected { conn: conn(tab) });
    }

    /// A text frame from `tab`, handled at the current virtual time.
    pub fn send(&mut self, tab: &str, frame: impl Into<String>) {
        let text = frame.into();
        self.handle(Event::Frame {
            conn: conn(tab),
            text,
        });
    }

    /// A text frame from a parent agent on channel `tab` (see `open_channel`).
    pub fn send_channel(&mut self, tab: &str, frame: impl Into<String>) {
        let text = frame.into();
        self.handle(Event::ChannelFrame {
            conn: conn(tab),
            text,
        });
    }

    pub fn frames(&self, tab: &str) -> &[Value] {
        self.tabs.get(tab).map_or(&[], |t| &t.frames)
    }

    pub fn take_frames(&mut self, tab: &str) -> Vec<Value> {
        self.tabs
            .get_mut(tab)
            .map(|t| std::mem::take(&mut t.frames))
            .unwrap_or_default()
    }

    /// Forgets what every tab received so far.
    pub fn clear_frames(&mut self) {
        for tab in self.tabs.values_mut() {
            tab.frames.clear();
        }
    }

    // ---- time ----

    /// Delivers the next piece of work (model event, tool result or timer),
    /// moving the clock to its time. Returns false when nothing is scheduled.
    pub fn step(&mut self) -> bool {
        self.step_until(u64::MAX)
    }

    /// Delivers everything due now, without moving the clock.
    pub fn settle(&mut self) {
        let now = self.now;
        self.drain_until(now);
    }

    /// Moves the clock `ms` forward, delivering everything due on the way.
    pub fn advance(&mut self, ms: u64) {
        let target = self.now + ms;
        self.drain_until(target);
        self.now = target;
    }

    /// Delivers work until nothing is scheduled but durable timers (the
    /// heartbeat re-arms itself while a turn runs; `advance` fires it).
    pub fn run_until_idle(&mut self) {
        for _ in 0..MAX_STEPS {
            let only_durable = self.agenda.is_empty() && self.timers.keys().all(|t| t.is_durable());
            if only_durable || !self.step() {
                return;
            }
        }
        panic!("the core kept scheduling work for {MAX_STEPS} steps");
    }

    fn drain_until(&mut self, limit: u64) {
        for _ in 0..MAX_STEPS {
            if !self.step_until(limit) {
                return;
            }
        }
        panic!("the core kept scheduling work for {MAX_STEPS} steps");
    }

    fn step_until(&mut self, limit: u64) -> bool {
        let work = self
            .agenda
            .iter()
            .enumerate()
            .min_by_key(|(_, s)| (s.at, s.order))
            .map(|(i, s)| (s.at, s.order, i));
        let timer = self
            .timers
            .iter()
            .min_by_key(|(_, (at, order))| (*at, *order))
            .map(|(t, (at, order))| (*at, *order, *t));
        let take_timer = match (work, timer) {
            (None, None) => return false,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some((wa, wo, _)), Some((ta, to, _))) => (ta, to) < (wa, wo),
        };
        if take_timer {
            let Some((at, _, t)) = timer else {
                return false;
            };
            if at > limit {
                return false;
            }
            self.now = self.now.max(at);
            self.timers.remove(&t);
            if t.is_durable() {
                self.handle(Event::Timer(t));
            } else {
                self.core.handle_timeout(self.now);
                self.apply_effects();
            }
        } else {
            let Some((at, _, index)) = work else {
                return false;
            };
            if at > limit {
                return false;
            }
            self.now = self.now.max(at);
            let item = self.agenda.remove(index);
            let event = item.work.into_event();
            self.handle(event);
        }
        true
    }

    /// When the next piece of work or timer is due, if anything is scheduled.
    pub fn next_due(&self) -> Option<u64> {
        let work = self.agenda.iter().map(|s| s.at).min();
        let timer = self.timers.values().map(|(at, _)| *at).min();
        work.into_iter().chain(timer).min()
    }

    /// Timers armed right now, with their due times.
    pub fn armed(&self) -> Vec<(Timer, u64)> {
        self.timers.iter().map(|(t, (at, _))| (*t, *at)).collect()
    }

    /// Model calls still streaming (scheduled events pending).
    pub fn open_model_calls(&self) -> usize {
        let mut calls: Vec<CallId> = self
            .agenda
            .iter()
            .filter(|s| matches!(s.work, Work::Model { .. } | Work::ModelFailed { .. }))
            .filter_map(|s| s.work.call())
            .collect();
        calls.dedup();
        calls.len()
    }

    // ---- eviction ----

    /// The isolate dies: in-flight model calls, tool runs and in-isolate
    /// timers are lost (durable ones stay armed, like the Durable Object
    /// alarm); a new core starts from the store, adopts the still-open
    /// sockets and is told it woke.
    pub fn evict(&mut self) {
        self.agenda.clear();
        self.answered_now.clear();
        self.timers.retain(|t, _| t.is_durable());
        self.alarm_asked = None;
        let stored = self.store.load();
        self.core = Core::new(
            self.config.clone(),
            stored,
            self.store.history(),
            Box::new(self.ids.clone()),
            self.now,
        );
        self.apply_effects();
        let open: Vec<(String, bool)> = self
            .tabs
            .iter()
            .filter(|(_, t)| t.connected)
            .map(|(name, t)| (name.clone(), t.list_matches))
            .collect();
        for (tab, list_matches) in open {
            self.handle(Event::Adopted {
                conn: conn(&tab),
                list_matches,
            });
        }
        self.handle(Event::Woke);
    }

    // ---- the host loop ----

    /// Calls the core directly at the current virtual time (e.g. `Core::submit`,
    /// which returns what it did) and carries out what it asked for.
    pub fn call<R>(&mut self, f: impl FnOnce(&mut Core, u64) -> R) -> R {
        let result = f(&mut self.core, self.now);
        self.apply_effects();
        result
    }

    /// Any core event at the current virtual time (e.g. a programmatic turn).
    pub fn handle(&mut self, event: Event) {
        self.core.handle(event, self.now);
        self.apply_effects();
    }

    /// The agent's own code schedules its alarm (`Core::schedule_alarm`).
    pub fn schedule_alarm(&mut self, at_ms: Option<u64>) {
        self.core.schedule_alarm(at_ms, self.now);
        self.apply_effects();
    }

    /// The agent's own code sets the synced state (`Core::set_state`).
    pub fn set_state(&mut self, state: Value) -> Result<(), String> {
        let result = self.core.set_state(state, self.now);
        self.apply_effects();
        result
    }

    /// Carries out the core's effects through the host's own `carry_out`: a
    /// run of writes as one transaction; when it fails, the frames queued
    /// after it (up to the next write) are held back and the core is told.
    fn apply_effects(&mut self) {
        self.log.extend(self.core.take_log());
        let effects = self.core.take_effects();
        let refused = carry_out(effects, |step| match step {
            Step::Write(ops) => self.store.apply_batch(ops),
            Step::Do(effect) => {
                self.apply(effect);
                Ok(())
            }
        });
        self.sync_timers();
        if let Some((ops, error)) = refused {
            self.handle(Event::StoreWriteFailed { ops, error });
        }
        while let Some(work) = self.answered_now.pop_front() {
            self.handle(work.into_event());
        }
    }

    /// Mirrors the core's timer table: in-isolate timers as the core has
    /// them (a moved deadline is armed anew), the durable alarm only when
    /// this core instance's deadline changes — an alarm set by an earlier
    /// instance stays, as the Durable Object alarm does.
    fn sync_timers(&mut self) {
        let armed = self.core.armed_timers();
        self.timers
            .retain(|t, _| t.is_durable() || armed.iter().any(|(a, _)| a == t));
        for (timer, at) in armed {
            if timer.is_durable() || self.timers.get(&timer).map(|(a, _)| *a) == Some(at) {
                continue;
            }
            let order = self.next_order();
            self.timers.insert(timer, (at, order));
        }
        let durable = self.core.durable_deadline();
        if durable != self.alarm_asked {
            self.alarm_asked = durable;
            match durable {
                Some(at) => {
                    let order = self.next_order();
                    self.timers.insert(Timer::Heartbeat, (at, order));
                }
                None => {
                    self.timers.remove(&Timer::Heartbeat);
                }
            }
        }
    }

    fn next_order(&mut self) -> u64 {
        self.order += 1;
        self.order
    }

    fn schedule(&mut self, at: u64, work: Work) {
        let order = self.next_order();
        self.agenda.push(Scheduled { at, order, work });
    }

    /// A hook's answer `delay_ms` from now; with no delay, as soon as the
    /// current event's effects are carried out (a hook that returns at
    /// once, before any other event reaches the agent).
    fn answer(&mut self, delay_ms: u64, work: Work) {
        if delay_ms == 0 {
            self.answered_now.push_back(work);
        } else {
            self.schedule(self.now + delay_ms, work);
        }
    }

    fn apply(&mut self, effect: Effect) {
        if let Effect::RunTool { tool_name, .. } = &effect {
            // What the host puts in the tool's context.
            let depth = self.core.running_delegation_depth();
            self.tool_depths.push((tool_name.clone(), depth));
        }
        match effect {
            Effect::Send { to, frame } => {
                let value: Value = serde_json::from_str(&frame).unwrap_or_else(|e| {
                    panic!("core sent a frame that is not JSON ({e}): {frame}")
                });
                for c in to {
                    match self.tabs.get_mut(&*c) {
                        Some(tab) if tab.connected => tab.frames.push(value.clone()),
                        _ => self.misdelivered.push((c.to_string(), value.clone())),
                    }
                }
            }
            Effect::SendTranscript { to, frame } => {
                let text = frame.read(&*self.store.history());
                self.apply(Effect::Send {
                    to,
                    frame: Rc::from(text),
                });
            }
            Effect::NoteListMatches { conn, matches } => {
                if let Some(tab) = self.tabs.get_mut(&*conn) {
                    tab.list_matches = matches;
                }
            }
            Effect::Store(op) => self.store.apply(op),
            Effect::CallModel { call, request } => {
                let reply = self.model.replies.pop_front().unwrap_or_else(|| {
                    panic!(
                        "model called (call {call}) with no reply scripted; request: {request:?}"
                    )
                });
                self.model.requests.push(ModelCall {
                    at: self.now,
                    request: *request,
                });
                let start = self.now;
                let mut at = start;
                let usage = reply.usage;
                for event in reply.events {
                    at += reply.every_ms;
                    self.schedule(at, Work::Model { call, event });
                }
                at += reply.every_ms;
                match reply.end {
                    End::Finish(reason) => self.schedule(
                        at,
                        Work::Model {
                            call,
                            event: ModelEvent::Finished { reason, usage },
                        },
                    ),
                    End::Fail(failure) => self.schedule(at, Work::ModelFailed { call, failure }),
                }
            }
            Effect::AuthorAlarm => self.author_alarms.push(self.now),
            Effect::RunSchedule {
                run,
                name,
                payload,
                attempt,
                ..
            } => {
                self.schedule_attempts.push(attempt);
                let outcome = self
                    .schedule_outcomes
                    .get_mut(&name)
                    .and_then(VecDeque::pop_front)
                    .unwrap_or(ScheduleOutcome::Done);
                self.schedule_runs.push((self.now, name, payload));
                let at = self.now + self.schedule_run_ms;
                self.schedule(at, Work::ScheduleRan { run, outcome });
            }
            Effect::AbortModel { call } => {
                self.model.aborted.push(call);
                self.agenda.retain(|s| s.work.call() != Some(call));
            }
            // A parent agent's executor is scripted like a server tool.
            Effect::RunTool {
                call,
                tool_call_id,
                tool_name,
                input,
            }
            | Effect::CallRemoteTool {
                call,
                tool_call_id,
                tool_name,
                input,
                ..
            } => {
                let reply = self.tools.next(&tool_name);
                self.tools.runs.push(ToolRun {
                    call,
                    tool_call_id: tool_call_id.clone(),
                    tool_name,
                    input,
                });
                let at = self.now + reply.delay_ms;
                self.schedule(
                    at,
                    Work::Tool {
                        call,
                        tool_call_id,
                        result: reply.result,
                    },
                );
            }
            Effect::PrepareTurn { turn, context } => {
                let config = Box::new((self.preparer.hook)(&context));
                self.prepared.push(context);
                self.answer(self.preparer.delay_ms, Work::Prepared { turn, config });
            }
            Effect::DecideToolCall { call, tool } => {
                let decision = (self.decider.hook)(&tool);
                self.decided.push(tool);
                self.answer(self.decider.delay_ms, Work::Decided { call, decision });
            }
            Effect::DecideChatError { call, error } => {
                let disposition = (self.error_decider.hook)(&error);
                self.errors_decided.push(error);
                let work = Work::ErrorDecided { call, disposition };
                self.answer(self.error_decider.delay_ms, work);
            }
            Effect::RewriteToolResult { call, tool, result } => {
                let result_now = (self.rewriter.hook)(&tool, (*result).clone());
                self.rewritten.push((tool, *result));
                let work = Work::Rewritten {
                    call,
                    result: result_now,
                };
                self.answer(self.rewriter.delay_ms, work);
            }
            Effect::Summarize { call, request } => {
                let summary = (self.summarizer.hook)(&request);
                self.summaries_asked.push(request);
                let at = self.now + self.summarizer.delay_ms;
                self.schedule(at, Work::Summarized { call, summary });
            }
            Effect::TurnEnded(response) => {
                let at = self.now + self.response_delay_ms;
                let request_id = response.request_id.clone();
                self.responses.push(response);
                self.schedule(at, Work::Delivered { request_id });
            }
            Effect::StepEnded(report) => self.step_reports.push(report),
            Effect::Author(call) => self.author_calls.push(call),
            Effect::AbortTools { calls } => {
                self.aborted_tools.extend(&calls);
                self.agenda
                    .retain(|s| !s.work.call().is_some_and(|c| calls.contains(&c)));
            }
        }
    }

    // ---- reading state ----

    /// The core's transcript as JSON.
    pub fn transcript(&self) -> Vec<Value> {
        self.core
            .messages()
            .iter()
            .map(|m| serde_json::to_value(m).expect("message serializes"))
            .collect()
    }

    pub fn requests(&self) -> &[ModelCall] {
        &self.model.requests
    }

    pub fn last_request(&self) -> &ModelCall {
        self.model.requests.last().expect("the model was called")
    }
}

pub fn conn(tab: &str) -> ConnId {
    Rc::from(tab)
}
