//! Raw response body bytes in, [`ModelEvent`]s out: the SSE parser and the
//! completion decoder chained, for adapters that just forward network chunks
//! (the provider's [`ResponseDecoder`]).

use super::CompletionDecoder;
use crate::model::sse::{SseEvent, SseParser};
use crate::model::{ModelError, ModelEvent, ModelFailure, ResponseDecoder};

/// Decodes a streamed Chat Completions response body of a 2xx response.
///
/// Call [`feed`](Self::feed) with each chunk as it arrives (any split is fine)
/// and [`finish`](Self::finish) once when the body ends. Stop at the first
/// `Err`. A successful stream ends with exactly one `ModelEvent::Finished`.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    parser: SseParser,
    decoder: CompletionDecoder,
    pending: Vec<SseEvent>,
}

impl StreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the next chunk of the body, appending events to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        self.parser.feed(bytes, &mut self.pending);
        self.decode_pending(out)
    }

    /// Ends the body: flushes the parser, then applies
    /// [`CompletionDecoder::finish`] (so a cut-off stream is `Truncated`).
    pub fn finish(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        self.parser.finish(&mut self.pending);
        self.decode_pending(out)?;
        self.decoder.finish(out)
    }

    /// True once `Finished` has been emitted; the rest of the body is moot.
    pub fn is_finished(&self) -> bool {
        self.decoder.is_finished()
    }

    fn decode_pending(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelError> {
        for event in self.pending.drain(..) {
            self.decoder.on_event(&event, out)?;
        }
        Ok(())
    }
}

/// Stream errors as failures: a cut-off stream or a provider error may go
/// through on a second try, an unreadable one will not.
impl ResponseDecoder for StreamDecoder {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure> {
        self.feed(bytes, out).map_err(ModelFailure::from)
    }

    fn end(&mut self, out: &mut Vec<ModelEvent>) -> Result<(), ModelFailure> {
        self.finish(out).map_err(ModelFailure::from)
    }

    fn is_finished(&self) -> bool {
        StreamDecoder::is_finished(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FinishReason, Usage};

    fn decode_in_chunks(
        body: &[u8],
        chunk_size: usize,
    ) -> (Vec<ModelEvent>, Result<(), ModelError>) {
        let mut stream = StreamDecoder::new();
        let mut out = Vec::new();
        for chunk in body.chunks(chunk_size) {
            if let Err(error) = stream.feed(chunk, &mut out) {
                return (out, Err(error));
            }
        }
        let result = stream.finish(&mut out);
        (out, result)
    }

    /// Joins text and per-index arguments so tests can ignore delta boundaries.
    fn text_and_arguments(events: &[ModelEvent]) -> (String, Vec<String>) {
        let mut text = String::new();
        let mut arguments: Vec<String> = Vec::new();
        for event in events {
            match event {
                ModelEvent::TextDelta(delta) => text.push_str(delta),
                ModelEvent::ToolCallStarted { index, .. } => {
                    assert_eq!(*index as usize, arguments.len());
                    arguments.push(String::new());
                }
                ModelEvent::ToolCallArgumentsDelta { index, delta } => {
                    arguments[*index as usize].push_str(delta)
                }
                _ => {}
            }
        }
        (text, arguments)
    }

    const TOOL_CALL_BODY: &str = concat!(
        ": OPENROUTER PROCESSING\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Grüße 🌍\"}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"note\",\"arguments\":\"{\\\"text\\\":\\\"naïve \"}}]}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"café ☕\\\"}\"}}]}}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\r\n\r\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":9}}\r\n\r\n",
        "data: [DONE]\r\n\r\n",
    );

    #[test]
    fn arguments_split_mid_utf8_and_mid_line_decode_identically_for_every_chunk_size() {
        for chunk_size in [1, 2, 3, 5, 7, 64, TOOL_CALL_BODY.len()] {
            let (events, result) = decode_in_chunks(TOOL_CALL_BODY.as_bytes(), chunk_size);
            assert_eq!(result, Ok(()), "chunk size {chunk_size}");
            let (text, arguments) = text_and_arguments(&events);
            assert_eq!(text, "Grüße 🌍");
            assert_eq!(arguments, vec![r#"{"text":"naïve café ☕"}"#.to_string()]);
            assert_eq!(
                events.last(),
                Some(&ModelEvent::Finished {
                    reason: FinishReason::ToolCalls,
                    usage: Some(Usage {
                        prompt_tokens: 7,
                        completion_tokens: 9,
                        cached_tokens: None,
                        cache_write_tokens: None,
                    }),
                })
            );
        }
    }

    #[test]
    fn body_cut_mid_event_is_truncated() {
        let cut = &TOOL_CALL_BODY.as_bytes()[..TOOL_CALL_BODY.len() / 2];
        let (_, result) = decode_in_chunks(cut, 10);
        assert_eq!(result, Err(ModelError::Truncated));
    }

    #[test]
    fn body_without_done_but_with_finish_reason_finishes() {
        let body =
            "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n";
        let (events, result) = decode_in_chunks(body.as_bytes(), 4);
        assert_eq!(result, Ok(()));
        assert_eq!(
            events,
            vec![
                ModelEvent::TextDelta("hi".into()),
                ModelEvent::Finished {
                    reason: FinishReason::Stop,
                    usage: None
                },
            ]
        );
    }

    #[test]
    fn error_object_mid_stream_stops_decoding() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"upstream died\"}}\n\n";
        let (events, result) = decode_in_chunks(body.as_bytes(), 3);
        assert_eq!(events, vec![ModelEvent::TextDelta("a".into())]);
        assert_eq!(result, Err(ModelError::Provider("upstream died".into())));
    }

    #[test]
    fn garbage_data_is_malformed() {
        let (_, result) = decode_in_chunks(b"data: <html>oops</html>\n\n", 8);
        assert!(matches!(result, Err(ModelError::Malformed(_))));
    }

    #[test]
    fn finished_flag_flips_on_done() {
        let mut stream = StreamDecoder::new();
        let mut out = Vec::new();
        stream
            .feed(
                b"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
                &mut out,
            )
            .expect("chunk decodes");
        assert!(!stream.is_finished());
        stream
            .feed(b"data: [DONE]\n\n", &mut out)
            .expect("done decodes");
        assert!(stream.is_finished());
    }
}
