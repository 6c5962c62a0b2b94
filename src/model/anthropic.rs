//! Anthropic's Messages API (streaming), sans-I/O, as a [`ModelProvider`]:
//! where the request goes (`{base}/messages`), its headers (`x-api-key`,
//! `anthropic-version`), and how a refusal reads. The pieces of the
//! exchange live in submodules:
//!
//! * `anthropic/request.rs` builds the body: the system prompt as blocks,
//!   tool use and tool result blocks, images, and `cache_control`
//!   breakpoints on the stable start of the request;
//! * `anthropic/decoder.rs` turns the event stream (`message_start`,
//!   `content_block_*`, `message_delta`, `message_stop`) into
//!   [`ModelEvent`](super::ModelEvent)s, usage with cache reads and writes.

mod decoder;
mod request;

use std::fmt;

pub use decoder::MessagesDecoder;
pub use request::request_body;

use super::openai::http_error_text;
use super::{CallPlan, HttpRequest, ModelFailure, ModelProvider, ModelRequest, ResponseDecoder};

/// Where the Messages API lives unless `ANTHROPIC_BASE_URL` says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The API version every request names.
pub const API_VERSION: &str = "2023-06-01";

/// The Messages API at `base_url`, with an API key.
#[derive(Clone, PartialEq)]
pub struct AnthropicMessages {
    base_url: String,
    api_key: Option<String>,
}

/// Shows whether a key is set, never the key.
impl fmt::Debug for AnthropicMessages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicMessages")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

impl AnthropicMessages {
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        AnthropicMessages {
            base_url: base_url.into(),
            api_key,
        }
    }

    /// `{base}/messages`, tolerating whitespace and trailing slashes.
    pub fn url(&self) -> String {
        format!("{}/messages", self.base_url.trim().trim_end_matches('/'))
    }
}

impl ModelProvider for AnthropicMessages {
    fn plan(&self, request: &ModelRequest) -> CallPlan {
        let mut headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("accept".to_string(), "text/event-stream".to_string()),
            ("anthropic-version".to_string(), API_VERSION.to_string()),
        ];
        if let Some(key) = &self.api_key {
            headers.push(("x-api-key".to_string(), key.clone()));
        }
        if let Some(metadata) = super::ai_gateway::metadata_header(request) {
            headers.push(metadata);
        }
        headers.extend(request.headers.iter().cloned());
        CallPlan::Http(HttpRequest {
            url: self.url(),
            headers,
            body: request_body(request),
        })
    }

    fn decoder(&self) -> Box<dyn ResponseDecoder> {
        Box::new(MessagesDecoder::new())
    }

    /// Transient for 408, 409, 429 and 5xx (529: overloaded), with the
    /// `retry-after` hint; a prompt over the model's window is a context
    /// overflow.
    fn http_failure(
        &self,
        status: u16,
        body: &str,
        header: &dyn Fn(&str) -> Option<String>,
    ) -> ModelFailure {
        let failure = ModelFailure::http(
            status,
            http_error_text(status, body),
            header("retry-after-ms").as_deref(),
            header("retry-after").as_deref(),
        );
        let lower = body.to_ascii_lowercase();
        let too_long = ["prompt is too long", "context window", "too many tokens"]
            .iter()
            .any(|needle| lower.contains(needle));
        match matches!(status, 400 | 413) && too_long {
            true => failure.overflowing_context(),
            false => failure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_posts_to_messages_with_the_key_and_version_headers() {
        let provider = AnthropicMessages::new("http://127.0.0.1:9/v1/", Some("sk-ant".into()));
        let mut request = ModelRequest::user_text("claude-x", "hi");
        request.headers = vec![("x-extra".into(), "1".into())];
        let CallPlan::Http(http) = provider.plan(&request) else {
            panic!("an HTTP call");
        };
        assert_eq!(http.url, "http://127.0.0.1:9/v1/messages");
        let header = |name: &str| {
            http.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("x-api-key"), Some("sk-ant"));
        assert_eq!(header("anthropic-version"), Some(API_VERSION));
        assert_eq!(header("x-extra"), Some("1"));
        assert!(
            !format!("{http:?}").contains("sk-ant"),
            "the key is redacted"
        );
        assert!(!format!("{provider:?}").contains("sk-ant"));
    }

    #[test]
    fn overload_is_transient_and_a_long_prompt_is_an_overflow() {
        let provider = AnthropicMessages::new(DEFAULT_BASE_URL, None);
        let none = |_: &str| None;
        let overloaded = provider.http_failure(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            &none,
        );
        assert!(overloaded.transient);
        assert!(
            overloaded.text.ends_with("Overloaded"),
            "{}",
            overloaded.text
        );
        let long = provider.http_failure(
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            &none,
        );
        assert!(long.context_overflow && !long.transient);
    }
}
