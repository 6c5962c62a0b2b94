//! The posted user messages older than the window, read from the store in
//! one go: a tab posts its whole transcript with every request (as
//! `useAgentChat` does), and a read per message would cost a long chat a
//! store query per message the tab shows.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::protocol::{Role, UIMessage};

use super::Transcript;

/// Posted user messages older than the window, as one read found them.
#[derive(Default)]
pub(super) struct PostedOlder {
    /// The ids asked about.
    asked: HashSet<String>,
    /// Those the store holds (older than the window), by id.
    stored: HashMap<String, UIMessage>,
}

impl PostedOlder {
    /// Reads the posted user messages of `incoming` that `transcript`'s
    /// window does not hold.
    pub(super) fn read(transcript: &Transcript, incoming: &[UIMessage]) -> PostedOlder {
        if !transcript.older {
            return PostedOlder::default();
        }
        let ids: Vec<&str> = incoming
            .iter()
            .filter(|m| m.role == Role::User && transcript.position(&m.id).is_none())
            .map(|m| m.id.as_str())
            .collect();
        if ids.is_empty() {
            return PostedOlder::default();
        }
        let window_start = transcript.window_start();
        let stored = transcript
            .history
            .find_many(&ids)
            .into_iter()
            .filter(|e| e.seq < window_start)
            .map(|e| (e.message.id.clone(), e.message))
            .collect();
        PostedOlder {
            asked: ids.into_iter().map(str::to_string).collect(),
            stored,
        }
    }

    /// A posted message as stored: the window, what `read` found, or (for a
    /// message it did not ask about) the store.
    pub(super) fn find<'a>(
        &'a self,
        transcript: &'a Transcript,
        id: &str,
    ) -> Option<Cow<'a, UIMessage>> {
        if let Some(i) = transcript.position(id) {
            return Some(Cow::Borrowed(&transcript.entries[i].message));
        }
        if let Some(message) = self.stored.get(id) {
            return Some(Cow::Borrowed(message));
        }
        if self.asked.contains(id) {
            return None;
        }
        transcript.find_ref(id)
    }
}
