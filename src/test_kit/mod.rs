//! The test kit: runs an agent's definition natively, under `cargo test`,
//! in memory and in milliseconds — with the `test-kit` feature (an agent's
//! crate turns it on in its `[dev-dependencies]`).
//!
//! A [`TestAgent`] is one agent instance with everything a Durable Object
//! gives it replaced by memory: the engine's store, the author's key-value
//! store, a virtual clock (schedules, cron and alarms fire as time is
//! advanced), a scripted model ([`ScriptedModel`], answering each model call
//! with the next [`Reply`] and keeping the requests the engine built), tabs
//! that send the frames a browser sends and record the frames it would
//! receive ([`Tab`]), and evictions at chosen points (the instance is
//! dropped mid-turn, the store kept, and a new instance recovers from it).
//! The definition runs as in a worker: the same hooks, tools, callables,
//! schedule callbacks and `AgentHandle`.
//!
//! ```
//! use durable_chat::prelude::*;
//! use durable_chat::test_kit::TestAgent;
//!
//! struct Echo;
//! impl AgentDefinition for Echo {}
//!
//! let agent = TestAgent::new(Echo);
//! agent.model().reply_text("Hello there");
//! let tab = agent.connect();
//! tab.send_message("hi");
//! agent.run_until_idle();
//! assert_eq!(tab.stream_text(), "Hello there");
//! assert_eq!(agent.messages().len(), 2);
//! ```
//!
//! The author's storage works as in a worker: the key-value store in
//! memory, the SQL tables on SQLite in memory; both survive an eviction.

pub mod client_frames;
mod host;
mod kit;
mod memory;
mod model;
mod reply;
mod sql;
mod tab;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use futures::executor::LocalPool;
use futures::task::LocalSpawnExt;
use serde_json::Value;

use crate::agent::{AgentDefinition, AgentHandle, AuthorStorage, RequestInfo};
use crate::core::ConnId;
use crate::protocol::UIMessage;

use host::KitHost;
use kit::{Kit, Starter, MAX_STEPS};
use memory::{Durable, TabRecord};

pub use memory::START_MS;
pub use model::ScriptedModel;
pub use reply::{End, Reply};
pub use tab::Tab;

/// Where [`TestAgent::run_until`] stops (and [`TestAgent::evict_after`] evicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Once `n` more events of the model's streams (text pieces, tool call
    /// pieces, finishes) reached the agent: mid-answer.
    ModelChunk(usize),
    /// Once `n` more model calls were asked for, before their first event.
    ModelCall(usize),
}

/// One agent instance under test (see the module header).
pub struct TestAgent {
    kit: Rc<Kit>,
}

impl TestAgent {
    /// `definition` as agent `"agent"`, instance `"default"`, with no vars.
    pub fn new<D: AgentDefinition>(definition: D) -> TestAgent {
        TestAgent::with_vars(definition, &[])
    }

