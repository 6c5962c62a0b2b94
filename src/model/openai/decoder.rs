//! Decodes the `data:` chunks of a streamed Chat Completion into
//! provider-neutral [`ModelEvent`]s, and decides how the stream ended.
//! Each chunk is read through the gate (`gate::MODEL_EVENT`): its values and
//! nesting are counted before any of it is built.

use super::errors::{describe_error_value, error_message_in_json};
use super::tool_calls::ToolCallAssembler;
use super::wire::{content_text, finish_reason_from_wire, non_empty_string, ChunkWire, DeltaWire};
use crate::model::sse::SseEvent;
use crate::model::{FinishReason, ModelError, ModelEvent, Usage};
use crate::protocol::gate::{self, MODEL_EVENT};

/// Longest excerpt of offending stream data quoted in an error, in characters.
const MAX_QUOTED_DATA_CHARS: usize = 120;

/// Turns SSE events of one Chat Completions stream into [`ModelEvent`]s.
///
/// Call [`on_event`](Self::on_event) for every SSE event, then
/// [`finish`](Self::finish) once at the end of the body. Stop at the first
/// `Err`: the stream is unusable after it. `Finished` is emitted exactly once,
/// on `[DONE]` or from `finish`; events after it are ignored.
#[derive(Debug, Default)]
pub struct CompletionDecoder {
    tool_calls: ToolCallAssembler,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
    finished: bool,
}

impl CompletionDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// True once `Finished` has been emitted.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Decodes one SSE event. Events named anything other than `message` or
    /// `error` are ignored; an `error` event or an `error` object in a chunk is
    /// a [`ModelError::Provider`]; undecodable data is [`ModelError::Malformed`].
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if self.finished {
            return Ok(());
        }
        if event.is_oversized() {
            return Err(ModelError::Malformed(
                "a stream event exceeded the size limit".into(),
            ));
        }
        let data = event.data.trim();
        match event.event.as_deref() {
            None | Some("message") => {}
            Some("error") => return Err(ModelError::Provider(error_event_text(data))),
            Some(_) => return Ok(()),
        }
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.emit_finished(out);
            return Ok(());
        }
        let chunk: ChunkWire = gate::read_json(data, &MODEL_EVENT)
            .map_err(|e| ModelError::Malformed(format!("{e} in chunk {}", quote(data))))?;
        self.apply_chunk(chunk, out)
    }

    /// Ends the stream. Emits `Finished` if the provider reported a finish
    /// reason but the body ended without `[DONE]`; if it reported neither, the
    /// reply was cut off and this is [`ModelError::Truncated`].
    pub fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        if self.finished {
            return Ok(());
        }
        if self.finish_reason.is_none() {
            return Err(ModelError::Truncated);
        }
        self.emit_finished(out);
        Ok(())
    }

    fn apply_chunk(
        &mut self,
        chunk: ChunkWire,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            return Err(ModelError::Provider(describe_error_value(&error)));
        }
        if let Some(choice) = chunk.choices.and_then(|choices| choices.into_iter().next()) {
            if let Some(delta) = choice.delta {
                self.apply_delta(delta, out)?;
            }
            if let Some(reason) = choice.finish_reason.as_deref() {
                self.finish_reason = Some(finish_reason_from_wire(reason));
            }
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into_usage());
        }
        Ok(())
    }

    fn apply_delta(
        &mut self,
        delta: DeltaWire,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let reasoning =
            non_empty_string(delta.reasoning_content).or_else(|| non_empty_string(delta.reasoning));
        if let Some(reasoning) = reasoning {
            out.push(ModelEvent::ReasoningDelta(reasoning));
        }
        if let Some(text) = delta.content.and_then(content_text) {
            out.push(ModelEvent::TextDelta(text));
        }
        for (position, call) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
            self.tool_calls.apply(position, call.into_fragment(), out)?;
        }
        Ok(())
    }

    fn emit_finished(&mut self, out: &mut Vec<ModelEvent>) {
        self.tool_calls.start_nameless(out);
        out.push(ModelEvent::Finished {
            reason: self.resolved_finish_reason(),
            usage: self.usage,
        });
        self.finished = true;
    }

    /// The provider's reason, except that a reply with tool calls which
    /// "stopped" normally (or gave no/odd reason) ended for `ToolCalls`.
    /// `Length` and `ContentFilter` are kept: those arguments may be cut off.
    fn resolved_finish_reason(&self) -> FinishReason {
        let reported = self.finish_reason.unwrap_or(FinishReason::Stop);
        match reported {
            FinishReason::Stop | FinishReason::Other if self.tool_calls.any() => {
                FinishReason::ToolCalls
            }
            other => other,
        }
    }
}

fn error_event_text(data: &str) -> String {
    match error_message_in_json(data) {
        Some(message) => message,
        None if data.is_empty() => "the provider sent an error event".into(),
        None => quote(data),
    }
}

