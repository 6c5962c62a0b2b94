//! How stored rows become the `StoredState` a core starts from: the decoding
//! and skipping rules shared by every store (the SQLite one and the in-memory
//! one of the tests), so that a restart reads back exactly the same state
//! whichever store kept it. A row that no longer parses is skipped, never fatal.

use crate::protocol::UIMessage;

use super::{Entry, OpenStream, StoredState, StreamRecord};

impl StoredState {
    /// Adds one transcript row; rows come in `seq` order. An unreadable body
    /// is skipped; the error says why (for the host's log).
    pub fn push_message_row(&mut self, seq: u64, body: &str) -> Result<(), serde_json::Error> {
        let message = serde_json::from_str::<UIMessage>(body)?;
        self.messages.push(Entry { seq, message });
        Ok(())
    }
}

impl OpenStream {
    /// An open stream from its stored record, with no chunks yet; `None` (the
    /// stream is skipped) when the record no longer parses.
    pub fn from_record_row(record: &str) -> Option<OpenStream> {
        let record = serde_json::from_str::<StreamRecord>(record).ok()?;
        Some(OpenStream {
            record,
            chunks: Vec::new(),
        })
    }

    /// Adds one chunk-log row (a JSON array of chunk bodies); rows come in
    /// `first_seq` order. An unreadable row adds nothing.
    pub fn push_chunk_row(&mut self, bodies: &str) {
        self.chunks
            .extend(serde_json::from_str::<Vec<String>>(bodies).unwrap_or_default());
    }
}