    /// `definition` with these worker vars and secrets (what
    /// `AgentDefinition::settings` and `mcp_servers` read).
    pub fn with_vars<D: AgentDefinition>(definition: D, vars: &[(&str, &str)]) -> TestAgent {
        let definition = Rc::new(definition);
        let vars: BTreeMap<String, String> = (vars.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let start: Starter = Box::new(move |durable, spawner| {
            KitHost::start(&definition, &vars, "agent", durable, spawner)
        });
        let durable = Rc::new(Durable::new());
        let pool = LocalPool::new();
        let host = start(&durable, pool.spawner());
        let kit = Kit {
            durable,
            host: RefCell::new(host),
            pool: RefCell::new(pool),
            start,
            tabs: Cell::new(0),
            next_call: Rc::new(Cell::new(0)),
        };
        let agent = TestAgent { kit: Rc::new(kit) };
        agent.kit.run_tasks();
        agent
    }

    /// The scripted model: script the replies before the turns that need them.
    pub fn model(&self) -> ScriptedModel {
        ScriptedModel {
            durable: self.kit.durable.clone(),
            next_call: self.kit.next_call.clone(),
        }
    }

    /// A new tab connects (`tab-1`, `tab-2`, …); it receives the connect
    /// frames (identity, state, transcript) at once.
    pub fn connect(&self) -> Tab {
        let n = self.kit.tabs.get() + 1;
        self.kit.tabs.set(n);
        self.connect_with(&format!("tab-{n}"), RequestInfo::default())
    }

    /// A tab connects as connection `id` (its `_pk`), with the request
    /// `on_connect` sees.
    pub fn connect_with(&self, id: &str, request: RequestInfo) -> Tab {
        let conn: ConnId = Rc::from(id);
        let record = TabRecord {
            open: true,
            ..TabRecord::default()
        };
        self.kit
            .durable
            .tabs
            .borrow_mut()
            .insert(conn.clone(), record);
        self.kit.host().connect(&conn, request);
        self.kit.run_tasks();
        Tab {
            kit: self.kit.clone(),
            conn,
            sent: Cell::new(0),
        }
    }

    /// The agent as its own code reaches it (state, storage, schedules,
    /// submissions, turns): what hooks, tools and callbacks are given.
    pub fn handle(&self) -> AgentHandle {
        self.kit.host().handle()
    }

    /// Runs everything that is running — turns, tools, hooks, callables —
    /// until the agent waits for nothing but a durable alarm (a schedule,
    /// a cron, an alarm) or a person (an approval, a client tool). The
    /// clock moves to each model event and timer on the way.
    pub fn run_until_idle(&self) {
        self.kit.run_until_idle();
    }

    /// Moves the clock `by` forward, firing on the way whatever falls due:
    /// schedules, cron, the agent's alarm, model events, timers.
    pub fn advance(&self, by: Duration) {
        let target = self.now_ms().saturating_add(by.as_millis() as u64);
        for _ in 0..MAX_STEPS {
            if !self.kit.step_until(target, true) {
                break;
            }
        }
        self.kit.durable.clock.set(target.max(self.now_ms()));
        self.kit.run_tasks();
    }

    /// Runs until `point` is reached; `false` if the agent went idle first.
    pub fn run_until(&self, point: Point) -> bool {
        let (events, calls) = (self.model_events(), self.model_calls());
        let reached = |agent: &TestAgent| match point {
            Point::ModelChunk(n) => agent.model_events() >= events + n,
            Point::ModelCall(n) => agent.model_calls() >= calls + n,
        };
        for _ in 0..MAX_STEPS {
            if reached(self) {
                return true;
            }
            if !self.kit.step_until(u64::MAX, false) {
                return reached(self);
            }
        }
        false
    }

    /// Runs until `point`, then evicts (see [`TestAgent::evict`]).
    /// Panics if the agent went idle before reaching it.
    pub fn evict_after(&self, point: Point) {
        assert!(
            self.run_until(point),
            "the agent went idle before {point:?}"
        );
        self.evict();
    }

    /// The instance is evicted: everything in its memory is lost (turns
    /// running, model streams, tool runs, hooks awaited, in-isolate
    /// timers); the store, the author's storage, the durable alarm and the
    /// open tabs stay. A new instance starts from the store at once (as a
    /// Durable Object does on its next event) and recovers what was cut.
    pub fn evict(&self) {
        self.kit.restart();
        self.kit.run_tasks();
    }

    /// Awaits `future` (e.g. `agent.handle().run_turn(…)`) while the agent
    /// runs until idle; its output. Panics if it is still waiting then.
    pub fn block_on<F: Future + 'static>(&self, future: F) -> F::Output {
        let slot = Rc::new(RefCell::new(None));
        let into = slot.clone();
        let task = async move {
            let output = future.await;
            *into.borrow_mut() = Some(output);
        };
        let spawned = self.kit.pool.borrow().spawner().spawn_local(task);
        spawned.unwrap_or_else(|e| panic!("the test agent's executor is gone: {e}"));
        self.run_until_idle();
        let output = slot.borrow_mut().take();
        output.unwrap_or_else(|| panic!("the future still waits once the agent is idle"))
    }

    /// Calls the author's RPC method `method` (`AgentDefinition::rpc_methods`
    /// or a callable marked `.over_rpc()`) with `args` (the JSON array of
    /// arguments), as another Worker's `stub.method(...args)` does, and
    /// runs the agent until the call ended: its result, or the error its
    /// caller's promise rejects with.
    pub fn call_rpc(&self, method: &str, args: Value) -> Result<Value, String> {
        let call = self.kit.host().call_rpc(method, args);
        let Some(call) = call else {
            return Err(format!("this agent has no RPC method `{method}`"));
        };
        self.block_on(call)
    }

    /// The virtual clock, in ms since the epoch (it starts at [`START_MS`]).
    pub fn now_ms(&self) -> u64 {
        self.kit.durable.now()
    }

    /// The stored conversation.
    pub fn messages(&self) -> Vec<UIMessage> {
        self.kit.host().core().messages()
    }

    /// The agent's synced state.
    pub fn state(&self) -> Option<Value> {
        self.kit.host().core().state().cloned()
    }

    /// The author's storage (the key-value store; survives evictions).
    pub fn storage(&self) -> AuthorStorage {
        self.handle().storage()
    }

    /// The agent's log lines so far (the engine's and the kit's).
    pub fn log(&self) -> Vec<String> {
        self.kit.durable.log.borrow().clone()
    }

    /// Model events delivered so far.
    fn model_events(&self) -> usize {
        self.kit.durable.model_events.get()
    }

    /// Model calls asked for so far.
    fn model_calls(&self) -> usize {
        self.kit.durable.model.borrow().requests.len()
    }
}
