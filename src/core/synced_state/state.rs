//! The agent's synced state: one JSON value, stored durably (config row
//! `agent_state`, kept across a chat clear), sent to each tab on connect
//! after an identity frame that says it follows, replaced by a tab's
//! `setState` or by the agent's own code. Every change passes the
//! definition's validator first: a refused change is told to the tab that
//! sent it (`cf_agent_state_error` with the agents SDK's fixed text; the
//! validator's reason goes to the log) and nothing is stored or broadcast;
//! an accepted one is stored, sent to every other connection and handed to
//! `on_state_changed`. When its write fails, the change is undone: the
//! frames and `on_state_changed` queued after the write are held back, the
//! tabs that sent it are told it was refused and given the state as
//! stored, and the agent's own `set_state` reports the failure.

use std::rc::Rc;

use serde_json::Value;

use crate::protocol::{agent_frames, gate, server};

use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::{Effect, StoreOp};
use crate::core::contract::log_event::LogEvent;
use crate::core::rows::persisted::ConfigKey;
use crate::core::vocab::agent_api::StateSource;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

/// What a tab is told when its change is refused (the agents SDK's text;
/// the reason is logged, not sent).
pub const STATE_REFUSED: &str = "State update rejected";

/// The stored row as written (read back as `persisted::AgentStateRow`).
#[derive(serde::Serialize)]
struct StateRow<'a> {
    state: &'a Value,
}

impl Core {
    /// The agent's current state (`None`: it has none yet).
    pub fn state(&self) -> Option<&Value> {
        self.synced.get()
    }

    /// The agent's own code sets the state: validated, stored, sent to every
    /// connection, then `on_state_changed`. `Err`: refused, nothing changed.
    pub fn set_state(&mut self, state: Value, now_ms: u64) -> Result<(), String> {
        self.command(now_ms, |core| core.change_state(state, StateSource::Server))
    }

    /// The connect frames of the agent as a whole: the identity, then the
    /// state when there is one (the identity says so, so the client waits).
    pub(in crate::core) fn send_identity_and_state(&mut self, conn: &ConnId) {
        let (name, agent) = (&self.config.name, &self.config.agent);
        let Some(state) = self.synced.get() else {
            let identity = server::identity(name, agent);
            return self.send_to(vec![conn.clone()], identity);
        };
        let identity = agent_frames::identity_with_state(name, agent);
        let frame = agent_frames::state(state);
        self.send_to(vec![conn.clone()], identity);
        self.send_to(vec![conn.clone()], frame);
    }

    /// A tab's `setState`.
    pub(in crate::core) fn on_state_frame(&mut self, conn: ConnId, state: Value) {
        if let Err(reason) = self.change_state(state, StateSource::Connection(conn.clone())) {
            self.refuse_state(Some(conn), reason);
        }
    }

    /// A refusal: logged with its reason, told to the tab (if one sent it).
    pub(in crate::core::synced_state) fn refuse_state(
        &mut self,
        conn: Option<ConnId>,
        reason: String,
    ) {
        self.log(LogEvent::StateRefused {
            conn: conn.clone(),
            reason,
        });
        if let Some(conn) = conn {
            self.send_to(vec![conn], agent_frames::state_error(STATE_REFUSED));
        }
    }

    /// How many state writes failed (and were undone) so far: the agent's
    /// own `set_state` compares it across the write to report a failure.
    pub fn state_write_failures(&self) -> u64 {
        self.synced.failed_writes()
    }

    /// A batch of writes failed; when it held a state change, the change is
    /// undone (see the module header). `true`: the batch held nothing else.
    pub(in crate::core) fn on_state_write_failed(&mut self, ops: &[StoreOp], error: &str) -> bool {
        let is_state = |op: &StoreOp| matches!(op, StoreOp::PutConfig { key, .. } if *key == ConfigKey::AgentState);
        if !ops.iter().any(is_state) {
            return false;
        }
        let only_state = ops.iter().all(is_state);
        let Some(undo) = self.synced.write_failed() else {
            return only_state;
        };
        let reason = format!("the state could not be stored: {error}");
        if undo.tabs.is_empty() {
            self.refuse_state(None, reason.clone());
        }
        let restored = self.synced.get().map(agent_frames::state);
        for tab in undo.tabs {
            if !self.conns.contains(&tab) {
                continue;
            }
            self.refuse_state(Some(tab.clone()), reason.clone());
            if let Some(frame) = &restored {
                self.send_to(vec![tab], frame.clone());
            }
        }
        only_state
    }

    fn change_state(&mut self, state: Value, source: StateSource) -> Result<(), String> {
        if let Some(validate) = self.config.agent_api.validate_state.clone() {
            validate(&state, &source)?;
        }
        let frame = agent_frames::state(&state);
        // Whoever sets it, the state stays within what a tab's frame and the
        // row read back on wake may hold.
        gate::check(&frame, &gate::STATE)?;
        let state = Rc::new(state);
        let tab = match &source {
            StateSource::Connection(conn) => Some(conn.clone()),
            StateSource::Server => None,
        };
        self.synced.replace(state.clone(), tab);
        self.put_config(ConfigKey::AgentState, &StateRow { state: &state });
        let to = match &source {
            StateSource::Connection(conn) => self.conns.all_except(conn),
            StateSource::Server => self.conns.all(),
        };
        self.send_to(to, frame);
        self.effects
            .push(Effect::Author(AuthorCall::StateChanged { state, source }));
        Ok(())
    }
}
