//! Open protocol connections and where each stands in the resume handshake:
//! offered a stream but not yet acknowledged (excluded from live chunks), or
//! parked waiting for an accepted turn to start streaming; how many
//! delegated calls deep the turns a parent's call asks for are; and how many
//! frames have reshaped the message list each one shows.

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
    /// Frames sent to it that replace or edit its message list (transcripts,
    /// message updates, clears, resume offers), counted.
    list_changes: u64,
    /// Its list is known to be the store's: a transcript was sent to it and
    /// nothing since made them differ (a push of its own list, a posted
    /// message the store did not take, a history cap deletion).
    list_matches: bool,
}

#[derive(Debug, Default)]
pub struct Connections {
    conns: BTreeMap<ConnId, ConnState>,
    /// Connections whose `list_matches` changed and is not yet noted with
    /// the socket (`take_list_match_notes`).
    unnoted: BTreeMap<ConnId, bool>,
}

impl Connections {
    pub fn add(&mut self, conn: ConnId) {
        self.conns.insert(conn, ConnState::default());
    }

    /// A socket open before this instance started, with what was noted for
    /// it: whether its list was the store's.
    pub fn adopt(&mut self, conn: ConnId, list_matches: bool) {
        let state = ConnState {
            list_matches,
            ..ConnState::default()
        };
        self.conns.insert(conn, state);
    }

    /// The connections whose list's match with the store changed since last
    /// asked, with the new value: to be kept with their sockets.
    pub fn take_list_match_notes(&mut self) -> Vec<(ConnId, bool)> {
        std::mem::take(&mut self.unnoted).into_iter().collect()
    }

    fn set_list_matches(&mut self, conn: &ConnId, matches: bool) {
        if let Some(state) = self.conns.get_mut(conn) {
            if state.list_matches != matches {
                state.list_matches = matches;
                self.unnoted.insert(conn.clone(), matches);
            }
        }
    }

    pub fn remove(&mut self, conn: &str) {
        self.conns.remove(conn);
        self.unnoted.remove(conn);
    }

    pub fn contains(&self, conn: &str) -> bool {
        self.conns.contains_key(conn)
    }

    /// `conn` was offered a stream (`stream_resuming`): it gets no live
    /// chunks until it acknowledges.
    pub fn offer_resume(&mut self, conn: &str) {
        if let Some(state) = self.conns.get_mut(conn) {
            state.pending_resume = true;
            state.list_changes += 1;
        }
    }

    /// Each of `to` was sent a frame that edits its message list.
    pub fn lists_changed(&mut self, to: &[ConnId]) {
        for conn in to {
            if let Some(state) = self.conns.get_mut(conn) {
                state.list_changes += 1;
            }
        }
    }

    /// Each of `to` was sent the transcript: its list is now the store's.
    pub fn transcript_sent(&mut self, to: &[ConnId]) {
        self.lists_changed(to);
        for conn in to {
            self.set_list_matches(conn, true);
        }
    }

    /// The lists of `conns` differ from the store until their next transcript.
    pub fn lists_differ(&mut self, conns: &[ConnId]) {
        for conn in conns {
            self.set_list_matches(conn, false);
        }
    }

    /// How many frames have changed `conn`'s list, while that list is known
    /// to be the store's (`None` otherwise, or once it is gone).
    pub fn matching_list_changes(&self, conn: &str) -> Option<u64> {
        self.conns
            .get(conn)
            .filter(|state| state.list_matches)
            .map(|state| state.list_changes)
    }

    /// `conn` is open and gets live chat frames (no resume offer pending).
    pub fn is_live(&self, conn: &str) -> bool {
        self.conns
            .get(conn)
            .is_some_and(|state| !state.pending_resume)
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
