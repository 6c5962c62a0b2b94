//! What the providers reached over HTTP share: a service's base URL and API
//! key (shown in `Debug` only as set or not), the plan of one streamed JSON
//! `POST` with its headers in a fixed order, and how a refusal reads (its
//! text, retry hint and whether it says the prompt was too long).

use std::fmt;

use super::ai_gateway::metadata_header;
use super::openai::http_error_text;
use super::{CallPlan, HttpRequest, ModelFailure, ModelRequest};

/// A service at `base_url`, with an optional API key.
#[derive(Clone, PartialEq)]
pub(crate) struct HttpService {
    pub base_url: String,
    pub api_key: Option<String>,
}

impl HttpService {
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> HttpService {
        HttpService {
            base_url: base_url.into(),
            api_key,
        }
    }

    /// `Debug` of the provider `name`: its base URL and whether a key is
    /// set, never the key.
    pub fn debug_as(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

/// One streamed call: `body` posted to `url` as JSON, an event stream asked
/// for, then the provider's `own` headers (its key, its version), the AI
/// Gateway metadata and last the request's extra headers (a name there
/// replaces the provider's).
pub(crate) fn streaming_post(
    url: String,
    own: impl IntoIterator<Item = (String, String)>,
    request: &ModelRequest,
    body: String,
) -> CallPlan {
    let mut headers = vec![
        ("content-type".to_string(), "application/json".to_string()),
        ("accept".to_string(), "text/event-stream".to_string()),
    ];
    headers.extend(own);
    headers.extend(metadata_header(request));
    headers.extend(request.headers.iter().cloned());
    CallPlan::Http(HttpRequest { url, headers, body })
}

/// A refusal with `status` and `body`: transient for 408, 409, 429 and 5xx
/// with the `retry-after-ms` or `retry-after` hint, its text
/// [`http_error_text`]; a context overflow when `status` is one of
/// `overflow_statuses` and the body (case aside) holds one of
/// `overflow_phrases`.
pub(crate) fn http_refusal(
    status: u16,
    body: &str,
    header: &dyn Fn(&str) -> Option<String>,
    overflow_statuses: &[u16],
    overflow_phrases: &[&str],
) -> ModelFailure {
    let failure = ModelFailure::http(
        status,
        http_error_text(status, body),
        header("retry-after-ms").as_deref(),
        header("retry-after").as_deref(),
    );
    let lower = body.to_ascii_lowercase();
    let too_long = overflow_statuses.contains(&status)
        && overflow_phrases.iter().any(|phrase| lower.contains(phrase));
    match too_long {
        true => failure.overflowing_context(),
        false => failure,
    }
}
