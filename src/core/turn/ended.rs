//! What the core remembers of turns that ended: the last failed turn's
//! record (replayed to a tab that resumes it, stored until a new turn is
//! accepted), the last turn closed (until its write batch is known to have
//! held), and the `messageIds` of the last few ended requests (for a late
//! ACK). Changed only through these methods; a clear calls `reset()`.

use std::collections::VecDeque;

use crate::core::rows::persisted::TerminalError;
use crate::core::turn::active::ClosedTurn;
use crate::protocol::Outcome;

/// How many ended requests are remembered for late ACKs.
const REMEMBERED: usize = 32;

#[derive(Debug, Default)]
pub(in crate::core) struct EndedTurns {
    terminal_error: Option<TerminalError>,
    last_closed: Option<ClosedTurn>,
    /// The last few ended requests: how each ended, for a late ACK.
    finished: VecDeque<Finished>,
}

/// An ended request as a late ACK of it is answered.
#[derive(Debug, Clone)]
pub(in crate::core) struct Finished {
    pub request_id: String,
    pub message_ids: Vec<String>,
    /// How its stream ended (`aborted` for a stream cut by an eviction,
    /// whatever its recovery then did).
    pub outcome: Outcome,
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

    pub(in crate::core) fn remember_finished(
        &mut self,
        request_id: &str,
        message_ids: &[String],
        outcome: Outcome,
    ) {
        if self.finished.len() == REMEMBERED {
            self.finished.pop_front();
        }
        self.finished.push_back(Finished {
            request_id: request_id.to_string(),
            message_ids: message_ids.to_vec(),
            outcome,
        });
    }

    /// How a recently ended request ended.
    pub(in crate::core) fn recently_finished(&self, id: &str) -> Option<&Finished> {
        self.finished.iter().find(|f| f.request_id == id)
    }

    /// The history was cleared: no failure is replayed any more.
    pub(in crate::core) fn reset(&mut self) {
        self.terminal_error = None;
    }
}
