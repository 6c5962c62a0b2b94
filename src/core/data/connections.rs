//! Open protocol connections and where each stands in the resume handshake:
//! offered a stream but not yet acknowledged (excluded from live chunks), or
//! parked waiting for an accepted turn to start streaming; and how many
//! delegated calls deep the turns a parent's call asks for are.

use std::collections::BTreeMap;

use crate::core::vocab::ids::ConnId;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ConnState {
    /// Offered `stream_resuming`, no ACK yet: gets no live chunks.
    pending_resume: bool,
    /// Waiting for the next stream to start (`stream_pending` was sent or a continuation is owed).
    parked: bool,
    /// The delegation depth of turns asked for on it (a parent's call: the
    /// parent's depth plus one; 0 otherwise).
    delegation_depth: u32,
}

#[derive(Debug, Default)]
pub struct Connections {
    conns: BTreeMap<ConnId, ConnState>,
}

impl Connections {
    pub fn add(&mut self, conn: ConnId) {
        self.conns.insert(conn, ConnState::default());
    }

    pub fn remove(&mut self, conn: &str) {
        self.conns.remove(conn);
    }

    pub fn contains(&self, conn: &str) -> bool {
        self.conns.contains_key(conn)
    }

    /// `conn` was offered a stream (`stream_resuming`): it gets no live
    /// chunks until it acknowledges.
    pub fn offer_resume(&mut self, conn: &str) {
        if let Some(state) = self.conns.get_mut(conn) {
            state.pending_resume = true;
        }
    }

    /// `conn` acknowledged its offer; returns whether it had one pending.
    pub fn ack_resume(&mut self, conn: &str) -> bool {
        self.conns
            .get_mut(conn)
            .is_some_and(|state| std::mem::take(&mut state.pending_resume))
    }

    /// Turns asked for on `conn` are `depth` delegated calls deep.
    pub fn set_delegation_depth(&mut self, conn: &str, depth: u32) {
        if let Some(state) = self.conns.get_mut(conn) {
            state.delegation_depth = depth;
        }
    }

    /// How many delegated calls deep a turn asked for on `conn` is (0 for
    /// a connection that is gone or said nothing).
    pub fn delegation_depth(&self, conn: &str) -> u32 {
        self.conns
            .get(conn)
            .map_or(0, |state| state.delegation_depth)
    }

    /// `conn` waits for the next stream to start.
    pub fn park(&mut self, conn: &str) {
        if let Some(state) = self.conns.get_mut(conn) {
            state.parked = true;
        }
    }

    pub fn all(&self) -> Vec<ConnId> {
        self.conns.keys().cloned().collect()
    }

    pub fn all_except(&self, except: &str) -> Vec<ConnId> {
        self.conns
            .keys()
            .filter(|c| &***c != except)
            .cloned()
            .collect()
    }

    /// Recipients of live chat frames: everyone not holding an un-ACKed resume offer.
    pub fn chat(&self) -> Vec<ConnId> {
        self.conns
            .iter()
            .filter(|(_, s)| !s.pending_resume)
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// Parked connections, unparked.
    pub fn take_parked(&mut self) -> Vec<ConnId> {
        let mut out = Vec::new();
        for (conn, state) in &mut self.conns {
            if state.parked {
                state.parked = false;
                out.push(conn.clone());
            }
        }
        out
    }

    pub fn clear_pending_resume(&mut self) {
        for state in self.conns.values_mut() {
            state.pending_resume = false;
        }
    }
}
