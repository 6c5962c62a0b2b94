//! `CallsInFlight`: how many callable methods each connection has running,
//! held under a limit so no client can pile up unbounded work.

use std::collections::BTreeMap;

use crate::core::vocab::ids::ConnId;

/// Calls one connection may have running at once; more are refused, so no
/// client can pile up unbounded work.
pub const MAX_CALLS_IN_FLIGHT: usize = 32;

/// How many calls each connection has running.
#[derive(Debug, Default)]
pub struct CallsInFlight {
    by_conn: BTreeMap<ConnId, usize>,
}

impl CallsInFlight {
    pub fn start(&mut self, conn: &ConnId) -> bool {
        let count = self.by_conn.entry(conn.clone()).or_default();
        if *count >= MAX_CALLS_IN_FLIGHT {
            return false;
        }
        *count += 1;
        true
    }

    pub fn finish(&mut self, conn: &ConnId) {
        if let Some(count) = self.by_conn.get_mut(conn) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.by_conn.remove(conn);
            }
        }
    }
}
