//! Callable methods: a connection's `rpc` frame gets exactly one reply on
//! its id. A method the definition does not declare, a malformed frame and
//! a call over the per-connection limits of calls (and call bytes) in
//! flight are answered at once with an error; a declared method is run by the host
//! (`AuthorCall::RunCallable`) and its outcome (`Event::CallableDone`) is the
//! reply, sent only while the caller is still connected.

use serde_json::Value;

use crate::protocol::agent_frames::{self, AgentFrameError};
use crate::protocol::types;

use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::Effect;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    pub(in crate::core) fn on_call(
        &mut self,
        conn: ConnId,
        id: String,
        method: String,
        args: Value,
        frame_bytes: usize,
    ) {
        if !self.config.agent_api.callables.contains(&method) {
            let error = format!("Method {method} does not exist");
            return self.send_to(vec![conn], agent_frames::rpc_error(&id, &error));
        }
        if let Err(refusal) = self.calls.start(&conn, &id, frame_bytes) {
            return self.send_to(vec![conn], agent_frames::rpc_error(&id, &refusal.reason()));
        }
        self.effects.push(Effect::Author(AuthorCall::RunCallable {
            conn,
            id,
            method,
            args,
        }));
    }

    pub(in crate::core) fn on_callable_done(
        &mut self,
        conn: ConnId,
        id: String,
        result: Result<Value, String>,
    ) {
        self.calls.finish(&conn, &id);
        if !self.conns.contains(&conn) {
            return;
        }
        let frame = match result {
            Ok(value) => agent_frames::rpc_result(&id, &value),
            Err(error) => agent_frames::rpc_error(&id, &error),
        };
        self.send_to(vec![conn], frame);
    }

    /// A state or rpc frame that could not be read: answered on its call id,
    /// as a refused state change, or (a call without an id) as an error frame.
    pub(in crate::core) fn on_agent_frame_error(&mut self, conn: ConnId, error: AgentFrameError) {
        let reason = format!("invalid {} frame: {}", error.kind, error.reason);
        match (error.kind, error.rpc_id) {
            (types::RPC, Some(id)) => {
                self.send_to(vec![conn], agent_frames::rpc_error(&id, &reason))
            }
            (types::STATE, _) => self.send_to(vec![conn], agent_frames::state_error(&reason)),
            _ => self.reject(conn, None, &reason),
        }
    }
}
