//! Why a model call failed as the agent loop sees it: a readable text for the
//! tabs and whether asking again may help (rate limits, overload, network
//! trouble), with the provider's own `Retry-After` hint when it gave one.

/// Longest wait a provider's `Retry-After` may ask for before we give up instead.
pub const MAX_RETRY_AFTER_MS: u64 = 60_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelFailure {
    /// One readable line, shown to the tabs if the turn fails on it.
    pub text: String,
    /// A later identical request may succeed.
    pub transient: bool,
    /// How long the provider asked us to wait, in milliseconds.
    pub retry_after_ms: Option<u64>,
    /// The provider refused the request as longer than the model's context:
    /// the same request with fewer messages may go through.
    pub context_overflow: bool,
    /// The stream broke off (the connection dropped, or it ended without the
    /// provider saying it was done) rather than the provider stating an error:
    /// what it sent so far stands, and the answer can be continued.
    pub cut: bool,
    /// The HTTP status the provider answered with, for a non-2xx answer.
    pub status: Option<u16>,
}

impl ModelFailure {
    /// A failure that asking again will not fix (bad request, auth, no model configured).
    pub fn permanent(text: impl Into<String>) -> Self {
        ModelFailure {
            text: text.into(),
            transient: false,
            retry_after_ms: None,
            context_overflow: false,
            cut: false,
            status: None,
        }
    }

    /// A failure of the connection or the stream that may not happen again.
    pub fn transient(text: impl Into<String>) -> Self {
        ModelFailure {
            text: text.into(),
            transient: true,
            retry_after_ms: None,
            context_overflow: false,
            cut: false,
            status: None,
        }
    }

    /// A non-2xx answer: transient for 408, 409, 429 and 5xx (what OpenAI-compatible
    /// providers use for timeouts, conflicts, rate limits and overload).
    /// `retry_after_ms` / `retry_after` are the raw `retry-after-ms` and
    /// `retry-after` header values.
    pub fn http(
        status: u16,
        text: impl Into<String>,
        retry_after_ms: Option<&str>,
        retry_after: Option<&str>,
    ) -> Self {
        let hint = retry_after_ms
            .and_then(|v| v.trim().parse::<f64>().ok())
            .or_else(|| {
                retry_after
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .map(|s| s * 1000.0)
            })
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| ms.ceil() as u64);
        ModelFailure {
            text: text.into(),
            transient: is_transient_status(status),
            retry_after_ms: hint,
            context_overflow: false,
            cut: false,
            status: Some(status),
        }
    }

    /// A stream that broke off: transient, and continuable (see `cut`).
    pub fn cut_off(text: impl Into<String>) -> Self {
        ModelFailure {
            cut: true,
            ..ModelFailure::transient(text)
        }
    }

    /// Marks the failure as a context overflow (see `context_overflow`).
    pub fn overflowing_context(mut self) -> Self {
        self.context_overflow = true;
        self
    }
}

impl ModelFailure {
    /// What the failure says without the provider's own words (which may
    /// name internal hosts or echo a masked key): its status class, for the
    /// tabs and storage; the full text goes to the agent's log only.
    pub fn status_class(&self) -> String {
        if let Some(status) = self.status {
            let phrase = super::openai::errors::reason_phrase(status)
                .map(|p| format!(" {p}"))
                .unwrap_or_default();
            let overflow = match self.context_overflow {
                true => " (the request is too long for the model)",
                false => "",
            };
            return format!("The model provider answered {status}{phrase}{overflow}.");
        }
        match (self.cut, self.transient) {
            (true, _) => "The model stream broke off.".into(),
            (false, true) => "The model provider failed or could not be reached.".into(),
            (false, false) => "The model call failed.".into(),
        }
    }
}

/// A stream that broke off or carried a provider error may go through on a
/// second try; one we could not parse will not.
impl From<super::ModelError> for ModelFailure {
    fn from(error: super::ModelError) -> Self {
        let text = error.to_string();
        match error {
            super::ModelError::Provider(_) => ModelFailure::transient(text),
            super::ModelError::Truncated => ModelFailure::cut_off(text),
            super::ModelError::Malformed(_) => ModelFailure::permanent(text),
        }
    }
}

/// Statuses worth a retry.
fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_and_overload_are_transient_client_errors_are_not() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(
                ModelFailure::http(status, "x", None, None).transient,
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(
                !ModelFailure::http(status, "x", None, None).transient,
                "{status}"
            );
        }
    }

    #[test]
    fn the_status_class_leaves_the_providers_words_out() {
        let leaky = "401 Unauthorized: key sk-****abcd refused by gw.internal.corp:8443";
        let class = ModelFailure::http(401, leaky, None, None).status_class();
        assert_eq!(class, "The model provider answered 401 Unauthorized.");
        let overflow = ModelFailure::http(400, "too long: 9000 tokens", None, None)
            .overflowing_context()
            .status_class();
        assert!(overflow.starts_with("The model provider answered 400 Bad Request (the request"));
        for failure in [
            ModelFailure::transient("fetch to 10.0.0.7 failed"),
            ModelFailure::cut_off("reset by 10.0.0.7"),
            ModelFailure::permanent("secret detail"),
        ] {
            let class = failure.status_class();
            assert!(
                !class.contains("10.0.0.7") && !class.contains("secret"),
                "{class}"
            );
        }
    }

    #[test]
    fn retry_after_hints_are_read_in_milliseconds_first() {
        let f = ModelFailure::http(429, "x", Some("1500"), Some("9"));
        assert_eq!(f.retry_after_ms, Some(1500));
        let f = ModelFailure::http(429, "x", None, Some("2"));
        assert_eq!(f.retry_after_ms, Some(2000));
        let f = ModelFailure::http(429, "x", None, Some("0.25"));
        assert_eq!(f.retry_after_ms, Some(250));
        // An HTTP date or garbage is not understood: no hint, the backoff applies.
        let f = ModelFailure::http(
            503,
            "x",
            Some("soon"),
            Some("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(f.retry_after_ms, None);
        let f = ModelFailure::http(503, "x", None, Some("-3"));
        assert_eq!(f.retry_after_ms, None);
    }
}
