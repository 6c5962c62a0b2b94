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

    /// The newest messages whose JSON fits in `max_bytes` together, oldest
    /// first: the whole conversation when it fits (what a transcript frame
    /// carries; see `history::SNAPSHOT_BYTES`).
    pub fn snapshot(&self, max_bytes: usize) -> Vec<UIMessage> {
        let mut out: Vec<UIMessage> = Vec::new();
        let mut used = 0;
        let fits = |message: &UIMessage, used: &mut usize| {
            let bytes = serde_json::to_string(message).map_or(0, |s| s.len()) + 1;
            *used += bytes;
            *used <= max_bytes
        };
        for message in self.iter().rev() {
            if !fits(message, &mut used) {
                out.reverse();
                return out;
            }
            out.push(message.clone());
        }
        if self.older {
            let mut before = self.window_start();
            'pages: loop {
                let page = self.history.page_before(before, PAGE);
                let full = page.len() == PAGE;
                for entry in page {
                    before = entry.seq;
                    if !fits(&entry.message, &mut used) {
                        break 'pages;
                    }
                    out.push(entry.message);
                }
                if !full {
                    break;
                }
            }
        }
        out.reverse();
        out
    }
}
