//! Read-through views of the whole conversation (window plus older messages
//! read from the store): `get-messages` and the transcript frames.

use crate::protocol::{Role, UIMessage};

use super::Transcript;
use crate::core::contract::history::{newest_first, PAGE};
use crate::core::contract::transcript_frame::{OlderPart, TranscriptFrame};

impl Transcript {
    /// The whole conversation, oldest first (reads every older message).
    pub fn messages(&self) -> Vec<UIMessage> {
        let mut older = Vec::new();
        if self.older {
            older = newest_first(&*self.history, self.window_start(), PAGE)
                .map(|e| e.message)
                .collect();
            older.reverse();
        }
        older.extend(self.iter().cloned());
        older
    }

    /// A transcript frame of the newest messages that fit in `max_bytes`
    /// together, oldest first: the whole conversation when it fits (see
    /// `history::SNAPSHOT_BYTES`). The newest user message and everything
    /// after it (the exchange a tab is looking at) are always in it, whatever
    /// their size. The window's messages are serialized here; the older part
    /// is named by place and budget, and read as stored (not parsed again)
    /// when the frame is sent.
    pub fn snapshot(&self, max_bytes: usize, connect: bool) -> TranscriptFrame {
        let mut window: Vec<String> = Vec::new();
        let mut used = 0;
        let mut older = None;
        let mut fits = true;
        let messages: Vec<&UIMessage> = self.iter().collect();
        let pinned = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(usize::MAX);
        for (index, message) in messages.into_iter().enumerate().rev() {
            let json = serde_json::to_string(message).unwrap_or_default();
            used += json.len() + 1;
            if used > max_bytes && index < pinned {
                fits = false;
                break;
            }
            window.push(json);
        }
        if fits && self.older && used < max_bytes {
            older = Some(OlderPart {
                before_seq: self.window_start(),
                max_bytes: max_bytes - used,
            });
        }
        window.reverse();
        TranscriptFrame {
            connect,
            older,
            window: window.join(","),
        }
    }
}
