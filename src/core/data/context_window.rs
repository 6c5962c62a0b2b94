//! The bounded model context: which part of a long conversation the model
//! sees. Messages are kept newest first within a byte budget (an estimate of
//! the prompt's size, about four bytes a token) and a number of messages
//! (where a long history is cut: `context_cut.rs`), a step's tool calls stay
//! with their results, and the system prompt and the newest user message
//! (with everything after it) are always kept. A window that leaves messages
//! out starts at a user message and says how many were left out.

use crate::model::ModelMessage;

/// Said to the model in place of what was left out.
pub fn omitted_note(count: usize) -> String {
    format!(
        "[{count} earlier messages of this conversation are not shown here to fit the model's context.]"
    )
}

/// The estimated size of a request's messages.
pub fn estimated_bytes(messages: &[ModelMessage]) -> usize {
    messages.iter().map(message_bytes).sum()
}

/// Keeps what fits in `max_bytes` (0 keeps everything); see the module header.
pub fn fit(messages: Vec<ModelMessage>, max_bytes: usize) -> Vec<ModelMessage> {
    fit_after(messages, max_bytes, 0).0
}

/// Like `fit`, for messages that follow `earlier` older ones already left
/// out (never read from the store): the note counts those too. Also returns
/// how many messages are left out in all (`earlier` included).
pub fn fit_after(
    messages: Vec<ModelMessage>,
    max_bytes: usize,
    earlier: usize,
) -> (Vec<ModelMessage>, usize) {
    if max_bytes == 0 || estimated_bytes(&messages) <= max_bytes {
        return (with_note(messages, earlier), earlier);
    }
    let system_len = usize::from(matches!(
        messages.first(),
        Some(ModelMessage::System { .. })
    ));
    let groups = groups(&messages, system_len);
    // The newest user message and everything after it are always kept.
    let pinned = groups
        .iter()
        .rposition(|g| matches!(messages[g.start], ModelMessage::User { .. }))
        .unwrap_or(groups.len().saturating_sub(1));
    let mut used: usize = messages[..system_len].iter().map(message_bytes).sum();
    used += groups[pinned..].iter().map(|g| g.bytes).sum::<usize>();
    let mut first = pinned;
    while first > 0 && used + groups[first - 1].bytes <= max_bytes {
        first -= 1;
        used += groups[first].bytes;
    }
    // Start the window at a user message where one is inside it.
    while first < pinned && !matches!(messages[groups[first].start], ModelMessage::User { .. }) {
        first += 1;
    }
    let Some(start) = groups.get(first).map(|g| g.start) else {
        return (with_note(messages, earlier), earlier);
    };
    let omitted = start - system_len;
    if omitted == 0 {
        return (with_note(messages, earlier), earlier);
    }
    let mut kept = Vec::with_capacity(messages.len() - omitted + 1);
    let mut all = messages.into_iter();
    kept.extend(all.by_ref().take(system_len));
    kept.push(ModelMessage::System {
        content: omitted_note(omitted + earlier),
    });
    kept.extend(all.skip(omitted));
    (kept, omitted + earlier)
}

/// `messages` behind a note that `earlier` messages are left out (none: as they are).
fn with_note(mut messages: Vec<ModelMessage>, earlier: usize) -> Vec<ModelMessage> {
    if earlier == 0 {
        return messages;
    }
    let at = usize::from(matches!(
        messages.first(),
        Some(ModelMessage::System { .. })
    ));
    messages.insert(
        at,
        ModelMessage::System {
            content: omitted_note(earlier),
        },
    );
    messages
}

/// A message with the tool results that answer it.
struct Group {
    start: usize,
    bytes: usize,
}

fn groups(messages: &[ModelMessage], from: usize) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (index, message) in messages.iter().enumerate().skip(from) {
        let bytes = message_bytes(message);
        match (message, out.last_mut()) {
            (ModelMessage::Tool { .. }, Some(group)) => group.bytes += bytes,
            _ => out.push(Group {
                start: index,
                bytes,
            }),
        }
    }
    out
}

