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

use super::http_service::{http_refusal, streaming_post, HttpService};
use super::{CallPlan, ModelFailure, ModelProvider, ModelRequest, ResponseDecoder};

/// Where the Messages API lives unless `ANTHROPIC_BASE_URL` says otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The API version every request names.
pub const API_VERSION: &str = "2023-06-01";

/// The Messages API at `base_url`, with an API key.
#[derive(Clone, PartialEq)]
pub struct AnthropicMessages {
    service: HttpService,
}

/// Shows whether a key is set, never the key.
impl fmt::Debug for AnthropicMessages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.service.debug_as("AnthropicMessages", f)
    }
}

impl AnthropicMessages {
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Self {
        AnthropicMessages {
            service: HttpService::new(base_url, api_key),
        }
    }

    /// `{base}/messages`, tolerating whitespace and trailing slashes.
    pub fn url(&self) -> String {
        let base = &self.service.base_url;
        format!("{}/messages", base.trim().trim_end_matches('/'))
    }
}

impl ModelProvider for AnthropicMessages {
    fn plan(&self, request: &ModelRequest) -> CallPlan {
        let version = ("anthropic-version".to_string(), API_VERSION.to_string());
        let key = (self.service.api_key.as_ref()).map(|key| ("x-api-key".to_string(), key.clone()));
        let own = std::iter::once(version).chain(key);
        streaming_post(self.url(), own, request, request_body(request))
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
        let too_long = ["prompt is too long", "context window", "too many tokens"];
        http_refusal(status, body, header, &[400, 413], &too_long)
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
