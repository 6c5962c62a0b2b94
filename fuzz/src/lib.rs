//! Fuzz harnesses for durable-chat, shared by the cargo-fuzz targets in
//! `fuzz_targets/` and by the corpus replay test in `tests/corpus.rs`.
//!
//! * [`frame_parser`]: bytes → `parse_client_frame` and the channel parsers
//!   (never panic; a parsed message survives a JSON round trip), then the
//!   same text through a fresh core as a tab's frame and as a parent agent's
//!   channel frame (every frame it answers with is JSON with a `type`).
//! * [`core_events`]: bytes → a sequence of core events (frames built from
//!   fragments of valid frames and mutated, model events, tool results, armed
//!   timers, disconnects, sub-agent calls, evictions that rebuild the core from
//!   `durable_chat::testing::MemStore`, which applies its `StoreOp`s the way
//!   the SQLite store does, and refused writes), checked after every event
//!   against the invariants below. Effects are carried out as the host
//!   carries them out, through `durable_chat::core::carry_out`: a run of
//!   writes is one transaction on the store; a refused run (an injected
//!   failure) is rolled back whole, the frames after it are held back, and
//!   the core is told with `Event::StoreWriteFailed`.
//!
//! Invariants of `core_events` (a violation panics, which libFuzzer reports):
//! no panic inside the core; no duplicate message ids in `core.messages()`;
//! what the store holds (read back as the SQLite store would) equals the
//! core's transcript (from a refused write until the next eviction the core
//! may show what the store lacks, so then only after the eviction); no two
//! stored messages share a seq; chunk logs are appended without gaps or
//! overlaps and only to open streams (the last three checked by the store); a
//! write is refused only when a failure was injected; every frame sent is
//! JSON with a string `type`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use arbitrary::Unstructured;
use serde_json::{json, Value};

use durable_chat::core::{
    carry_out, leading_request_id, AgentApi, ApprovalRule, AuthorCall, CallId, Concurrency, ConnId,
    Core, CoreConfig, Effect, Event, Limits, Step, StoreOp, StoredState, Timer, ToolSpec,
    TurnConfig,
};
use durable_chat::model::{FinishReason, ModelEvent, ModelFailure};
use durable_chat::protocol::channel::{parse_child_frame, parse_parent_frame, ParentFrame};
use durable_chat::protocol::{parse_client_frame, ClientFrame, ClientToolSchema, UIMessage};
use durable_chat::testing::{MemStore, SharedIds};

// ---------------------------------------------------------------------------------------------
// frame_parser

/// Deterministic pseudo-random bytes for seed inputs (the same `seed` always
/// gives the same bytes): the corpus test and `make_seeds` use them.
pub use durable_chat::testing::seed_bytes;

/// The frame parser target: any bytes, as a text frame.
pub fn frame_parser(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = parse_client_frame(&text);
    let _ = leading_request_id(&text);
    match &parsed {
        Ok(ClientFrame::ChatRequest { request, .. }) => {
            let _ = Limits::default().check_chat_request(request);
            for message in &request.messages {
                let value = serde_json::to_value(message).expect("a parsed message serializes");
                let again: UIMessage =
                    serde_json::from_value(value).expect("a serialized message parses back");
                assert_eq!(&again, message, "a parsed message survives a round trip");
            }
        }
        Ok(ClientFrame::ToolResult(result)) => {
            let _ = Limits::default().check_tool_result(result);
        }
        _ => {}
    }
    if let Ok(ParentFrame::Chat(chat)) = parse_parent_frame(&text) {
        let again = parse_parent_frame(&ParentFrame::Chat(chat.clone()).to_json());
        assert_eq!(
            again,
            Ok(ParentFrame::Chat(chat)),
            "a chat frame survives a round trip"
        );
    }
    let _ = parse_child_frame(&text);
    // The same frame through a fresh core with small limits, from a tab and
    // from a parent agent's channel.
    let store = Rc::new(RefCell::new(MemStore::new()));
    let mut core = new_core(
        config(Concurrency::Queue),
        StoredState::default(),
        &store,
        SharedIds::default(),
        0,
    );
    let conn: ConnId = Rc::from("tab-0");
    let channel: ConnId = Rc::from("channel-0");
    core.handle(Event::Connected { conn: conn.clone(), client: None }, 0);
    core.handle(
        Event::Adopted {
            conn: channel.clone(),
        },
        0,
    );
    core.handle(
        Event::Frame {
            conn,
            text: text.to_string(),
        },
        1,
    );
    core.handle(
        Event::ChannelFrame {
            conn: channel,
            text: text.into_owned(),
        },
        2,
    );
    for effect in core.take_effects() {
        match effect {
            Effect::Send { frame, .. } => {
                check_frame(&frame);
            }
            Effect::SendTranscript { frame, .. } => {
                check_frame(&frame.read(&*store));
            }
            _ => {}
        }
    }
    assert_unique_ids(&core.messages());
}

