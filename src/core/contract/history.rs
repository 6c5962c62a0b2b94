//! Reading the stored conversation: the narrow, synchronous read-through
//! interface the core uses for messages it no longer keeps in memory (a
//! Durable Object's SQLite answers synchronously, so this stays sans-I/O in
//! spirit: no awaiting, no clock). The core keeps only a recent window of
//! the transcript (`transcript.rs`); everything older is read from here when
//! a request needs it: a connect snapshot, `get-messages`, the model context,
//! a regenerate anchored far back, a tool call id lookup.
//!
//! Reads see what the host has applied so far. The core therefore only
//! reads messages older than its window, which it never changes without
//! first loading them into the window.

use std::rc::Rc;

use crate::protocol::{Role, UIMessage};

use crate::core::rows::persisted::Entry;

/// Messages kept in memory: the newest this many (and always the newest user
/// and assistant messages and anything a running or queued turn refers to).
/// Trimmed once the window holds twice as many.
pub const WINDOW_MESSAGES: usize = 32;

/// The most text the window keeps in memory (see `Transcript::trim`): past
/// twice this, the oldest messages are forgotten down to it, as past twice
/// `WINDOW_MESSAGES` messages. Without it a window of large messages (a
/// client may send 1 MiB of text per message) would hold tens of MiB.
pub const WINDOW_BYTES: usize = 2 * 1024 * 1024;

/// Messages read per page when walking back through older history.
pub const PAGE: usize = 64;

/// The most message JSON a transcript frame (connect snapshot, turn-end
/// broadcast) carries: the whole history up to this size, else the newest
/// messages that fit (always with the newest user message and what follows
/// it, whatever their size). Well under the platform's 1 MiB WebSocket
/// message limit.
pub const SNAPSHOT_BYTES: usize = 256 * 1024;

/// The shortest JSON a stored message has (every stored body is a
/// `UIMessage` as serialized here: an id, a role and its parts): a
/// transcript frame of `max_bytes` holds at most `max_bytes / (its length + 1)`
/// messages, so a store need not look at more rows than that.
pub const SHORTEST_MESSAGE_JSON: &str = r#"{"id":"","role":"user","parts":[]}"#;

/// The most stored rows whose JSON (plus a comma each) can fit in `max_bytes`.
pub fn most_rows_within(max_bytes: usize) -> usize {
    max_bytes / (SHORTEST_MESSAGE_JSON.len() + 1) + 1
}

/// The stored conversation, read by the core. Every method reads what the
/// host has applied so far.
pub trait History {
    /// Up to `limit` stored messages placed before `before_seq`, newest first.
    fn page_before(&self, before_seq: u64, limit: usize) -> Vec<Entry>;
    /// The stored JSON of the newest messages placed before `before_seq`
    /// whose JSON (plus a comma each) fits in `max_bytes` together, oldest
    /// first, joined by commas ("" when none): what a transcript frame
    /// carries, sent without parsing it again. Rows that are not JSON are
    /// left out.
    fn newest_json_before(&self, before_seq: u64, max_bytes: usize) -> String;
    /// The stored message with this id.
    fn find(&self, id: &str) -> Option<Entry>;
    /// The stored messages with these ids (in no particular order; an id
    /// not stored is left out). A store answers it with as few reads as it
    /// can; the default asks `find` for each.
    fn find_many(&self, ids: &[&str]) -> Vec<Entry> {
        ids.iter().filter_map(|id| self.find(id)).collect()
    }
    /// The roles of the stored messages with these ids placed before
    /// `before_seq` (an id not stored there is left out), each read no
    /// further than its role: what checking the answers a tab posts back
    /// needs. The default reads each message whole with `find_many`.
    fn roles_before(&self, ids: &[&str], before_seq: u64) -> Vec<(String, Role)> {
        self.find_many(ids)
            .into_iter()
            .filter(|e| e.seq < before_seq)
            .map(|e| (e.message.id, e.message.role))
            .collect()
    }
    /// The newest stored assistant message holding a tool call with this id
    /// (an index lookup, not a walk of the history).
    fn tool_call_owner(&self, tool_call_id: &str) -> Option<Entry>;
    /// How many stored messages are placed before `seq`.
    fn count_before(&self, seq: u64) -> usize;
    /// The place of the stored message with `n` older ones before it (0:
    /// the oldest), if there are that many.
    fn seq_after_oldest(&self, n: usize) -> Option<u64>;
}

