//! Compaction: an agent's hook (`AgentDefinition::compact`) replaces what the
//! context policy leaves out with a summary. The summary is stored (config
//! row `summary`) with the place it covers up to, and reused by every step
//! after it; it is made again only when the messages kept after it no longer
//! fit the policy (bytes and messages), and then the hook sees the previous
//! summary and only the messages dropped since. A new cut keeps half of
//! each, so the hook runs about once per half a budget of new conversation,
//! not every turn.

use crate::model::ModelMessage;
use crate::protocol::{Role, UIMessage};

use crate::core::contract::history::{newest_first, PAGE};
use crate::core::data::context::model_messages;
use crate::core::data::context_window::estimated_bytes;
use crate::core::rows::persisted::{ConfigKey, Summary};
use crate::core::vocab::hooks::CompactionInput;
use crate::core::Core;

/// Said to the model before the summary.
pub fn summary_message(text: &str) -> ModelMessage {
    ModelMessage::System {
        content: format!("Summary of the earlier part of this conversation:\n{text}"),
    }
}

fn bytes_of(message: &UIMessage) -> usize {
    estimated_bytes(&model_messages("", &[message]))
}

impl Core {
    /// The step's conversation with a summary in place of what does not fit
    /// `budget`, when the agent has a compaction hook (else `None`: the
    /// context policy leaves messages out). `recent` are the window's
    /// messages of the step with their places, oldest first.
    pub(in crate::core) fn compacted_context(
        &mut self,
        system: &str,
        recent: &[(u64, UIMessage)],
        budget: usize,
    ) -> Option<Vec<ModelMessage>> {
        let hook = self.config.compact.clone()?;
        let max_messages = self.config.settings.context.max_messages;
        if (budget == 0 && max_messages == 0) || self.compaction.declined() {
            return None;
        }
        let from = self.compaction.summary().map_or(0, |s| s.through_seq);
        let system_bytes = estimated_bytes(&model_messages(system, &[]));
        let summary_bytes = self
            .compaction
            .summary()
            .map_or(0, |s| estimated_bytes(&[summary_message(&s.text)]));
        // Everything since the summary (window, then older pages back to it).
        let mut since: Vec<(u64, UIMessage)> = Vec::new();
        let window_start = self.transcript.window_start();
        let mut older: Vec<(u64, UIMessage)> = Vec::new();
        if self.transcript.has_older() && from < window_start {
            let history = self.transcript.history().clone();
            older = newest_first(&*history, window_start, PAGE)
                .take_while(|entry| entry.seq >= from)
                .map(|entry| (entry.seq, entry.message))
                .collect();
            older.reverse();
        }
        since.extend(older);
        since.extend(recent.iter().cloned());
        since.retain(|(seq, _)| *seq >= from);
        let sizes: Vec<usize> = since.iter().map(|(_, m)| bytes_of(m)).collect();
        let total: usize = sizes.iter().sum();
        let fits = (budget == 0 || system_bytes + summary_bytes + total <= budget)
            && (max_messages == 0 || since.len() <= max_messages);
        if fits {
            // The stored summary (if any) still covers what does not fit.
            let mut out = model_messages(system, &[]);
            if let Some(summary) = self.compaction.summary() {
                out.push(summary_message(&summary.text));
            }
            let kept: Vec<&UIMessage> = since.iter().map(|(_, m)| m).collect();
            out.extend(model_messages("", &kept));
            return Some(out);
        }
        // A new cut: the newest messages within half the budget (bytes and
        // messages), from a user message, never past the newest user message.
        let pinned = since.iter().rposition(|(_, m)| m.role == Role::User)?;
        let mut used: usize = sizes[pinned..].iter().sum();
        let mut cut = pinned;
        let admits = |bytes: usize, messages: usize| {
            (budget == 0 || bytes <= budget / 2)
                && (max_messages == 0 || messages <= max_messages / 2)
        };
        while cut > 0 && admits(used + sizes[cut - 1], since.len() - (cut - 1)) {
            cut -= 1;
            used += sizes[cut];
        }
        while cut < pinned && since[cut].1.role != Role::User {
            cut += 1;
        }
        if cut == 0 {
            return None;
        }
        let dropped: Vec<UIMessage> = since[..cut].iter().map(|(_, m)| m.clone()).collect();
        let previous = self.compaction.summary().map(|s| s.text.clone());
        let Some(text) = hook(&CompactionInput {
            previous: previous.as_deref(),
            dropped: &dropped,
        }) else {
            self.compaction.decline();
            return None;
        };
        let summary = Summary {
            through_seq: since[cut].0,
            text,
        };
        self.put_config(ConfigKey::Summary, &summary);
        let mut out = model_messages(system, &[]);
        out.push(summary_message(&summary.text));
        let kept: Vec<&UIMessage> = since[cut..].iter().map(|(_, m)| m).collect();
        out.extend(model_messages("", &kept));
        self.compaction.replace_summary(summary);
        Some(out)
    }
}
