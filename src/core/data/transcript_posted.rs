//! The posted messages older than the window, read from the store in one
//! go: a tab posts its whole transcript with every request (as
//! `useAgentChat` does), and a read per message would cost a long chat a
//! store query per message the tab shows. User messages are read whole (an
//! edit is taken); of the others only the role is read, to know the tab
//! holds an answer the store holds.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use crate::protocol::{Role, UIMessage};

use super::Transcript;

/// Posted messages older than the window, as one read found them.
#[derive(Default)]
pub(super) struct PostedOlder {
    /// The ids of user messages asked about.
    asked: HashSet<String>,
    /// Those the store holds (older than the window), by id.
    stored: HashMap<String, UIMessage>,
    /// The stored roles of the posted answers (and system messages) older
    /// than the window, by id.
    roles: HashMap<String, Role>,
}

impl PostedOlder {
    /// Reads the posted messages of `incoming` that `transcript`'s window
    /// does not hold: the user messages whole, the others' roles.
    pub(super) fn read(transcript: &Transcript, incoming: &[UIMessage]) -> PostedOlder {
        if !transcript.older {
            return PostedOlder::default();
        }
        let (users, others): (Vec<&UIMessage>, Vec<&UIMessage>) = incoming
            .iter()
            .filter(|m| transcript.position(&m.id).is_none())
            .partition(|m| m.role == Role::User);
        let window_start = transcript.window_start();
        let mut older = PostedOlder::default();
        if !users.is_empty() {
            let ids: Vec<&str> = users.iter().map(|m| m.id.as_str()).collect();
            older.stored = transcript
                .history
                .find_many(&ids)
                .into_iter()
                .filter(|e| e.seq < window_start)
                .map(|e| (e.message.id.clone(), e.message))
                .collect();
            older.asked = ids.into_iter().map(str::to_string).collect();
        }
        if !others.is_empty() {
            let ids: Vec<&str> = others.iter().map(|m| m.id.as_str()).collect();
            older.roles = transcript
                .history
                .roles_before(&ids, window_start)
                .into_iter()
                .collect();
        }
        older
    }

    /// Whether the store holds `message` (not in the window) under its id
    /// with its role: a posted answer the tab got from this agent.
    pub(super) fn holds_as_posted(&self, message: &UIMessage) -> bool {
        self.roles.get(&message.id) == Some(&message.role)
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
