//! Where a step's model context starts in a long conversation: the newest
//! messages that fit the context policy (estimated bytes and a number of
//! messages), read back from the store past the in-memory window only as far
//! as they fit. The newest user message and everything after it are always
//! kept, a kept message keeps its tool calls with their results (a message is
//! kept or left out whole), and the window starts at a user message.
//!
//! The cut moves in steps of `CUT_STEP` messages: the number left out is
//! rounded up to a multiple of it. Between two steps every request of a
//! conversation starts with the same messages, so a provider that caches a
//! prompt by its prefix reuses it, where a cut that moved every turn would
//! change the prefix on every turn.

use crate::model::ModelMessage;
use crate::protocol::{Role, UIMessage};

use crate::core::data::context::{model_messages, push_model_messages};
use crate::core::data::context_window::estimated_bytes;
use crate::core::Core;

/// Older messages read per query for the model context (at most).
const CONTEXT_PAGE: usize = 256;

/// The cut moves by this many messages at a time.
pub(in crate::core) const CUT_STEP: usize = 16;

/// The bounds a step's context is cut to (0: no bound).
#[derive(Debug, Clone, Copy)]
pub(in crate::core) struct ContextBounds {
    pub(in crate::core) bytes: usize,
    pub(in crate::core) messages: usize,
}

impl ContextBounds {
    fn admit(&self, bytes: usize, messages: usize) -> bool {
        (self.bytes == 0 || bytes <= self.bytes)
            && (self.messages == 0 || messages <= self.messages)
    }
}

/// What a step's request carries of the conversation.
pub(in crate::core) struct ContextCut {
    /// The kept messages, converted (each message once), oldest first.
    pub(in crate::core) messages: Vec<ModelMessage>,
    /// How many messages are left out.
    pub(in crate::core) omitted: usize,
}

/// An older message read back: whether it is a user message, and what it becomes.
struct Read {
    user: bool,
    converted: Vec<ModelMessage>,
}

impl Core {
    /// The cut of a step's context: `recent` are the step's in-memory
    /// messages (oldest first), sent after `system`.
    pub(in crate::core::turn) fn cut_context(
        &self,
        system: &str,
        recent: &[&UIMessage],
        bounds: ContextBounds,
    ) -> ContextCut {
        let converted: Vec<Vec<ModelMessage>> = recent.iter().map(|m| convert(m)).collect();
        let bytes_of = |i: usize| estimated_bytes(&converted[i]);
        let pinned = recent
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(recent.len().saturating_sub(1));
        let mut used = estimated_bytes(&model_messages(system, &[]))
            + (pinned..recent.len()).map(bytes_of).sum::<usize>();
        let mut count = recent.len() - pinned;
        let mut recent_from = pinned;
        let mut fits = true;
        while recent_from > 0 {
            let bytes = bytes_of(recent_from - 1);
            if !bounds.admit(used + bytes, count + 1) {
                fits = false;
                break;
            }
            used += bytes;
            count += 1;
            recent_from -= 1;
        }
        // Newest first.
        let mut older: Vec<Read> = Vec::new();
        let has_older = self.transcript.has_older();
        let mut exhausted = !has_older;
        if fits && has_older {
            let history = self.transcript.history();
            let mut before = self.transcript.window_start();
            'pages: loop {
                let room = match bounds.messages {
                    0 => CONTEXT_PAGE,
                    max => max
                        .saturating_sub(count)
                        .saturating_add(1)
                        .min(CONTEXT_PAGE),
                };
                let page = history.page_before(before, room);
                let full = page.len() == room;
                for entry in page {
                    before = entry.seq;
                    let converted = convert(&entry.message);
                    let bytes = estimated_bytes(&converted);
                    if !bounds.admit(used + bytes, count + 1) {
                        fits = false;
                        break 'pages;
                    }
                    used += bytes;
                    count += 1;
                    older.push(Read {
                        user: entry.message.role == Role::User,
                        converted,
                    });
                }
                if !full {
                    exhausted = true;
                    break;
                }
            }
        }
        if fits && exhausted {
            return ContextCut {
                messages: kept(older, converted, 0),
                omitted: 0,
            };
        }
        // Cut: place the messages by their ordinal in the whole conversation.
        let older_total = if has_older {
            self.transcript.count_before_window().max(older.len())
        } else {
            0
        };
        let first_kept = older_total - older.len() + recent_from;
        let is_user = |ordinal: usize| match ordinal.checked_sub(older_total) {
            Some(i) => recent.get(i).is_some_and(|m| m.role == Role::User),
            None => older.get(older_total - 1 - ordinal).is_some_and(|r| r.user),
        };
        let last_start = older_total + pinned;
        let mut omitted = first_kept.div_ceil(CUT_STEP) * CUT_STEP;
        omitted = omitted.min(last_start);
        while omitted < last_start && !is_user(omitted) {
            omitted += 1;
        }
        let kept_older = older_total.saturating_sub(omitted).min(older.len());
        older.truncate(kept_older);
        let recent_from = omitted.saturating_sub(older_total).max(recent_from);
        ContextCut {
            messages: kept(older, converted, recent_from),
            omitted,
        }
    }
}

/// What one message becomes for the model.
fn convert(message: &UIMessage) -> Vec<ModelMessage> {
    let mut converted = Vec::new();
    push_model_messages(&mut converted, message);
    converted
}

/// The kept older messages (read newest first) and the in-memory ones from
/// `recent_from` on, oldest first.
fn kept(older: Vec<Read>, recent: Vec<Vec<ModelMessage>>, recent_from: usize) -> Vec<ModelMessage> {
    let older = older.into_iter().rev().flat_map(|r| r.converted);
    let recent = recent.into_iter().skip(recent_from).flatten();
    older.chain(recent).collect()
}
