//! The host's test and benchmark routes, compiled only with the cargo
//! feature `debug-routes` (the test build, `scripts/build.sh --test`; a
//! deploy leaves it off) and then still off unless their var is `1`:
//! `DEBUG_MEMORY` serves `GET …/__debug/memory` (this wasm instance's linear
//! memory, for `bench/memory-probe.mjs`), `DEBUG_TOOLS` adds the tools of
//! `debug_tools.rs` and serves `POST …/__debug/fail-next-message-write` and
//! `POST …/__debug/evict` (the Durable Object is reset as by an eviction)
//! and `GET …/__debug/queue-rows` (the size of the stored queue row and the
//! body rows of queued turns), `GET …/__debug/storage-rows` (the rows of
//! every table and the alarm, answered before the request is looked at),
//! and adds a slow start of its own after the definition's `on_start`
//! (50 ms), which `GET …/__debug/started` reports as finished: a request is
//! served only after the start. `DEBUG_HEARTBEAT_MS` (a number of ms) sets
//! how far ahead a running turn's durable alarm is kept; `DEBUG_NO_ALARM`
//! and `DEBUG_SKIP_WRITES` leave durable work out, for the benchmark's
//! measure of what it costs.

use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

use wasm_bindgen::JsCast;
use worker::{Method, Request, Response};

use super::AgentHost;
use crate::agent::debug_tools::{DEBUG_TOOLS_VAR, FAIL_NEXT_MESSAGE_WRITE, FAIL_NEXT_STATE_WRITE};

/// The route that reports memory figures.
const MEMORY_ROUTE: &str = "/__debug/memory";

/// The route that evicts the agent (`ctx.abort()`), as the platform would,
/// while calls to it are in flight.
const EVICT_ROUTE: &str = "/__debug/evict";

/// The route that reports the stored queue's rows.
const QUEUE_ROWS_ROUTE: &str = "/__debug/queue-rows";

/// The route that reports how many rows each table of the object's SQLite
/// holds and whether an alarm is set (to prove an erasure).
pub(super) const STORAGE_ROWS_ROUTE: &str = "/__debug/storage-rows";
/// The route that reports whether the test-only start finished.
pub(super) const STARTED_ROUTE: &str = "/__debug/started";

/// Agents constructed by this wasm instance (for `…/__debug/memory`).
static HOSTS_CREATED: AtomicU32 = AtomicU32::new(0);

/// What a debug route does once its method matched.
type DebugAnswer = fn(&Rc<AgentHost>) -> worker::Result<Response>;

/// Which switches the worker's vars turned on.
pub(super) struct DebugSwitches {
    memory: bool,
    pub(super) tools: bool,
    /// `DEBUG_NO_ALARM=1`: the durable alarm is never set (the benchmark's
    /// measure of what the recovery alarm costs a turn; an evicted turn is
    /// then not resumed until something else wakes the agent).
    pub(super) no_alarm: bool,
    /// `DEBUG_SKIP_WRITES=chunks+stream+owed`: those durable writes of a
    /// turn are dropped (the benchmark's measure of what each costs: the
    /// chunk log, the stream record, the owed `on_chat_response` report;
    /// without them a restart loses what they keep).
    pub(super) skip_writes: Vec<String>,
    /// The test-only start after `on_start` finished.
    pub(super) started: std::cell::Cell<bool>,
    /// `DEBUG_HEARTBEAT_MS`: how far ahead the durable alarm of a running
    /// turn is kept, instead of the recovery settings' own (so that a test of
    /// a turn woken by that alarm waits less).
    pub(super) heartbeat_ms: Option<u64>,
}

impl DebugSwitches {
    pub(super) fn from_vars(lookup: impl Fn(&str) -> Option<String>) -> DebugSwitches {
        DebugSwitches {
            memory: lookup("DEBUG_MEMORY").as_deref() == Some("1"),
            tools: lookup(DEBUG_TOOLS_VAR).as_deref() == Some("1"),
            no_alarm: lookup("DEBUG_NO_ALARM").as_deref() == Some("1"),
            skip_writes: lookup("DEBUG_SKIP_WRITES")
                .map(|v| v.split(['+', ',']).map(|k| k.trim().to_string()).collect())
                .unwrap_or_default(),
            started: std::cell::Cell::new(false),
            heartbeat_ms: lookup("DEBUG_HEARTBEAT_MS")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|ms| *ms > 0),
        }
    }

    /// Whether `op` is one of the writes `DEBUG_SKIP_WRITES` drops.
    pub(super) fn skips(&self, op: &crate::core::StoreOp) -> bool {
        use crate::core::{ConfigKey, StoreOp};
        let kind = match op {
            StoreOp::AppendChunks { .. } => "chunks",
            StoreOp::OpenStream(_) | StoreOp::CloseStream { .. } => "stream",
            StoreOp::PutConfig { key, .. } | StoreOp::DeleteConfig { key }
                if *key == ConfigKey::OwedResponses =>
            {
                "owed"
            }
            _ => return false,
        };
        self.skip_writes.iter().any(|k| k == kind)
    }
}

