//! The agent's synced state: one JSON value, stored durably (config row
//! `agent_state`, kept across a chat clear), sent to each tab on connect
//! after an identity frame that says it follows, replaced by a tab's
//! `setState` or by the agent's own code. Every change passes the
//! definition's validator first: a refused change is told to the tab that
//! sent it (`cf_agent_state_error`) and nothing is stored or broadcast; an
//! accepted one is stored, sent to every other connection and handed to
//! `on_state_changed`.

use std::rc::Rc;

use serde_json::Value;

use crate::protocol::{agent_frames, server};

use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::Effect;
use crate::core::rows::persisted::ConfigKey;
use crate::core::vocab::agent_api::StateSource;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

use super::value::MAX_STATE_FRAME_BYTES;

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
        self.now = self.now.max(now_ms);
        self.change_state(state, StateSource::Server)
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
            self.send_to(vec![conn], agent_frames::state_error(&reason));
        }
    }

    /// A chat clear forgets the config rows; the state is not the chat's.
    pub(in crate::core) fn keep_agent_state(&mut self) {
        if let Some(state) = self.synced.shared() {
            self.put_config(ConfigKey::AgentState, &StateRow { state: &state });
        }
    }

    fn change_state(&mut self, state: Value, source: StateSource) -> Result<(), String> {
        if let Some(validate) = self.config.agent_api.validate_state.clone() {
            validate(&state, &source)?;
        }
        let frame = agent_frames::state(&state);
        let limit = MAX_STATE_FRAME_BYTES;
        if frame.len() > limit {
            return Err(format!(
                "state too large: {} bytes (limit {limit})",
                frame.len()
            ));
        }
        let state = Rc::new(state);
        self.synced.replace(state.clone());
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