// ---------------------------------------------------------------------------------------------
// the core under test

const CLIENT_TOOL: &str = "getUserTimezone";
const PARENT_TOOL: &str = "parent_clock";

/// Small limits so that the fuzzer reaches every refusal quickly.
fn config(concurrency: Concurrency) -> CoreConfig {
    let mut config = CoreConfig::new("fuzz", "chat-agent");
    config.system_prompt = "fuzz".into();
    config.tools = vec![
        ToolSpec::new("get_weather", "weather", json!({"type":"object"})),
        ToolSpec::new("delete_file", "delete", json!({"type":"object"}))
            .needs_approval(ApprovalRule::Always),
        ToolSpec::new("maybe_ask", "asks when told", json!({"type":"object"})).needs_approval(
            ApprovalRule::When(Rc::new(|input: &Value| {
                input.get("ask") == Some(&json!(true))
            })),
        ),
    ];
    config.settings.max_steps = 3;
    config.settings.concurrency = concurrency;
    // A synced state whose validator refuses `{"refuse": true}`, and one
    // callable method.
    config.agent_api = AgentApi {
        initial_state: Some(json!({})),
        validate_state: Some(Rc::new(|state: &Value, _| {
            match state.get("refuse") == Some(&json!(true)) {
                true => Err("refused".into()),
                false => Ok(()),
            }
        })),
        callables: ["echo".to_string()].into_iter().collect(),
        streaming: Default::default(),
    };
    config.settings.limits = Limits {
        max_frame_bytes: 8 * 1024,
        max_messages: 8,
        max_parts: 6,
        max_tool_result_bytes: 256,
        max_client_tools: 3,
        max_client_tool_bytes: 1024,
        max_client_tools_bytes: 2048,
        max_pending_turns: 3,
        model_stall_timeout_ms: 5_000,
        model_call_timeout_ms: 60_000,
        max_model_stream_bytes: 64 * 1024,
        max_tool_calls_per_step: 4,
        max_file_part_bytes: 2 * 1024,
        max_message_text_bytes: 1024,
        max_body_bytes: 512,
        ..Limits::default()
    };
    config
}

fn new_core(
    config: CoreConfig,
    stored: StoredState,
    store: &Rc<RefCell<MemStore>>,
    ids: SharedIds,
    now: u64,
) -> Core {
    Core::new(config, stored, store.clone(), Box::new(ids), now)
}

// ---------------------------------------------------------------------------------------------
// invariants

fn check_frame(frame: &str) -> Value {
    let value: Value = serde_json::from_str(frame)
        .unwrap_or_else(|e| panic!("the core sent a frame that is not JSON ({e}): {frame}"));
    assert!(
        value.get("type").and_then(Value::as_str).is_some(),
        "frame without a string type: {frame}"
    );
    value
}

fn assert_unique_ids(messages: &[UIMessage]) {
    let mut seen = BTreeSet::new();
    for m in messages {
        assert!(seen.insert(m.id.as_str()), "duplicate message id {}", m.id);
    }
}

// ---------------------------------------------------------------------------------------------
// core_events

/// Events in one input at most (each one is checked against every invariant).
const MAX_EVENTS: usize = 160;

/// Words used to build texts, ids and arguments.
const WORDS: &[&str] = &[
    "hi", "Paris", "", " ", "é", "🙂", "\u{0}", "<b>x</b>", "\\", "\"", "[hang]", "tool",
];

struct Sim {
    config: CoreConfig,
    core: Core,
    ids: SharedIds,
    store: Rc<RefCell<MemStore>>,
    now: u64,
    tabs: BTreeSet<ConnId>,
    channels: BTreeSet<ConnId>,
    model_calls: Vec<CallId>,
    tool_runs: Vec<(CallId, String)>,
    /// Turns waiting for the host's `before_turn` answer.
    prepares: Vec<CallId>,
    /// Callable runs waiting for their result: (connection, call id).
    callables: Vec<(ConnId, String)>,
    /// The durable alarm, as the platform keeps it across instances.
    alarm: Option<u64>,
    /// The durable deadline this core instance last asked for.
    alarm_asked: Option<u64>,
    /// Every write of the next event is refused (an injected failure).
    refuse_writes: bool,
    /// A write was refused since the core was last rebuilt from the store.
    diverged: bool,
    request_ids: Vec<String>,
    tool_call_ids: Vec<String>,
    message_ids: Vec<String>,
    counter: u64,
    /// What happened (frame, chunk, outcome and effect kinds), when asked for.
    features: Option<BTreeSet<String>>,
    counts: BTreeMap<String, u32>,
    dispatched: u64,
}

