//! What the core remembers of turns that ended: the last failed turn's
//! record (replayed to a tab that resumes it, stored until a new turn is
//! accepted), the last turn closed (until its write batch is known to have
//! held), and the `messageIds` of the last few ended requests (for a late
//! ACK). Changed only through these methods; a clear calls `reset()`.

use std::collections::VecDeque;

use crate::core::rows::persisted::TerminalError;
use crate::core::turn::active::ClosedTurn;

/// How many ended requests are remembered for late ACKs.
const REMEMBERED: usize = 32;

#[derive(Debug, Default)]
pub(in crate::core) struct EndedTurns {
    terminal_error: Option<TerminalError>,
    last_closed: Option<ClosedTurn>,
    /// Request ids of the last few ended turns with their `messageIds`.
    finished: VecDeque<(String, Vec<String>)>,
}

impl EndedTurns {
    pub(in crate::core) fn restored(terminal_error: Option<TerminalError>) -> Self {
        EndedTurns {
            terminal_error,
            ..EndedTurns::default()
        }
    }

    /// The last failed turn's record, if it is still replayed.
    pub(in crate::core) fn terminal_error(&self) -> Option<&TerminalError> {
        self.terminal_error.as_ref()
    }

    pub(in crate::core) fn record_terminal_error(&mut self, record: TerminalError) {
        self.terminal_error = Some(record);
    }

    /// Forgets the failed turn's record; true when there was one.
    pub(in crate::core) fn forget_terminal_error(&mut self) -> bool {
        self.terminal_error.take().is_some()
    }

    /// `closed` is the last turn closed.
    pub(in crate::core) fn closed(&mut self, closed: ClosedTurn) {
        self.last_closed = Some(closed);
    }

    /// The last turn closed, taken out (a failed write looks at it).
    pub(in crate::core) fn take_closed(&mut self) -> Option<ClosedTurn> {
        self.last_closed.take()
    }

    pub(in crate::core) fn remember_finished(&mut self, request_id: &str, message_ids: &[String]) {
        if self.finished.len() == REMEMBERED {
            self.finished.pop_front();
        }
        self.finished
            .push_back((request_id.to_string(), message_ids.to_vec()));
    }

    /// The `messageIds` of a recently ended request.
    pub(in crate::core) fn recently_finished(&self, id: &str) -> Option<Vec<String>> {
        self.finished
            .iter()
            .find(|(request_id, _)| request_id == id)
            .map(|(_, ids)| ids.clone())
    }

    /// The history was cleared: no failure is replayed any more.
    pub(in crate::core) fn reset(&mut self) {
        self.terminal_error = None;
    }
}
