//! An OpenAI-compatible Chat Completions service as a [`ModelProvider`]: where
//! the request goes (`{base}/chat/completions`), its headers (JSON in, an
//! event stream out, the API key as a bearer token), and how a refusal reads.

use std::fmt;

use super::{chat_completions_url, request_body, StreamDecoder};
use crate::model::http_service::{http_refusal, streaming_post, HttpService};
use crate::model::{CallPlan, ModelFailure, ModelProvider, ModelRequest, ResponseDecoder};

/// A service at `base_url` (e.g. `https://api.openai.com/v1`), with an
/// optional API key.
#[derive(Clone, PartialEq)]
pub struct OpenAiCompatible {
    service: HttpService,
}

/// Shows whether a key is set, never the key.
impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.service.debug_as("OpenAiCompatible", f)
    }
}

impl OpenAiCompatible {
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        OpenAiCompatible {
            service: HttpService::new(base_url, api_key),
        }
    }
}

/// OpenAI answers an over-long request with 400 and the error code
/// `context_length_exceeded`; compatible servers often only say so in the
/// message ("maximum context length", "context window").
const OVERFLOW_PHRASES: [&str; 3] = [
    "context_length_exceeded",
    "maximum context length",
    "context window",
];

impl ModelProvider for OpenAiCompatible {
    fn plan(&self, request: &ModelRequest) -> CallPlan {
        let key = self.service.api_key.as_ref();
        let own = key.map(|key| ("authorization".to_string(), format!("Bearer {key}")));
        let url = chat_completions_url(&self.service.base_url);
        streaming_post(url, own, request, request_body(request))
    }

    fn decoder(&self) -> Box<dyn ResponseDecoder> {
        Box::new(StreamDecoder::new())
    }

    /// Transient for 408, 409, 429 and 5xx, with the `retry-after-ms` or
    /// `retry-after` hint; the text is [`http_error_text`](super::http_error_text);
    /// a refusal of an over-long request is a context overflow.
    fn http_failure(
        &self,
        status: u16,
        body: &str,
        header: &dyn Fn(&str) -> Option<String>,
    ) -> ModelFailure {
        http_refusal(status, body, header, &[400, 413, 422], &OVERFLOW_PHRASES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FinishReason, HttpRequest, ModelEvent};

    fn request() -> ModelRequest {
        ModelRequest::user_text("m", "hi")
    }

    #[test]
    fn an_over_long_request_is_told_apart_from_other_bad_requests() {
        let provider = OpenAiCompatible::new("http://h/v1", None);
        let none = |_: &str| None;
        let overflow = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        let failure = provider.http_failure(400, overflow, &none);
        assert!(failure.context_overflow && !failure.transient);
        let other = provider.http_failure(400, r#"{"error":{"message":"bad tool schema"}}"#, &none);
        assert!(!other.context_overflow);
        let overloaded = provider.http_failure(503, "context window busy", &none);
        assert!(
            !overloaded.context_overflow,
            "only a refusal of the request counts"
        );
    }

    fn http(plan: CallPlan) -> HttpRequest {
        match plan {
            CallPlan::Http(http) => http,
            other => panic!("an HTTP call, not {other:?}"),
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn posts_the_body_to_chat_completions_with_the_key_as_bearer_token() {
        let provider = OpenAiCompatible::new("http://127.0.0.1:9/v1/", Some("sk-1".into()));
        let request = request();
        let http = http(provider.plan(&request));
        assert_eq!(http.url, "http://127.0.0.1:9/v1/chat/completions");
        assert_eq!(
            http.headers,
            pairs(&[
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
                ("authorization", "Bearer sk-1"),
            ])
        );
        assert_eq!(http.body, request_body(&request));
    }

    #[test]
    fn without_a_key_no_authorization_is_sent_and_extra_headers_come_last() {
        let provider = OpenAiCompatible::new("http://h/v1", None);
        let mut request = request();
        request.headers = pairs(&[("x-session", "s1"), ("accept", "text/plain")]);
        let http = http(provider.plan(&request));
        assert_eq!(
            http.headers,
            pairs(&[
                ("content-type", "application/json"),
                ("accept", "text/event-stream"),
                ("x-session", "s1"),
                ("accept", "text/plain"),
            ])
        );
    }

    #[test]
    fn debug_output_does_not_show_the_key() {
        let provider = OpenAiCompatible::new("http://h/v1", Some("sk-secret".into()));
        assert!(!format!("{provider:?}").contains("sk-secret"));
    }

    #[test]
    fn a_refusal_reads_its_error_message_and_retry_hint() {
        let provider = OpenAiCompatible::new("http://h/v1", None);
        let header = |name: &str| (name == "retry-after-ms").then(|| "1500".to_string());
        let failure =
            provider.http_failure(429, r#"{"error":{"message":"rate limited"}}"#, &header);
        assert_eq!(
            failure,
            ModelFailure {
                text: "429 Too Many Requests: rate limited".into(),
                transient: true,
                retry_after_ms: Some(1500),
                context_overflow: false,
                cut: false,
                status: Some(429),
            }
        );
        let failure = provider.http_failure(401, "bad key", &|_: &str| None);
        assert_eq!(
            failure,
            ModelFailure {
                status: Some(401),
                ..ModelFailure::permanent("401 Unauthorized: bad key")
            }
        );
    }

    #[test]
    fn its_decoder_reads_a_stream_and_reports_a_cut_one_as_cut_off() {
        let provider = OpenAiCompatible::new("http://h/v1", None);
        let mut decoder = provider.decoder();
        let mut events = Vec::new();
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        decoder.decode(body, &mut events).expect("decodes");
        assert!(decoder.is_finished());
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

        let mut decoder = provider.decoder();
        let mut events = Vec::new();
        decoder
            .decode(
                b"data: {\"choices\":[{\"delta\":{\"content\":\"h",
                &mut events,
            )
            .expect("a partial event waits for more");
        assert_eq!(
            decoder.end(&mut events),
            Err(ModelFailure::cut_off(
                "model stream ended before the reply was finished"
            ))
        );
    }
}