fn message_bytes(message: &ModelMessage) -> usize {
    const OVERHEAD: usize = 16;
    OVERHEAD
        + match message {
            ModelMessage::System { content } => content.len(),
            ModelMessage::User { content, files } => {
                content.len() + files.iter().map(|f| f.url.len()).sum::<usize>()
            }
            ModelMessage::Assistant {
                content,
                tool_calls,
            } => {
                content.as_ref().map_or(0, String::len)
                    + tool_calls
                        .iter()
                        .map(|c| OVERHEAD + c.id.len() + c.name.len() + c.arguments.len())
                        .sum::<usize>()
            }
            ModelMessage::Tool {
                tool_call_id,
                content,
            } => tool_call_id.len() + content.len(),
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelToolCall;

    fn user(text: &str) -> ModelMessage {
        ModelMessage::User {
            content: text.into(),
            files: Vec::new(),
        }
    }

    fn answer(text: &str) -> ModelMessage {
        ModelMessage::Assistant {
            content: Some(text.into()),
            tool_calls: vec![],
        }
    }

    fn call(id: &str) -> ModelMessage {
        ModelMessage::Assistant {
            content: None,
            tool_calls: vec![ModelToolCall {
                id: id.into(),
                name: "get_weather".into(),
                arguments: "{}".into(),
            }],
        }
    }

    fn result(id: &str) -> ModelMessage {
        ModelMessage::Tool {
            tool_call_id: id.into(),
            content: "x".repeat(100),
        }
    }

    fn system() -> ModelMessage {
        ModelMessage::System {
            content: "be brief".into(),
        }
    }

    fn conversation(turns: usize) -> Vec<ModelMessage> {
        let mut messages = vec![system()];
        for i in 0..turns {
            messages.push(user(&format!("question {i} {}", "q".repeat(100))));
            messages.push(answer(&format!("answer {i} {}", "a".repeat(100))));
        }
        messages
    }

    #[test]
    fn a_conversation_within_the_budget_is_sent_whole() {
        let messages = conversation(5);
        assert_eq!(fit(messages.clone(), 100_000), messages);
        assert_eq!(fit(messages.clone(), 0), messages, "0 means no bound");
    }

    #[test]
    fn the_newest_messages_are_kept_within_the_budget_behind_the_system_prompt() {
        let messages = conversation(100);
        let budget = 2_000;
        let kept = fit(messages.clone(), budget);
        assert!(
            estimated_bytes(&kept) <= budget + 200,
            "{}",
            estimated_bytes(&kept)
        );
        assert_eq!(kept[0], system());
        assert!(
            matches!(&kept[1], ModelMessage::System { content } if content.contains("earlier messages"))
        );
        assert!(
            matches!(kept[2], ModelMessage::User { .. }),
            "the window starts at a user message"
        );
        assert_eq!(kept.last(), messages.last());
        let omitted = messages.len() - (kept.len() - 1);
        assert_eq!(
            kept[1],
            ModelMessage::System {
                content: omitted_note(omitted)
            }
        );
    }

    #[test]
    fn the_newest_user_message_and_what_follows_are_kept_whatever_their_size() {
        let mut messages = conversation(3);
        messages.push(user(&"huge ".repeat(10_000)));
        messages.push(call("c1"));
        messages.push(result("c1"));
        let kept = fit(messages.clone(), 1_000);
        assert_eq!(&kept[kept.len() - 3..], &messages[messages.len() - 3..]);
        assert_eq!(kept[0], system());
    }

    #[test]
    fn a_tool_call_is_never_separated_from_its_result() {
        let mut messages = vec![system()];
        for i in 0..40 {
            messages.push(user(&format!("q{i}")));
            messages.push(call(&format!("c{i}")));
            messages.push(result(&format!("c{i}")));
            messages.push(answer("done"));
        }
        for budget in [300, 700, 1_500, 4_000] {
            let kept = fit(messages.clone(), budget);
            for (i, message) in kept.iter().enumerate() {
                if let ModelMessage::Tool { tool_call_id, .. } = message {
                    let called = kept[..i].iter().any(|m| matches!(m,
                        ModelMessage::Assistant { tool_calls, .. } if tool_calls.iter().any(|c| &c.id == tool_call_id)));
                    assert!(
                        called,
                        "result {tool_call_id} kept without its call (budget {budget})"
                    );
                }
            }
        }
    }
}
