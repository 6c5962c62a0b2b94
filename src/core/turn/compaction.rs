//! Compaction: the agent's summarizer (`AgentDefinition::summarize`, run by
//! the host when `CoreConfig::summarize_by_host`) replaces what the context
//! policy leaves out with a summary. When a new cut is due the step asks the
//! host (`Effect::Summarize`) and waits for `Event::Summarized` before its
//! model call. The summary is stored (config row `summary`) with the place
//! it covers up to, and reused by every step after it; it is made again
//! only when the messages kept after it no longer fit the policy (bytes and
//! messages), and then the summarizer sees the previous summary and only
//! the messages dropped since. A new cut keeps half of each, so it runs
//! about once per half a budget of new conversation, not every turn.

use crate::model::ModelMessage;
use crate::protocol::{Role, UIMessage};

use crate::core::contract::effects::Effect;
use crate::core::contract::history::{newest_first, PAGE};
use crate::core::data::context::model_messages;
use crate::core::data::context_window::estimated_bytes;
use crate::core::rows::persisted::{ConfigKey, Summary};
use crate::core::turn::active::{StepRequest, TurnPhase};
use crate::core::vocab::hooks::SummaryRequest;
use crate::core::vocab::ids::CallId;
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

/// What compaction makes of a step's conversation.
enum Plan {
    /// It fits after the stored summary (if any): these messages.
    Fits(Vec<ModelMessage>),
    /// A new cut: `dropped` folds into a new summary covering up to
    /// `through_seq` (the newer messages follow it).
    Cut {
        dropped: Vec<UIMessage>,
        through_seq: u64,
    },
}

impl Core {
    /// The step's conversation with the stored summary in place of what
    /// does not fit `budget`, when the agent summarizes (else `None`: the
    /// context policy leaves messages out). `recent` are the window's
    /// messages of the step with their places, oldest first. A new cut was
    /// summarized before the step (`enter_summarizing`); one found here (a
    /// narrowed retry, or a declined summary) leaves messages out.
    pub(in crate::core::turn) fn compacted_context(
        &mut self,
        system: &str,
        recent: &[(u64, UIMessage)],
        budget: usize,
    ) -> Option<Vec<ModelMessage>> {
        match self.compaction_plan(system, recent, budget)? {
            Plan::Fits(messages) => Some(messages),
            Plan::Cut { .. } => None,
        }
    }

    /// Before a step's model call: when a new cut is due and the host
    /// summarizes, asks it (`Effect::Summarize`) and waits. Returns whether
    /// the step now waits.
    pub(in crate::core::turn) fn enter_summarizing(&mut self, request: &StepRequest) -> bool {
        if !self.config.summarize_by_host {
            return false;
        }
        let Some((system, recent)) = self.step_conversation() else {
            return false;
        };
        let Some(Plan::Cut {
            dropped,
            through_seq,
        }) = self.compaction_plan(&system, &recent, request.budget)
        else {
            return false;
        };
        let call = self.next_call_id();
        let previous = self.compaction.summary().map(|s| s.text.clone());
        let Some(active) = self.active.as_mut() else {
            return false;
        };
        active.phase = TurnPhase::Summarizing {
            call,
            request: request.clone(),
            through_seq,
        };
        self.effects.push(Effect::Summarize {
            call,
            request: SummaryRequest { previous, dropped },
        });
        true
    }

    /// The host's summary (or `None`: declined) for the step waiting on it:
    /// stored, then the step's model call is made (ignored when no step
    /// waits on `call`: its turn ended meanwhile).
    pub(in crate::core) fn on_summarized(&mut self, call: CallId, text: Option<String>) {
        let waiting = match self.active.as_ref().map(|a| &a.phase) {
            Some(TurnPhase::Summarizing {
                call: waiting,
                request,
                through_seq,
            }) if *waiting == call => Some((request.clone(), *through_seq)),
            _ => None,
        };
        let Some((request, through_seq)) = waiting else {
            return;
        };
        match text {
            Some(text) => {
                let summary = Summary { through_seq, text };
                self.put_config(ConfigKey::Summary, &summary);
                self.compaction.replace_summary(summary);
            }
            None => self.compaction.decline(),
        }
        self.enter_calling_model(request);
    }

    /// Whether the conversation since the stored summary fits `budget`
    /// (bytes and messages), and if not, where a new cut falls: the newest
    /// messages within half the budget, from a user message, never past the
    /// newest user message. `None`: nothing to compact (no bound, the hook
    /// declined, or no cut is possible).
    fn compaction_plan(
        &self,
        system: &str,
        recent: &[(u64, UIMessage)],
        budget: usize,
    ) -> Option<Plan> {
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
            return Some(Plan::Fits(out));
        }
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
        let through_seq = since[cut].0;
        since.truncate(cut);
        let dropped = since.into_iter().map(|(_, m)| m).collect();
        Some(Plan::Cut {
            dropped,
            through_seq,
        })
    }
}
