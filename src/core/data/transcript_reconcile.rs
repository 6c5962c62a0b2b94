//! Reconciling a client-posted transcript into the stored one: new and
//! edited user messages land (marked as the web's), the replaced branch goes
//! on a regeneration, and what the server owns (model output) is never taken
//! from a client.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::{Reconciled, Transcript};
use crate::protocol::{Role, UIMessage};

impl Transcript {
    /// Merges a client-posted transcript: new user messages are appended (marked
    /// `channel:"web"`), edited user messages are updated by id, and assistant or
    /// system messages the server never produced are ignored (the server owns
    /// model output). With `regenerate`, stored messages after the last posted
    /// message are removed so the new answer replaces them. Costs a lookup per
    /// posted message (older ones are only loaded when they change).
    pub fn reconcile(&mut self, incoming: &[UIMessage], regenerate: bool) -> Reconciled {
        let mut out = Reconciled {
            message_ids: trailing_user_ids(incoming.iter()),
            ..Default::default()
        };
        if regenerate {
            let anchor = incoming.iter().rev().find_map(|m| self.locate(&m.id));
            if let Some(last_known) = anchor {
                for entry in self.entries.drain(last_known + 1..) {
                    self.seq_by_id.remove(&entry.message.id);
                    out.removed.push(entry.message.id);
                }
            }
        }
        let older = super::posted::PostedOlder::read(self, incoming);
        // Where the newest posted message the store knows is, asked the
        // first time a posted user message is unknown.
        let mut last_known: Option<Option<usize>> = None;
        let mut posted_ids = HashSet::new();
        for (index, message) in incoming.iter().enumerate() {
            if !out.unmatched {
                out.unmatched = !posted_ids.insert(message.id.as_str())
                    || (message.role != Role::User
                        && self.position(&message.id).is_none()
                        && !older.holds_as_posted(message));
            }
            if message.role != Role::User {
                continue;
            }
            let sanitized = sanitize_user_message(message);
            match older.find(self, &message.id) {
                Some(stored) if stored.role != Role::User => out.unmatched = true,
                Some(stored) if stored.parts == sanitized.parts => {}
                Some(_) => out.written.push(self.upsert(sanitized)),
                None => {
                    let known = *last_known.get_or_insert_with(|| {
                        incoming
                            .iter()
                            .rposition(|m| older.find(self, &m.id).is_some())
                    });
                    // Unknown, yet older than a message the store keeps: a
                    // message the history cap deleted, posted again by a tab
                    // that still shows it. It stays deleted.
                    if known.is_none_or(|known| index > known) {
                        out.written.push(self.upsert(sanitized));
                    } else {
                        out.unmatched = true;
                    }
                }
            }
        }
        out
    }

    /// Like `find`, borrowing a message of the window.
    pub(super) fn find_ref(&self, id: &str) -> Option<std::borrow::Cow<'_, UIMessage>> {
        if let Some(i) = self.position(id) {
            return Some(std::borrow::Cow::Borrowed(&self.entries[i].message));
        }
        self.find(id).map(|e| std::borrow::Cow::Owned(e.message))
    }
}

/// Ids of the trailing run of user messages (the `messageIds` of a request).
pub(in crate::core) fn trailing_user_ids<'a>(
    messages: impl DoubleEndedIterator<Item = &'a UIMessage>,
) -> Vec<String> {
    let mut ids: Vec<String> = messages
        .rev()
        .take_while(|m| m.role == Role::User)
        .map(|m| m.id.clone())
        .collect();
    ids.reverse();
    ids
}

/// Client-supplied `channel`/`turnMetadata` are not trusted; web messages say
/// so. Tool parts are not a user's to send: they are dropped.
fn sanitize_user_message(message: &UIMessage) -> UIMessage {
    let mut clean = message.clone();
    clean.drop_tool_parts_of_user();
    let mut meta = match clean.metadata.take() {
        Some(Value::Object(m)) => m,
        _ => Default::default(),
    };
    meta.remove("turnMetadata");
    meta.insert("channel".into(), json!("web"));
    clean.metadata = Some(Value::Object(meta));
    clean
}
