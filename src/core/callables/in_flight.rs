//! `CallsInFlight`: the callable methods each connection has running, by
//! call id, held under two limits (how many, and how many bytes of
//! arguments they hold between them) so no client can pile up unbounded
//! work or pin unbounded memory; which of them stream; and what is left to
//! cancel when a connection goes.

use std::collections::BTreeMap;

use crate::core::vocab::ids::ConnId;

/// Calls one connection may have running at once; more are refused, so no
/// client can pile up unbounded work.
pub const MAX_CALLS_IN_FLIGHT: usize = 32;

/// Largest `rpc` frame (method, id and arguments, as sent), in bytes. A
/// larger one is refused before its arguments are read: parsed arguments
/// take several times their text in memory, and a wasm instance's memory
/// never shrinks.
/// Its JSON values are counted under the same budget
/// (`protocol::gate::CALL`).
pub const MAX_CALL_FRAME_BYTES: usize = crate::protocol::gate::CALL.max_bytes;

/// Bytes of call frames (their arguments) one connection's running calls
/// may hold between them; a call that would go over is refused.
pub const MAX_CALL_BYTES_IN_FLIGHT: usize = 1024 * 1024;

/// The largest frame one chunk of a streaming call may take; a bigger
/// chunk is refused to the method that sends it (the stream goes on).
pub const MAX_CHUNK_BYTES: usize = 1024 * 1024;

/// Why a call was not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallRefused {
    /// A call with this id is already running on the connection.
    DuplicateId,
    /// `MAX_CALLS_IN_FLIGHT` are running.
    TooMany,
    /// The arguments would take the connection over `MAX_CALL_BYTES_IN_FLIGHT`.
    TooManyBytes { held: usize },
}

impl CallRefused {
    /// The caller's error text.
    pub fn reason(&self, id: &str, bytes: usize) -> String {
        match self {
            CallRefused::DuplicateId => format!("a call with id {id} is already running"),
            CallRefused::TooMany => {
                format!("too many calls in flight (limit {MAX_CALLS_IN_FLIGHT}); try again later")
            }
            CallRefused::TooManyBytes { held } => format!(
                "too many call bytes in flight ({held} bytes held, this call {bytes}, \
                 limit {MAX_CALL_BYTES_IN_FLIGHT} bytes of frames); try again later"
            ),
        }
    }
}

#[derive(Debug)]
struct Running {
    bytes: usize,
    streaming: bool,
}

/// The calls each connection has running.
#[derive(Debug, Default)]
pub struct CallsInFlight {
    by_conn: BTreeMap<ConnId, BTreeMap<String, Running>>,
}

impl CallsInFlight {
    /// Starts call `id` whose frame took `bytes`, unless a limit refuses it.
    pub fn start(
        &mut self,
        conn: &ConnId,
        id: &str,
        bytes: usize,
        streaming: bool,
    ) -> Result<(), CallRefused> {
        let calls = self.by_conn.entry(conn.clone()).or_default();
        if calls.contains_key(id) {
            return Err(CallRefused::DuplicateId);
        }
        if calls.len() >= MAX_CALLS_IN_FLIGHT {
            return Err(CallRefused::TooMany);
        }
        let held: usize = calls.values().map(|c| c.bytes).sum();
        if held.saturating_add(bytes) > MAX_CALL_BYTES_IN_FLIGHT {
            return Err(CallRefused::TooManyBytes { held });
        }
        calls.insert(id.to_string(), Running { bytes, streaming });
        Ok(())
    }

    /// Ends call `id`; whether it was running (a call of a connection that
    /// went is not).
    pub fn finish(&mut self, conn: &ConnId, id: &str) -> bool {
        let Some(calls) = self.by_conn.get_mut(conn) else {
            return false;
        };
        let was = calls.remove(id).is_some();
        if calls.is_empty() {
            self.by_conn.remove(conn);
        }
        was
    }

    /// Whether `id` is a streaming call still running on `conn`.
    pub fn is_streaming(&self, conn: &str, id: &str) -> bool {
        self.by_conn
            .get(conn)
            .and_then(|calls| calls.get(id))
            .is_some_and(|call| call.streaming)
    }

    /// Forgets every call of a connection that went; the ids of its
    /// streaming calls (to cancel), in id order.
    pub fn drop_conn(&mut self, conn: &str) -> Vec<String> {
        let Some(calls) = self.by_conn.remove(conn) else {
            return Vec::new();
        };
        calls
            .into_iter()
            .filter(|(_, call)| call.streaming)
            .map(|(id, _)| id)
            .collect()
    }
}
