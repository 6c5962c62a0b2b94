//! Callable methods: a connection's `rpc` frame gets exactly one final
//! reply on its id. A method the definition does not declare, a malformed
//! frame and a call over the connection's limits (calls, bytes in flight)
//! are answered at once with an error; a declared method is run by the host
//! (`AuthorCall::RunCallable`) and its outcome (`Event::CallableDone`) is the
//! reply, sent only while the caller is still connected. A streaming method
//! sends chunks before it (`Core::send_call_chunk`, `done: false`) while it
//! runs; when its caller goes, it is cancelled (`AuthorCall::CancelCalls`).

use serde_json::Value;

use crate::protocol::agent_frames::{self, AgentFrameError};
use crate::protocol::types;

use crate::core::callables::in_flight::MAX_CHUNK_BYTES;
use crate::core::contract::author_calls::AuthorCall;
use crate::core::contract::effects::Effect;
use crate::core::vocab::ids::ConnId;
use crate::core::Core;

impl Core {
    pub(in crate::core::callables) fn on_call(
        &mut self,
        conn: ConnId,
        id: String,
        method: String,
        args: Value,
        bytes: usize,
    ) {
        let Some(spec) = self.config.agent_api.callable(&method) else {
            let error = format!("Method {method} does not exist");
            return self.send_to(vec![conn], agent_frames::rpc_error(&id, &error));
        };
        let streaming = spec.streaming;
        if let Err(refused) = self.calls.start(&conn, &id, bytes, streaming) {
            let error = refused.reason(&id, bytes);
            return self.send_to(vec![conn], agent_frames::rpc_error(&id, &error));
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
        if !self.calls.finish(&conn, &id) || !self.conns.contains(&conn) {
            return;
        }
        let frame = match result {
            Ok(value) => agent_frames::rpc_result(&id, &value),
            Err(error) => agent_frames::rpc_error(&id, &error),
        };
        self.send_to(vec![conn], frame);
    }

    /// A streaming call's method sends one chunk (`done: false`) to its
    /// caller. `Err`: not sent — the call is not a running streaming call
    /// (it ended, or its caller went) or the chunk is over `MAX_CHUNK_BYTES`.
    pub fn send_call_chunk(&mut self, conn: &str, id: &str, chunk: &Value) -> Result<(), String> {
        if !self.calls.is_streaming(conn, id) || !self.conns.contains(conn) {
            return Err(format!("call {id} is no longer streaming"));
        }
        let frame = agent_frames::rpc_chunk(id, chunk);
        if frame.len() > MAX_CHUNK_BYTES {
            return Err(format!(
                "chunk too large: {} bytes (limit {MAX_CHUNK_BYTES})",
                frame.len()
            ));
        }
        self.send_to(vec![ConnId::from(conn)], frame);
        Ok(())
    }

    /// A connection went: its calls are forgotten (their outcomes have no
    /// one to go to) and its streaming calls cancelled.
    pub(in crate::core) fn drop_calls_of(&mut self, conn: &ConnId) {
        let ids = self.calls.drop_conn(conn);
        if !ids.is_empty() {
            self.effects.push(Effect::Author(AuthorCall::CancelCalls {
                conn: conn.clone(),
                ids,
            }));
        }
    }

    /// A state or rpc frame that could not be read: answered on its call id,
    /// as a refused state change, or (a call without an id) as an error frame.
    pub(in crate::core::callables) fn on_agent_frame_error(
        &mut self,
        conn: ConnId,
        error: AgentFrameError,
    ) {
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