pub(super) fn host_created() {
    HOSTS_CREATED.fetch_add(1, Ordering::Relaxed);
}

impl AgentHost {
    /// The answer of a debug route that is on, if `path` names one; each
    /// answers only its own method (405 otherwise).
    pub(super) fn debug_route(
        self: &Rc<Self>,
        req: &Request,
        path: &str,
    ) -> Option<worker::Result<Response>> {
        let (method, answer): (Method, DebugAnswer) =
            if self.debug.memory && path.ends_with(MEMORY_ROUTE) {
                (Method::Get, |host| {
                    Response::from_json(&host.debug_memory())
                })
            } else if self.debug.tools && path.ends_with(FAIL_NEXT_MESSAGE_WRITE) {
                (Method::Post, |host| {
                    host.store.fail_next_message_write();
                    Response::ok("armed")
                })
            } else if self.debug.tools && path.ends_with(FAIL_NEXT_STATE_WRITE) {
                (Method::Post, |host| {
                    host.store.fail_next_state_write();
                    Response::ok("armed")
                })
            } else if self.debug.tools && path.ends_with(QUEUE_ROWS_ROUTE) {
                (Method::Get, |host| {
                    let (queue_row_bytes, bodies, body_bytes) = host.store.queue_rows()?;
                    Response::from_json(&serde_json::json!({
                        "queueRowBytes": queue_row_bytes,
                        "queuedBodies": bodies,
                        "queuedBodyBytes": body_bytes,
                    }))
                })
            } else if self.debug.tools && path.ends_with(EVICT_ROUTE) {
                (Method::Post, |host| {
                    host.evict_soon();
                    Response::ok("evicting")
                })
            } else {
                return None;
            };
        if req.method() != method {
            return Some(Response::error(format!("{method} only"), 405));
        }
        Some(answer(self))
    }

    /// Resets the Durable Object as an eviction would (see `reset_soon`).
    fn evict_soon(&self) {
        self.reset_soon("evicted by the test route");
    }

    /// Whether `path` is the storage report and it is on.
    pub(super) fn is_storage_report(&self, path: &str) -> bool {
        self.debug.tools && path.ends_with(STORAGE_ROWS_ROUTE)
    }

    /// `{"tables": {name: rows}, "kvKeys", "alarm": ms or null}`: the rows of
    /// every table of the object's SQLite but SQLite's and the runtime's own
    /// (which the key-value API's count stands for).
    pub(super) async fn storage_report(&self) -> worker::Result<Response> {
        #[derive(serde::Deserialize)]
        struct Name {
            name: String,
        }
        #[derive(serde::Deserialize)]
        struct Count {
            n: i64,
        }
        let sql = self.state.storage().sql();
        let names: Vec<Name> = sql
            .exec(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
                None,
            )?
            .to_array()?;
        let mut tables = serde_json::Map::new();
        for Name { name } in names {
            let quoted = name.replace('"', "\"\"");
            let rows: Vec<Count> = sql
                .exec(&format!("SELECT COUNT(*) AS n FROM \"{quoted}\""), None)?
                .to_array()?;
            tables.insert(name, rows.first().map_or(0, |c| c.n).into());
        }
        let alarm = self.state.storage().get_alarm().await?;
        let kv_keys = self.state.storage().list().await?.size();
        Response::from_json(&serde_json::json!({
            "tables": tables,
            "kvKeys": kv_keys,
            "alarm": alarm,
        }))
    }

    /// Figures for memory investigations: the size of this wasm instance's
    /// linear memory and how many agents it has constructed (one shared
    /// instance ⇒ the count grows across agents).
    fn debug_memory(&self) -> serde_json::Value {
        let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
        let bytes = memory
            .buffer()
            .unchecked_into::<js_sys::ArrayBuffer>()
            .byte_length();
        let core = self.core.borrow();
        serde_json::json!({
            "wasmMemoryBytes": bytes,
            "hostsCreated": HOSTS_CREATED.load(Ordering::Relaxed),
            "windowMessages": core.window_len(),
            "sockets": self.sockets.borrow().len(),
            "pendingTimers": usize::from(self.wake.borrow().is_some()),
            "sqliteDatabaseBytes": self.store.database_size(),
        })
    }
}
