//! The deltas of one read of a model's body, joined: a read of a fast
//! stream carries many events at once (a 1,000-word reply arrives in about
//! 60 reads), and each delta handed on alone becomes its own frame to every
//! tab and its own row body in the chunk log. Runs that continue one another
//! (text after text, reasoning after reasoning, the arguments of one tool
//! call) become one event, up to `MAX_JOINED_BYTES`; nothing waits for what
//! has not arrived, so a slow stream's deltas pass as they came.

use super::ModelEvent;

/// The most bytes one joined delta grows to; a longer run is handed on in
/// pieces of about this size (a frame and a logged chunk stay small).
pub const MAX_JOINED_BYTES: usize = 16 * 1024;

/// Joins each run of continuing deltas in `events`, in place.
pub fn join_deltas(events: &mut Vec<ModelEvent>) {
    if events.len() < 2 {
        return;
    }
    let mut joined: Vec<ModelEvent> = Vec::with_capacity(events.len());
    for event in events.drain(..) {
        let rest = match joined.last_mut() {
            Some(run) => append(run, event),
            None => Some(event),
        };
        if let Some(event) = rest {
            joined.push(event);
        }
    }
    *events = joined;
}

/// Appends `next` to `run` when it continues it (and `run` has room);
/// otherwise gives `next` back.
fn append(run: &mut ModelEvent, next: ModelEvent) -> Option<ModelEvent> {
    let room = |text: &String, more: &String| text.len() + more.len() <= MAX_JOINED_BYTES;
    match (run, next) {
        (ModelEvent::TextDelta(text), ModelEvent::TextDelta(more))
        | (ModelEvent::ReasoningDelta(text), ModelEvent::ReasoningDelta(more))
            if room(text, &more) =>
        {
            text.push_str(&more);
            None
        }
        (
            ModelEvent::ToolCallArgumentsDelta { index, delta },
            ModelEvent::ToolCallArgumentsDelta {
                index: next_index,
                delta: more,
            },
        ) if *index == next_index && room(delta, &more) => {
            delta.push_str(&more);
            None
        }
        (_, next) => Some(next),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinishReason;

    fn text(s: &str) -> ModelEvent {
        ModelEvent::TextDelta(s.to_string())
    }

    fn arguments(index: u32, s: &str) -> ModelEvent {
        ModelEvent::ToolCallArgumentsDelta {
            index,
            delta: s.to_string(),
        }
    }

    #[test]
    fn a_run_of_text_becomes_one_delta_and_other_events_keep_their_place() {
        let mut events = vec![
            ModelEvent::ReasoningDelta("think ".into()),
            ModelEvent::ReasoningDelta("hard".into()),
            text("Hello"),
            text(", "),
            text("world"),
            ModelEvent::ToolCallStarted {
                index: 0,
                id: "c1".into(),
                name: "f".into(),
            },
            arguments(0, "{\"a\""),
            arguments(0, ":1}"),
            arguments(1, "{}"),
            ModelEvent::Finished {
                reason: FinishReason::ToolCalls,
                usage: None,
            },
        ];
        join_deltas(&mut events);
        assert_eq!(
            events,
            vec![
                ModelEvent::ReasoningDelta("think hard".into()),
                text("Hello, world"),
                ModelEvent::ToolCallStarted {
                    index: 0,
                    id: "c1".into(),
                    name: "f".into(),
                },
                arguments(0, "{\"a\":1}"),
                arguments(1, "{}"),
                ModelEvent::Finished {
                    reason: FinishReason::ToolCalls,
                    usage: None,
                },
            ]
        );
    }

    #[test]
    fn text_separated_by_reasoning_is_not_joined_across_it() {
        let mut events = vec![text("a"), ModelEvent::ReasoningDelta("r".into()), text("b")];
        let before = events.clone();
        join_deltas(&mut events);
        assert_eq!(events, before);
    }

    #[test]
    fn a_joined_delta_stops_growing_at_its_bound_and_loses_nothing() {
        let word = "x".repeat(1000);
        let mut events: Vec<ModelEvent> = (0..40).map(|_| text(&word)).collect();
        join_deltas(&mut events);
        let sizes: Vec<usize> = events
            .iter()
            .map(|e| match e {
                ModelEvent::TextDelta(t) => t.len(),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert!(sizes.iter().all(|&n| n <= MAX_JOINED_BYTES), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 40 * 1000);
        assert_eq!(sizes.len(), 3);
    }
}
