//! `CallsInFlight`: how many callable methods each connection has running and
//! how many bytes of call frames they hold, both under a limit, so no client
//! can pile up unbounded work or pin unbounded memory.

use std::collections::BTreeMap;

use crate::core::vocab::ids::ConnId;

/// Calls one connection may have running at once; more are refused, so no
/// client can pile up unbounded work.
pub const MAX_CALLS_IN_FLIGHT: usize = 32;

/// Largest `rpc` frame (method, id and arguments, as sent), in bytes. A
/// larger one is refused before its arguments are read: parsed arguments
/// take several times their text in memory, and a wasm instance's memory
/// never shrinks.
pub const MAX_CALL_FRAME_BYTES: usize = 256 * 1024;

/// Bytes of `rpc` frames one connection may have running at once; a call
/// past it is refused until others end.
pub const MAX_CALL_BYTES_IN_FLIGHT: usize = 1024 * 1024;

/// Why a call was not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRefusal {
    TooMany,
    TooManyBytes,
}

impl CallRefusal {
    pub fn reason(self) -> String {
        match self {
            CallRefusal::TooMany => format!(
                "too many calls in flight (limit {MAX_CALLS_IN_FLIGHT}); try again later"
            ),
            CallRefusal::TooManyBytes => format!(
                "too many call bytes in flight (limit {MAX_CALL_BYTES_IN_FLIGHT} bytes of frames); try again later"
            ),
        }
    }
}

/// The calls each connection has running: their ids and frame sizes.
#[derive(Debug, Default)]
pub struct CallsInFlight {
    by_conn: BTreeMap<ConnId, Vec<(String, usize)>>,
}

impl CallsInFlight {
    /// Starts call `id` of `conn`, whose frame was `bytes` long.
    pub fn start(&mut self, conn: &ConnId, id: &str, bytes: usize) -> Result<(), CallRefusal> {
        let running = self.by_conn.get(conn).map_or(&[][..], Vec::as_slice);
        if running.len() >= MAX_CALLS_IN_FLIGHT {
            return Err(CallRefusal::TooMany);
        }
        let held: usize = running.iter().map(|(_, size)| size).sum();
        if held.saturating_add(bytes) > MAX_CALL_BYTES_IN_FLIGHT {
            return Err(CallRefusal::TooManyBytes);
        }
        let running = self.by_conn.entry(conn.clone()).or_default();
        running.push((id.to_string(), bytes));
        Ok(())
    }

    /// Call `id` of `conn` ended (one of them, when a client reused the id).
    pub fn finish(&mut self, conn: &ConnId, id: &str) {
        if let Some(running) = self.by_conn.get_mut(conn) {
            if let Some(at) = running.iter().position(|(call, _)| call == id) {
                running.swap_remove(at);
            }
            if running.is_empty() {
                self.by_conn.remove(conn);
            }
        }
    }
}
