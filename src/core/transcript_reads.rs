//! Read-through views of the whole conversation (window plus older messages
//! read from the store): `get-messages` and the transcript frames.

use crate::protocol::UIMessage;

use super::super::history::PAGE;
use super::Transcript;

impl Transcript {
    /// The whole conversation, oldest first (reads every older message).
    pub fn messages(&self) -> Vec<UIMessage> {
        let mut older = Vec::new();
        if self.older {
            let mut before = self.window_start();
            loop {
                let page = self.history.page_before(before, PAGE);
                let full = page.len() == PAGE;
                if let Some(last) = page.last() {
                    before = last.seq;
                }
                older.extend(page.into_iter().map(|e| e.message));
                if !full {
                    break;
                }
            }
            older.reverse();
        }
        older.extend(self.iter().cloned());
        older
    }

    /// The JSON of the newest messages that fit in `max_bytes` together,
    /// oldest first: the whole conversation when it fits (what a transcript
    /// frame carries; see `history::SNAPSHOT_BYTES`). Older messages are
    /// sent as stored, not parsed again, in one piece of comma-joined JSON
    /// objects (the frame joins every piece with commas).
    pub fn snapshot(&self, max_bytes: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut used = 0;
        for message in self.iter().rev() {
            let json = serde_json::to_string(message).unwrap_or_default();
            used += json.len() + 1;
            if used > max_bytes {
                out.reverse();
                return out;
            }
            out.push(json);
        }
        if self.older && used < max_bytes {
            let older = self
                .history
                .newest_json_before(self.window_start(), max_bytes - used);
            if !older.is_empty() {
                out.push(older);
            }
        }
        out.reverse();
        out
    }
}