/// The core-events target: a random sequence of events against the invariants.
pub fn core_events(data: &[u8]) {
    run_core_events(data, false);
}

/// [`core_events`], also returning the kinds of things that happened (used to
/// pick seeds that cover different behaviour).
pub fn core_events_features(data: &[u8]) -> BTreeSet<String> {
    run_core_events(data, true).unwrap_or_default()
}

fn run_core_events(data: &[u8], features: bool) -> Option<BTreeSet<String>> {
    let mut u = Unstructured::new(data);
    let concurrency = match u.int_in_range(0..=5u8).unwrap_or(0) {
        0 | 1 => Concurrency::Queue,
        2 => Concurrency::Latest,
        3 => Concurrency::Merge,
        4 => Concurrency::Drop,
        _ => Concurrency::Debounce { ms: 300 },
    };
    let mut config = config(concurrency);
    // Half the runs prepare each turn through the host (`before_turn`).
    config.prepare_turn = u.arbitrary::<bool>().unwrap_or(false);
    let ids = SharedIds::default();
    let store = Rc::new(RefCell::new(MemStore::new()));
    let mut sim = Sim {
        core: new_core(
            config.clone(),
            StoredState::default(),
            &store,
            ids.clone(),
            0,
        ),
        config,
        ids,
        store,
        now: 0,
        tabs: BTreeSet::new(),
        channels: BTreeSet::new(),
        model_calls: Vec::new(),
        tool_runs: Vec::new(),
        prepares: Vec::new(),
        callables: Vec::new(),
        alarm_asked: None,
        alarm: None,
        refuse_writes: false,
        diverged: false,
        request_ids: vec!["r-0".into()],
        tool_call_ids: vec!["call-0".into()],
        message_ids: vec!["u-0".into(), "u-1".into()],
        counter: 0,
        features: features.then(BTreeSet::new),
        counts: BTreeMap::new(),
        dispatched: 0,
    };
    sim.dispatch(Event::Woke);
    for _ in 0..MAX_EVENTS {
        if u.is_empty() || sim.step(&mut u).is_err() {
            break;
        }
    }
    sim.check(true);
    sim.features
}

type R<T> = arbitrary::Result<T>;