/// The stored messages placed before `before_seq`, newest first, read
/// `page` at a time as the walk goes (stop early to read no further).
pub fn newest_first(
    history: &dyn History,
    before_seq: u64,
    page: usize,
) -> impl Iterator<Item = Entry> + '_ {
    let mut before = before_seq;
    let mut read: std::vec::IntoIter<Entry> = Vec::new().into_iter();
    let mut last_page = false;
    std::iter::from_fn(move || loop {
        if let Some(entry) = read.next() {
            return Some(entry);
        }
        if last_page {
            return None;
        }
        let rows = history.page_before(before, page);
        last_page = rows.len() < page;
        before = rows.last()?.seq;
        read = rows.into_iter();
    })
}

/// A store that holds nothing (a core started without one).
#[derive(Debug, Default)]
pub struct NoHistory;

impl History for NoHistory {
    fn page_before(&self, _: u64, _: usize) -> Vec<Entry> {
        Vec::new()
    }
    fn newest_json_before(&self, _: u64, _: usize) -> String {
        String::new()
    }
    fn find(&self, _: &str) -> Option<Entry> {
        None
    }
    fn tool_call_owner(&self, _: &str) -> Option<Entry> {
        None
    }
    fn count_before(&self, _: u64) -> usize {
        0
    }
    fn seq_after_oldest(&self, _: usize) -> Option<u64> {
        None
    }
}

pub fn none() -> Rc<dyn History> {
    Rc::new(NoHistory)
}

/// Reads a stored row back (both stores decode rows the same way).
pub fn read_row(seq: u64, body: &str) -> Result<Entry, serde_json::Error> {
    let message = serde_json::from_str::<UIMessage>(body)?;
    Ok(Entry { seq, message })
}

/// The field a stored body names its role with. A stored body is a
/// `UIMessage` as serialized here: its id, then its role; inside the id's
/// JSON string every `"` is escaped, so the first `"role":"` is the field.
pub const ROLE_FIELD: &str = r#""role":""#;

/// How many characters from the role field's start hold the role and its
/// closing quote (`"role":"assistant"`): all a store reads to know a
/// message's role, whatever its size or its id's.
pub const ROLE_SPAN: usize = ROLE_FIELD.len() + "assistant\"".len();

/// What a store reads of `body` for its role (as SQLite's
/// `substr(body, instr(body, ROLE_FIELD), ROLE_SPAN)` does).
pub fn role_span(body: &str) -> &str {
    let Some(at) = body.find(ROLE_FIELD) else {
        return "";
    };
    let end = body[at..]
        .char_indices()
        .nth(ROLE_SPAN)
        .map_or(body.len(), |(i, _)| at + i);
    &body[at..end]
}

/// The role `span` (from [`role_span`]) names.
pub fn role_in_span(span: &str) -> Option<Role> {
    let rest = span.strip_prefix(ROLE_FIELD)?;
    match &rest[..rest.find('"')?] {
        "user" => Some(Role::User),
        "assistant" => Some(Role::Assistant),
        "system" => Some(Role::System),
        _ => None,
    }
}

/// Whether a stored body is JSON (checked without building it).
pub fn is_json(body: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(body).is_ok()
}

/// The tool call ids an assistant message holds (what the tool call index
/// of a store keeps for it); none for other roles.
pub fn indexed_tool_calls(message: &UIMessage) -> Vec<&str> {
    if message.role != crate::protocol::Role::Assistant {
        return Vec::new();
    }
    message
        .tool_parts()
        .map(|t| t.tool_call_id.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_message_serializes_shorter_than_the_shortest_message_json() {
        let empty = UIMessage {
            id: String::new(),
            role: crate::protocol::Role::User,
            metadata: None,
            parts: Vec::new(),
        };
        let json = serde_json::to_string(&empty).unwrap_or_default();
        assert_eq!(json, SHORTEST_MESSAGE_JSON);
    }

    #[test]
    fn a_stored_body_s_role_span_names_its_role_whatever_its_id_holds() {
        for id in ["a1", r#"x","role":"user"#, "\\\u{7}", "ünï \"quoted\""] {
            for role in [Role::User, Role::Assistant, Role::System] {
                let message = UIMessage {
                    id: id.to_string(),
                    role,
                    metadata: None,
                    parts: Vec::new(),
                };
                let body = serde_json::to_string(&message).unwrap_or_default();
                assert!(role_span(&body).chars().count() <= ROLE_SPAN);
                assert_eq!(role_in_span(role_span(&body)), Some(role), "{body}");
            }
        }
        assert_eq!(role_in_span(role_span(r#"{"id":"a","role":"#)), None);
        assert_eq!(role_in_span(role_span("not json")), None);
    }
}
