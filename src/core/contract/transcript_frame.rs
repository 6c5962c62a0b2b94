//! The transcript frame (`cf_agent_chat_messages`) as the core hands it to
//! the host: the JSON of the window's newest messages that fit, and where
//! the older part comes from (the newest stored messages before the window
//! within the bytes left). The host reads that part from its store as it
//! sends the frame, so a long history's frame is joined from stored JSON
//! where it is sent (for a Durable Object: in JS, never copied into the
//! agent's memory); `read` joins it the same way through any `History`.

use crate::protocol::types;

use crate::core::contract::history::History;

/// Where a frame's older part comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OlderPart {
    /// The stored messages placed before this place (the window's first)...
    pub before_seq: u64,
    /// ...the newest whose JSON (and a comma each) fits in this many bytes.
    pub max_bytes: usize,
}

/// A transcript frame before its older part is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptFrame {
    /// The frame answers a connect (`"connect":true`).
    pub connect: bool,
    /// The older part, when the window does not start the conversation and
    /// left room for it.
    pub older: Option<OlderPart>,
    /// The JSON of the window's messages in the frame, joined by commas,
    /// oldest first.
    pub window: String,
}

impl TranscriptFrame {
    /// What comes before the messages.
    pub fn head(&self) -> String {
        format!("{{\"type\":\"{}\",\"messages\":[", types::CHAT_MESSAGES)
    }

    /// What comes after the messages.
    pub fn tail(&self) -> &'static str {
        if self.connect {
            "],\"connect\":true}"
        } else {
            "]}"
        }
    }

    /// The whole frame with `older` (the older part: stored message JSON
    /// joined by commas, "" for none) in front of the window.
    pub fn with_older(&self, older: &str) -> String {
        let mut frame = self.head();
        frame.reserve(older.len() + self.window.len() + 24);
        frame.push_str(older);
        if !older.is_empty() && !self.window.is_empty() {
            frame.push(',');
        }
        frame.push_str(&self.window);
        frame.push_str(self.tail());
        frame
    }

    /// The whole frame, its older part read through `history`.
    pub fn read(&self, history: &dyn History) -> String {
        let older = match self.older {
            Some(part) => history.newest_json_before(part.before_seq, part.max_bytes),
            None => String::new(),
        };
        self.with_older(&older)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::server;

    #[test]
    fn a_frame_joins_like_the_frame_of_its_messages() {
        let a = r#"{"id":"a","role":"user","parts":[]}"#.to_string();
        let b = r#"{"id":"b","role":"assistant","parts":[]}"#.to_string();
        for connect in [false, true] {
            let frame = TranscriptFrame {
                connect,
                older: None,
                window: format!("{a},{b}"),
            };
            let whole = server::chat_messages_json(&[a.clone(), b.clone()], connect);
            assert_eq!(frame.with_older(""), whole);
            let split = TranscriptFrame {
                window: b.clone(),
                ..frame.clone()
            };
            assert_eq!(split.with_older(&a), whole);
            let empty = TranscriptFrame {
                window: String::new(),
                ..frame
            };
            assert_eq!(
                empty.with_older(""),
                server::chat_messages_json(&[], connect)
            );
        }
    }
}