impl Sim {
    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}", self.counter)
    }

    fn dispatch(&mut self, event: Event) {
        self.core.handle(event, self.now);
        self.carry_out_all();
    }

    /// Carries out the effects of what the core just handled, as the host
    /// does (`core::carry_out`), then checks; a refused run of writes is
    /// reported back to the core.
    fn carry_out_all(&mut self) {
        let effects = self.core.take_effects();
        let wrote = effects.iter().any(|e| matches!(e, Effect::Store(_)));
        self.store.borrow_mut().fail_writes = std::mem::take(&mut self.refuse_writes);
        let refused = carry_out(effects, |step| match step {
            Step::Write(ops) => self.write(ops),
            Step::Do(effect) => {
                self.carry_out(effect);
                Ok(())
            }
        });
        self.store.borrow_mut().fail_writes = false;
        let durable = self.core.durable_deadline();
        if durable != self.alarm_asked {
            self.alarm_asked = durable;
            self.alarm = durable;
        }
        self.dispatched += 1;
        if let Some((ops, error)) = refused {
            self.note(|| "refused".into());
            self.diverged = true;
            self.dispatch(Event::StoreWriteFailed { ops, error });
            return;
        }
        // Comparing the whole transcript is the costly check: after every
        // write, and every few events even without one.
        self.check(wrote || self.dispatched.is_multiple_of(8));
    }

    /// A run of writes as one transaction; only an injected failure may
    /// refuse it (any other refusal is a write the core must never issue).
    fn write(&mut self, ops: Vec<StoreOp>) -> Result<(), (Vec<StoreOp>, String)> {
        for op in &ops {
            self.note(|| "effect:Store".into());
            self.note(|| {
                let kind = format!("{op:?}");
                let end = kind.find([' ', '(', '{']).unwrap_or(kind.len());
                format!("store:{}", &kind[..end])
            });
        }
        let result = self.store.borrow_mut().apply_all(&ops);
        match result {
            Ok(()) => Ok(()),
            Err(e) if e.contains("injected") => Err((ops, e)),
            Err(e) => panic!("store write refused: {e}"),
        }
    }

    fn note(&mut self, feature: impl FnOnce() -> String) {
        if let Some(features) = self.features.as_mut() {
            let feature = feature();
            let count = self.counts.entry(feature.clone()).or_default();
            *count += 1;
            // How often, in powers of two: a second completed turn is new behaviour too.
            if count.is_power_of_two() && *count <= 16 {
                features.insert(format!("{feature}#{count}"));
            }
            features.insert(feature);
        }
    }

    fn carry_out(&mut self, effect: Effect) {
        self.note(|| {
            let kind = format!("{effect:?}");
            let end = kind.find([' ', '(', '{']).unwrap_or(kind.len());
            format!("effect:{}", &kind[..end])
        });
        match effect {
            Effect::Send { frame, .. } => {
                let value = check_frame(&frame);
                self.harvest(&value);
            }
            Effect::SendTranscript { frame, .. } => {
                let value = check_frame(&frame.read(&*self.store));
                self.harvest(&value);
            }
            // `carry_out` hands writes over as `Step::Write`.
            Effect::Store(op) => unreachable!("a write outside a batch: {op:?}"),
            Effect::CallModel { call, .. } => self.model_calls.push(call),
            Effect::AuthorAlarm | Effect::RunSchedule { .. } => {}
            Effect::AbortModel { call } => self.model_calls.retain(|c| *c != call),
            Effect::RunTool {
                call, tool_call_id, ..
            }
            | Effect::CallRemoteTool {
                call, tool_call_id, ..
            } => self.tool_runs.push((call, tool_call_id)),
            Effect::PrepareTurn { turn, .. } => self.prepares.push(turn),
            Effect::Author(AuthorCall::RunCallable { conn, id, .. }) => {
                self.callables.push((conn, id))
            }
            // Hooks that decide tool calls or summarize: this agent has none.
            Effect::DecideToolCall { .. }
            | Effect::RewriteToolResult { .. }
            | Effect::DecideChatError { .. }
            | Effect::Summarize { .. }
            | Effect::TurnEnded(_)
            | Effect::StepEnded(_)
            | Effect::AbortTools { .. }
            | Effect::Author(_) => {}
        }
    }

    /// Remembers ids the agent revealed, so later frames can target them.
    fn harvest(&mut self, frame: &Value) {
        if self.features.is_some() {
            let kind = frame["type"].as_str().unwrap_or_default().to_string();
            let mut noted = vec![format!("frame:{kind}")];
            if let Some(outcome) = frame.get("outcome").and_then(Value::as_str) {
                noted.push(format!("outcome:{outcome}"));
            }
            if frame.get("error") == Some(&json!(true)) {
                noted.push(format!("error:{}", frame.get("done") == Some(&json!(true))));
            }
            for flag in ["replay", "continuation", "replayComplete"] {
                if frame.get(flag) == Some(&json!(true)) {
                    noted.push(format!("flag:{flag}"));
                }
            }
            if let Some(chunk) = frame
                .get("body")
                .and_then(Value::as_str)
                .and_then(|b| serde_json::from_str::<Value>(b).ok())
            {
                if let Some(t) = chunk.get("type").and_then(Value::as_str) {
                    noted.push(format!("chunk:{t}"));
                }
            }
            for feature in noted {
                self.note(|| feature);
            }
        }
        let push = |pool: &mut Vec<String>, id: &str| {
            if !id.is_empty() && !pool.iter().any(|p| p == id) && pool.len() < 24 {
                pool.push(id.to_string());
            }
        };
        if let Some(id) = frame.get("id").and_then(Value::as_str) {
            push(&mut self.request_ids, id);
        }
        if let Some(chunk) = frame
            .get("body")
            .and_then(Value::as_str)
            .and_then(|b| serde_json::from_str::<Value>(b).ok())
        {
            if let Some(id) = chunk.get("toolCallId").and_then(Value::as_str) {
                push(&mut self.tool_call_ids, id);
            }
            if let Some(id) = chunk.get("messageId").and_then(Value::as_str) {
                push(&mut self.message_ids, id);
            }
        }
    }

    fn check(&self, transcript: bool) {
        let messages = self.core.messages();
        assert_unique_ids(&messages);
        if !transcript || self.diverged {
            return;
        }
        let stored: Vec<String> = self
            .store
            .borrow()
            .message_bodies()
            .into_iter()
            .map(str::to_string)
            .collect();
        let held: Vec<String> = messages
            .iter()
            .map(|m| serde_json::to_string(m).expect("serializes"))
            .collect();
        assert_eq!(
            stored, held,
            "the store does not hold the core's transcript"
        );
    }

    fn step(&mut self, u: &mut Unstructured) -> R<()> {
        match u.int_in_range(0..=23u8)? {
            0 => {
                let conn: ConnId = Rc::from(format!("tab-{}", u.int_in_range(0..=3u8)?));
                if self.tabs.insert(conn.clone()) {
                    self.dispatch(Event::Connected { conn, client: None });
                }
            }
            1 => {
                if let Some(conn) = pick(u, &self.tabs.iter().cloned().collect::<Vec<_>>())? {
                    self.tabs.remove(&conn);
                    self.dispatch(Event::Disconnected { conn });
                }
            }
            2..=7 => {
                let conn = match pick(u, &self.tabs.iter().cloned().collect::<Vec<_>>())? {
                    Some(conn) => conn,
                    None => {
                        let conn: ConnId = Rc::from("tab-0");
                        self.tabs.insert(conn.clone());
                        self.dispatch(Event::Connected { conn: conn.clone(), client: None });
                        conn
                    }
                };
                let text = self.frame(u)?;
                self.dispatch(Event::Frame { conn, text });
            }
            8..=11 => self.model_event(u)?,
            12 => {
                if let Some(call) = pick(u, &self.model_calls.clone())? {
                    self.model_calls.retain(|c| *c != call);
                    let text = pick_str(u, &["429 rate limited", "", "model stream failed"])?;
                    let failure = if u.arbitrary::<bool>()? {
                        ModelFailure::transient(text)
                    } else {
                        ModelFailure::permanent(text)
                    };
                    self.dispatch(Event::ModelFailed { call, failure });
                }
            }
            13 | 14 => self.tool_done(u)?,
            15 => self.fire_timer(u)?,
            16 => self.now += u64::from(u.int_in_range(0..=20_000u16)?),
            17 => self.evict(),
            18 => self.programmatic(u)?,
            19 => {
                // The store refuses writes: every write of the next event, or
                // the next run of writes that holds a message.
                if u.arbitrary::<bool>()? {
                    self.refuse_writes = true;
                } else {
                    self.store.borrow_mut().fail_next_message_write = true;
                }
            }
            20 => {
                // The host answers `before_turn`: the turn as configured.
                if let Some(turn) = pick(u, &self.prepares.clone())? {
                    self.prepares.retain(|t| *t != turn);
                    let config = Box::new(TurnConfig::default());
                    self.dispatch(Event::TurnPrepared { turn, config });
                }
            }
            21 => {
                // A callable's run ends (its connection may be gone).
                if let Some((conn, id)) = pick(u, &self.callables.clone())? {
                    self.callables.retain(|(c, i)| !(*c == conn && *i == id));
                    let result = match u.arbitrary::<bool>()? {
                        true => Ok(json!({"echo": self.text(u)?})),
                        false => Err("the method failed".to_string()),
                    };
                    self.dispatch(Event::CallableDone { conn, id, result });
                }
            }
            22 => {
                // The agent's own alarm is set, moved or cancelled.
                let at_ms = match u.arbitrary::<bool>()? {
                    true => Some(self.now + u64::from(u.int_in_range(0..=20_000u16)?)),
                    false => None,
                };
                self.core.schedule_alarm(at_ms, self.now);
                self.carry_out_all();
            }
            23 if u.ratio(1, 4)? => {
                let name = pick_str(u, &["fuzz", "renamed"])?.to_string();
                self.dispatch(Event::Named { name });
            }
            _ => {
                // A parent agent's channel closes (its remote tool runs fail).
                if let Some(conn) = pick(u, &self.channels.iter().cloned().collect::<Vec<_>>())? {
                    self.channels.remove(&conn);
                    self.dispatch(Event::Disconnected { conn });
                }
            }
        }
        Ok(())
    }

    /// The instance dies: in-isolate timers, model calls and tool runs are
    /// lost; sockets survive (hibernation) and are adopted; the alarm stays.
    fn evict(&mut self) {
        self.check(true);
        let open = self.store.borrow().open_stream_ids().len();
        self.note(|| format!("evict:open_streams={}", open.min(2)));
        self.model_calls.clear();
        self.tool_runs.clear();
        self.prepares.clear();
        self.callables.clear();
        self.alarm_asked = None;
        self.diverged = false;
        let stored = self.store.borrow().stored_state();
        self.core = new_core(
            self.config.clone(),
            stored,
            &self.store,
            self.ids.clone(),
            self.now,
        );
        let conns: Vec<ConnId> = self.tabs.iter().chain(&self.channels).cloned().collect();
        for conn in conns {
            self.dispatch(Event::Adopted { conn });
        }
        self.dispatch(Event::Woke);
    }

    /// Moves time to an armed timer's deadline and fires what is due there,
    /// or fires the durable alarm.
    fn fire_timer(&mut self, u: &mut Unstructured) -> R<()> {
        let mut armed: Vec<(Timer, u64)> = self
            .core
            .armed_timers()
            .into_iter()
            .filter(|(t, _)| !t.is_durable())
            .collect();
        if let Some(at) = self.alarm {
            armed.push((Timer::Heartbeat, at));
        }
        if let Some((timer, at)) = pick(u, &armed)? {
            self.now = self.now.max(at);
            self.note(|| format!("timer:{timer:?}"));
            if timer.is_durable() {
                self.alarm = None;
                self.dispatch(Event::Timer(timer));
            } else {
                self.core.handle_timeout(self.now);
                self.carry_out_all();
            }
        }
        Ok(())
    }

    fn model_event(&mut self, u: &mut Unstructured) -> R<()> {
        let call = match pick(u, &self.model_calls.clone())? {
            Some(call) if !u.ratio(1, 16)? => call,
            _ => 999, // a stale or unknown call
        };
        let index = u.int_in_range(0..=2u32)?;
        let event = match u.int_in_range(0..=9u8)? {
            0..=2 => ModelEvent::TextDelta(self.text(u)?),
            3 => ModelEvent::ReasoningDelta(self.text(u)?),
            4 | 5 => {
                let id = if u.ratio(1, 4)? {
                    pick(u, &self.tool_call_ids.clone())?.unwrap_or_default()
                } else {
                    let id = self.fresh("call");
                    self.tool_call_ids.push(id.clone());
                    id
                };
                let name = pick_str(
                    u,
                    &[
                        "get_weather",
                        "delete_file",
                        "maybe_ask",
                        CLIENT_TOOL,
                        PARENT_TOOL,
                        "no_such_tool",
                        "",
                    ],
                )?;
                ModelEvent::ToolCallStarted {
                    index,
                    id,
                    name: name.to_string(),
                }
            }
            6 | 7 => {
                let delta = pick_str(
                    u,
                    &[
                        r#"{"city":"Paris"}"#,
                        r#"{"ask":true}"#,
                        r#"{"path":"a.txt"}"#,
                        "{",
                        "}",
                        r#""city""#,
                        "{}",
                        "null",
                        "[1,2]",
                        "",
                    ],
                )?;
                ModelEvent::ToolCallArgumentsDelta {
                    index,
                    delta: delta.to_string(),
                }
            }
            _ => {
                let reason = pick(
                    u,
                    &[
                        FinishReason::Stop,
                        FinishReason::ToolCalls,
                        FinishReason::Length,
                        FinishReason::ContentFilter,
                        FinishReason::Other,
                    ],
                )?
                .unwrap_or(FinishReason::Stop);
                self.model_calls.retain(|c| *c != call);
                ModelEvent::Finished {
                    reason,
                    usage: None,
                }
            }
        };
        self.dispatch(Event::Model { call, event });
        Ok(())
    }

    fn tool_done(&mut self, u: &mut Unstructured) -> R<()> {
        let (call, tool_call_id) = match pick(u, &self.tool_runs.clone())? {
            Some(run) if !u.ratio(1, 16)? => run,
            _ => (
                999,
                pick(u, &self.tool_call_ids.clone())?.unwrap_or_default(),
            ),
        };
        self.tool_runs.retain(|(c, _)| *c != call);
        let result = if u.ratio(1, 4)? {
            Err("the tool failed".to_string())
        } else {
            Ok(json!({"ok": self.text(u)?}))
        };
        self.dispatch(Event::ToolDone {
            call,
            tool_call_id,
            result,
        });
        Ok(())
    }

    /// A programmatic turn: a parent agent's `chat()` over an (adopted) channel or the agent's own.
    fn programmatic(&mut self, u: &mut Unstructured) -> R<()> {
        if u.ratio(1, 8)? {
            // The agent's own `clear_messages()`.
            self.dispatch(Event::ClearHistory);
            return Ok(());
        }
        // A parent's channel, or the agent's own `chat()` (no channel).
        let conn = if u.ratio(1, 3)? {
            None
        } else {
            let conn: ConnId = Rc::from(format!("channel-{}", u.int_in_range(0..=1u8)?));
            if self.channels.insert(conn.clone()) {
                self.dispatch(Event::Adopted { conn: conn.clone() });
            }
            Some(conn)
        };
        // A trusted caller (the agent's own code or a parent agent): fresh ids.
        let id = self.fresh("p");
        let message = UIMessage::user_text(id, self.text(u)?);
        let tools = vec![ClientToolSchema {
            name: PARENT_TOOL.into(),
            description: None,
            parameters: None,
        }];
        let executor = u.arbitrary()?;
        self.dispatch(Event::ProgrammaticChat {
            conn,
            message,
            tools,
            executor,
        });
        Ok(())
    }

    // ---- frames built from fragments of valid frames

    fn text(&mut self, u: &mut Unstructured) -> R<String> {
        let n = u.int_in_range(0..=3u8)?;
        let mut out = String::new();
        for _ in 0..n {
            out.push_str(pick_str(u, WORDS)?);
            out.push(' ');
        }
        Ok(out)
    }

    fn request_id(&mut self, u: &mut Unstructured) -> R<String> {
        Ok(match u.int_in_range(0..=7u8)? {
            0..=4 => {
                let id = self.fresh("r");
                self.request_ids.push(id.clone());
                id
            }
            5 => String::new(),
            6 => "x".repeat(300),
            _ => pick(u, &self.request_ids.clone())?.unwrap_or_default(),
        })
    }

    fn message_id(&mut self, u: &mut Unstructured) -> R<String> {
        Ok(match u.int_in_range(0..=5u8)? {
            0 | 1 => {
                let id = self.fresh("u");
                self.message_ids.push(id.clone());
                id
            }
            2 => {
                let known: Vec<String> = self.core.messages().into_iter().map(|m| m.id).collect();
                pick(u, &known)?.unwrap_or_default()
            }
            3 => String::new(),
            _ => pick(u, &self.message_ids.clone())?.unwrap_or_default(),
        })
    }

    fn tool_call_id(&mut self, u: &mut Unstructured) -> R<String> {
        Ok(pick(u, &self.tool_call_ids.clone())?.unwrap_or_else(|| "call-0".into()))
    }

    fn part(&mut self, u: &mut Unstructured) -> R<Value> {
        Ok(match u.int_in_range(0..=7u8)? {
            0..=3 => json!({"type":"text","text": self.text(u)?}),
            4 => json!({"type":"data-x","data":{"n": u.int_in_range(0..=9u8)?}}),
            5 => json!({"type":"step-start"}),
            6 => {
                let state = pick_str(
                    u,
                    &[
                        "input-available",
                        "approval-requested",
                        "approval-responded",
                        "output-available",
                        "bogus",
                    ],
                )?;
                let name = pick_str(u, &["get_weather", "delete_file", CLIENT_TOOL])?;
                json!({"type": format!("tool-{name}"), "toolCallId": self.tool_call_id(u)?,
                       "state": state, "input": {}, "approval": {"id":"a","approved": true}})
            }
            _ => json!({"text": 5}),
        })
    }

    fn message(&mut self, u: &mut Unstructured) -> R<Value> {
        let role = match u.int_in_range(0..=9u8)? {
            0..=6 => "user",
            7 => "assistant",
            8 => "system",
            _ => "robot",
        };
        let mut parts = Vec::new();
        for _ in 0..u.int_in_range(0..=3u8)? {
            parts.push(self.part(u)?);
        }
        let mut message = json!({"id": self.message_id(u)?, "role": role, "parts": parts});
        if u.ratio(1, 6)? {
            message["metadata"] = json!({"channel":"forged","turnMetadata":{"x":1}});
        }
        Ok(message)
    }

    fn client_tools(&mut self, u: &mut Unstructured) -> R<Option<Value>> {
        Ok(match u.int_in_range(0..=5u8)? {
            0 | 1 => None,
            2 => Some(json!([])),
            3 => Some(json!([{"name": CLIENT_TOOL, "description":"tz"}])),
            4 => Some(json!([{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"}])),
            _ => Some(json!("nope")),
        })
    }

    fn chat_request(&mut self, u: &mut Unstructured) -> R<Value> {
        let mut messages = Vec::new();
        if u.ratio(1, 4)? {
            // What a real tab sends: the transcript it knows plus a new message.
            for m in self.core.messages() {
                messages.push(serde_json::to_value(m).unwrap_or_default());
            }
        }
        for _ in 0..u.int_in_range(0..=3u8)? {
            messages.push(self.message(u)?);
        }
        let mut body = json!({"messages": messages});
        body["trigger"] = match u.int_in_range(0..=4u8)? {
            0..=2 => json!("submit-message"),
            3 => json!("regenerate-message"),
            _ => json!(7),
        };
        if let Some(tools) = self.client_tools(u)? {
            body["clientTools"] = tools;
        }
        if u.ratio(1, 5)? {
            body["custom"] = json!({"k": self.text(u)?});
        }
        let body_text = if u.ratio(1, 12)? {
            mutate(u, body.to_string())?
        } else {
            body.to_string()
        };
        let method = if u.ratio(1, 12)? { "GET" } else { "POST" };
        Ok(
            json!({"id": self.request_id(u)?, "init": {"method": method, "body": body_text},
                  "type": "cf_agent_use_chat_request"}),
        )
    }

    fn frame(&mut self, u: &mut Unstructured) -> R<String> {
        let frame = match u.int_in_range(0..=17u8)? {
            0..=4 => self.chat_request(u)?,
            5 => {
                let id = pick(u, &self.request_ids.clone())?.unwrap_or_default();
                json!({"type":"cf_agent_chat_request_cancel","id": id})
            }
            6 => json!({"type":"cf_agent_chat_clear"}),
            7 | 8 => {
                let mut frame = json!({"type":"cf_agent_tool_result",
                    "toolCallId": self.tool_call_id(u)?, "toolName": CLIENT_TOOL,
                    "output": {"tz": self.text(u)?}, "autoContinue": u.arbitrary::<bool>()?});
                if u.ratio(1, 3)? {
                    frame["state"] = json!("output-error");
                    frame["errorText"] = json!(self.text(u)?);
                }
                if u.ratio(1, 8)? {
                    frame["output"] = json!("o".repeat(300));
                }
                if let Some(tools) = self.client_tools(u)? {
                    frame["clientTools"] = tools;
                }
                frame
            }
            9 | 10 => {
                let approved = if u.ratio(1, 10)? {
                    json!("yes")
                } else {
                    json!(u.arbitrary::<bool>()?)
                };
                json!({"type":"cf_agent_tool_approval","toolCallId": self.tool_call_id(u)?,
                       "approved": approved, "autoContinue": u.arbitrary::<bool>()?})
            }
            11 => json!({"type":"cf_agent_stream_resume_request","probeId": self.fresh("p")}),
            12 => {
                let id = pick(u, &self.request_ids.clone())?.unwrap_or_default();
                json!({"type":"cf_agent_stream_resume_ack","id": id})
            }
            13 => {
                json!({"type":"cf_agent_chat_messages","messages":[{"id":"forged","role":"assistant","parts":[]}]})
            }
            14 => {
                // A tab's `setState`: accepted, refused by the validator, or not an object.
                let state = match u.int_in_range(0..=2u8)? {
                    0 => json!({"n": u.int_in_range(0..=9u8)?}),
                    1 => json!({"refuse": true}),
                    _ => json!(self.text(u)?),
                };
                json!({"type":"cf_agent_state","state": state})
            }
            15 => {
                // A callable method, known or not, with arguments or without.
                let method = pick_str(u, &["echo", "missing"])?;
                let mut frame = json!({"type":"rpc","id": self.fresh("rpc"),"method": method});
                if u.arbitrary::<bool>()? {
                    frame["args"] = json!([self.text(u)?]);
                }
                frame
            }
            16 => json!({"type":"author_ping","n": u.int_in_range(0..=9u8)?}),
            _ => {
                // Raw bytes from the input, as text.
                let len = u.int_in_range(0..=64usize)?;
                let bytes = u.bytes(len.min(u.len()))?;
                return Ok(String::from_utf8_lossy(bytes).into_owned());
            }
        };
        let text = frame.to_string();
        if u.ratio(1, 10)? {
            mutate(u, text)
        } else {
            Ok(text)
        }
    }
}

/// Cuts, splices or repeats a piece of a valid frame.
fn mutate(u: &mut Unstructured, text: String) -> R<String> {
    let cut = |at: usize| {
        let mut at = at.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    };
    let at = cut(u.int_in_range(0..=text.len())?);
    Ok(match u.int_in_range(0..=3u8)? {
        0 => text[..at].to_string(),
        1 => format!(
            "{}{}{}",
            &text[..at],
            pick_str(u, &["\"", "{", "]", ",", "\\", "null"])?,
            &text[at..]
        ),
        2 => format!("{}{}", &text[..at], &text[..at]),
        _ => {
            let end = cut(at + u.int_in_range(0..=16usize)?);
            format!("{}{}", &text[..at], &text[end..])
        }
    })
}

fn pick<T: Clone>(u: &mut Unstructured, items: &[T]) -> R<Option<T>> {
    if items.is_empty() {
        return Ok(None);
    }
    Ok(Some(items[u.choose_index(items.len())?].clone()))
}

fn pick_str<'a>(u: &mut Unstructured, items: &[&'a str]) -> R<&'a str> {
    Ok(items[u.choose_index(items.len())?])
}