fn quote(data: &str) -> String {
    let mut excerpt: String = data.chars().take(MAX_QUOTED_DATA_CHARS).collect();
    if excerpt.len() < data.len() {
        excerpt.push('…');
    }
    format!("`{excerpt}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(text: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: text.to_string(),
        }
    }

    /// Feeds `data:` payloads, then finishes; returns events and the end result.
    fn decode(payloads: &[&str]) -> (Vec<ModelEvent>, Result<(), ModelError>) {
        let mut decoder = CompletionDecoder::new();
        let mut out = Vec::new();
        for payload in payloads {
            if let Err(error) = decoder.on_event(&data(payload), &mut out) {
                return (out, Err(error));
            }
        }
        let result = decoder.finish(&mut out);
        (out, result)
    }

    fn chunk(delta: &str, finish_reason: &str) -> String {
        format!(
            r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish_reason}}}]}}"#
        )
    }

    fn finished(reason: FinishReason, usage: Option<Usage>) -> ModelEvent {
        ModelEvent::Finished { reason, usage }
    }

    fn started(index: u32, id: &str, name: &str) -> ModelEvent {
        let (id, name) = (id.to_string(), name.to_string());
        ModelEvent::ToolCallStarted { index, id, name }
    }

    fn args(index: u32, delta: &str) -> ModelEvent {
        let delta = delta.to_string();
        ModelEvent::ToolCallArgumentsDelta { index, delta }
    }

    #[test]
    fn text_streams_as_deltas_and_skips_empty_and_role_only_chunks() {
        let (events, result) = decode(&[
            &chunk(r#"{"role":"assistant","content":""}"#, "null"),
            &chunk(r#"{"content":"Hel"}"#, "null"),
            &chunk(r#"{"content":"lo"}"#, "null"),
            &chunk(r#"{}"#, r#""stop""#),
            "[DONE]",
        ]);
        assert_eq!(result, Ok(()));
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("Hel".into()),
                ModelEvent::TextDelta("lo".into()),
                finished(FinishReason::Stop, None),
            ]
        );
    }

    #[test]
    fn reasoning_arrives_under_either_field_name() {
        let (events, _) = decode(&[
            &chunk(r#"{"reasoning_content":"think"}"#, "null"),
            &chunk(r#"{"reasoning":"ing","content":null}"#, "null"),
            &chunk(r#"{"reasoning_content":"a","reasoning":"a"}"#, "null"),
            &chunk(r#"{"content":"answer"}"#, r#""stop""#),
        ]);
        assert_eq!(
            events[..4],
            [
                ModelEvent::ReasoningDelta("think".into()),
                ModelEvent::ReasoningDelta("ing".into()),
                ModelEvent::ReasoningDelta("a".into()),
                ModelEvent::TextDelta("answer".into()),
            ]
        );
    }

    #[test]
    fn parallel_tool_calls_interleave_by_index() {
        let (events, result) = decode(&[
            &chunk(
                r#"{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"weather","arguments":""}}]}"#,
                "null",
            ),
            &chunk(
                r#"{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"time","arguments":"{\"tz\""}}]}"#,
                "null",
            ),
            &chunk(
                r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}"#,
                "null",
            ),
            &chunk(
                r#"{"tool_calls":[{"index":1,"function":{"arguments":":\"UTC\"}"}},{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}"#,
                "null",
            ),
            &chunk("{}", r#""tool_calls""#),
            "[DONE]",
        ]);
        assert_eq!(result, Ok(()));
        assert_eq!(
            events,
            vec![
                started(0, "call_a", "weather"),
                started(1, "call_b", "time"),
                args(1, "{\"tz\""),
                args(0, "{\"city\":"),
                args(1, ":\"UTC\"}"),
                args(0, "\"Oslo\"}"),
                finished(FinishReason::ToolCalls, None),
            ]
        );
    }

    #[test]
    fn tool_calls_with_a_stop_reason_finish_as_tool_calls() {
        let (events, _) = decode(&[&chunk(
            r#"{"tool_calls":[{"id":"x","function":{"name":"f","arguments":{"a":1}}}]}"#,
            r#""stop""#,
        )]);
        assert_eq!(
            events,
            vec![
                started(0, "x", "f"),
                args(0, r#"{"a":1}"#),
                finished(FinishReason::ToolCalls, None),
            ]
        );
    }

    #[test]
    fn tool_calls_cut_by_length_keep_the_length_reason() {
        let (events, _) = decode(&[&chunk(
            r#"{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{"}}]}"#,
            r#""length""#,
        )]);
        assert_eq!(events.last(), Some(&finished(FinishReason::Length, None)));
    }

    #[test]
    fn usage_only_final_chunk_is_reported_with_finished() {
        let (events, _) = decode(&[
            &chunk(r#"{"content":"hi"}"#, r#""stop""#),
            r#"{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#,
            "[DONE]",
        ]);
        let usage = Usage {
            prompt_tokens: 12,
            completion_tokens: 3,
            cached_tokens: None,
            cache_write_tokens: None,
        };
        assert_eq!(
            events.last(),
            Some(&finished(FinishReason::Stop, Some(usage)))
        );
    }

    #[test]
    fn cached_prompt_tokens_are_read_where_openai_reports_them() {
        let (events, _) = decode(&[
            &chunk(r#"{"content":"hi"}"#, r#""stop""#),
            r#"{"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":96}}}"#,
            "[DONE]",
        ]);
        let usage = Usage {
            prompt_tokens: 120,
            completion_tokens: 3,
            cached_tokens: Some(96),
            cache_write_tokens: None,
        };
        assert_eq!(
            events.last(),
            Some(&finished(FinishReason::Stop, Some(usage)))
        );
    }

    #[test]
    fn done_emits_finished_once_and_later_events_are_ignored() {
        let mut decoder = CompletionDecoder::new();
        let mut out = Vec::new();
        decoder
            .on_event(&data(&chunk("{}", r#""stop""#)), &mut out)
            .unwrap();
        decoder.on_event(&data("[DONE]"), &mut out).unwrap();
        decoder.on_event(&data("[DONE]"), &mut out).unwrap();
        decoder.on_event(&data("not json"), &mut out).unwrap();
        decoder.finish(&mut out).unwrap();
        assert!(decoder.is_finished());
        assert_eq!(out, vec![finished(FinishReason::Stop, None)]);
    }

    #[test]
    fn missing_done_after_a_finish_reason_still_finishes() {
        let (events, result) = decode(&[&chunk(r#"{"content":"ok"}"#, r#""content_filter""#)]);
        assert_eq!(result, Ok(()));
        assert_eq!(
            events.last(),
            Some(&finished(FinishReason::ContentFilter, None))
        );
    }

    #[test]
    fn stream_without_finish_reason_or_done_is_truncated() {
        let (events, result) = decode(&[&chunk(r#"{"content":"partial"}"#, "null")]);
        assert_eq!(events, vec![ModelEvent::TextDelta("partial".into())]);
        assert_eq!(result, Err(ModelError::Truncated));
    }

    #[test]
    fn error_object_in_the_stream_is_a_provider_error() {
        let (_, result) = decode(&[
            &chunk(r#"{"content":"a"}"#, "null"),
            r#"{"error":{"message":"overloaded","type":"server_error","code":529}}"#,
        ]);
        assert_eq!(result, Err(ModelError::Provider("overloaded".into())));
    }

    #[test]
    fn error_event_is_a_provider_error() {
        let mut decoder = CompletionDecoder::new();
        let event = SseEvent {
            event: Some("error".into()),
            data: r#"{"error":{"message":"quota exceeded"}}"#.into(),
        };
        let result = decoder.on_event(&event, &mut Vec::new());
        assert_eq!(result, Err(ModelError::Provider("quota exceeded".into())));
    }

    #[test]
    fn malformed_json_is_reported_with_an_excerpt() {
        let (_, result) = decode(&[r#"{"choices": [ {"delta": "#]);
        match result {
            Err(ModelError::Malformed(message)) => assert!(message.contains(r#"`{"choices""#)),
            other => panic!("expected Malformed, got {other:?}"),
        }
        let (_, result) = decode(&["42"]);
        assert!(matches!(result, Err(ModelError::Malformed(_))));
    }

    #[test]
    fn a_chunk_of_many_tiny_values_is_refused_before_it_is_built() {
        let tiny = format!(
            r#"{{"choices":[{{"delta":{{"content":[{}0]}}}}]}}"#,
            "0,".repeat(150_000)
        );
        let (_, result) = decode(&[tiny.as_str()]);
        match result {
            Err(ModelError::Malformed(message)) => {
                assert!(message.contains("too many JSON values"), "{message}")
            }
            other => panic!("expected Malformed, got {other:?}"),
        }
    }

    #[test]
    fn oversized_event_marker_is_malformed() {
        let marker = SseEvent {
            event: Some(crate::model::sse::OVERSIZED_EVENT_TYPE.into()),
            data: String::new(),
        };
        let result = CompletionDecoder::new().on_event(&marker, &mut Vec::new());
        assert!(matches!(result, Err(ModelError::Malformed(_))));
    }

    #[test]
    fn unknown_event_types_and_blank_data_are_ignored() {
        let mut decoder = CompletionDecoder::new();
        let mut out = Vec::new();
        let ping = SseEvent {
            event: Some("ping".into()),
            data: "{}".into(),
        };
        decoder.on_event(&ping, &mut out).unwrap();
        decoder.on_event(&data("  "), &mut out).unwrap();
        assert!(out.is_empty());
    }
}
