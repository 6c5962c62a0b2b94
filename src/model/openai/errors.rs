//! The text a failed OpenAI-compatible call is reported with: the status
//! and the provider's own message, on one bounded line; and the endpoint's URL.
//! The body is read through the gate (`gate::MODEL_ERROR_BODY`; the host
//! reads no more than its bytes of it).

use crate::protocol::gate::{self, MODEL_ERROR_BODY};

/// Longest body excerpt kept in an HTTP error text, in characters.
const MAX_ERROR_BODY_CHARS: usize = 300;

/// `{base}/chat/completions`, tolerating surrounding whitespace and trailing
/// slashes on `base_url` (e.g. `http://127.0.0.1:8787/v1/`).
pub fn chat_completions_url(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim().trim_end_matches('/'))
}

/// A readable one-line description of a non-2xx response, such as
/// `429 Too Many Requests: rate limited`. Uses the JSON `error.message` (or a
/// top-level `message`) when present, else the trimmed body, capped in length.
pub fn http_error_text(status: u16, body: &str) -> String {
    let status_text = match reason_phrase(status) {
        Some(phrase) => format!("{status} {phrase}"),
        None => status.to_string(),
    };
    let detail = error_message_in_json(body).unwrap_or_else(|| body.to_string());
    let detail = one_line_excerpt(&detail, MAX_ERROR_BODY_CHARS);
    if detail.is_empty() {
        status_text
    } else {
        format!("{status_text}: {detail}")
    }
}

/// The human-readable message of an OpenAI-style error payload, if any:
/// `{"error": {"message": ..}}`, `{"error": "..."}` or `{"message": ..}`.
pub(super) fn error_message_in_json(body: &str) -> Option<String> {
    let value = gate::read_value(body, &MODEL_ERROR_BODY).ok()?;
    match value.get("error") {
        Some(error) => Some(describe_error_value(error)),
        None => value.get("message")?.as_str().map(str::to_string),
    }
}

/// Text for the value of an `error` field, whatever its shape.
pub(crate) fn describe_error_value(error: &serde_json::Value) -> String {
    if let Some(text) = error.as_str() {
        return text.to_string();
    }
    match error.get("message").and_then(|message| message.as_str()) {
        Some(message) => message.to_string(),
        None => error.to_string(),
    }
}

/// Collapses whitespace runs to single spaces and caps the length.
fn one_line_excerpt(text: &str, max_chars: usize) -> String {
    let mut excerpt = String::new();
    for (count, word) in text.split_whitespace().enumerate() {
        if count > 0 {
            excerpt.push(' ');
        }
        excerpt.push_str(word);
        if excerpt.chars().count() > max_chars {
            break;
        }
    }
    if excerpt.chars().count() > max_chars {
        let mut capped: String = excerpt.chars().take(max_chars).collect();
        capped.push('…');
        return capped;
    }
    excerpt
}

/// The reason phrase of an HTTP status the providers use.
pub(crate) fn reason_phrase(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_joins_base_with_and_without_trailing_slash() {
        let expected = "http://127.0.0.1:8787/v1/chat/completions";
        assert_eq!(chat_completions_url("http://127.0.0.1:8787/v1"), expected);
        assert_eq!(chat_completions_url("http://127.0.0.1:8787/v1/"), expected);
        assert_eq!(
            chat_completions_url(" http://127.0.0.1:8787/v1// "),
            expected
        );
    }

    #[test]
    fn http_error_uses_the_json_error_message() {
        let body = r#"{"error":{"message":"rate limited","type":"requests"}}"#;
        assert_eq!(
            http_error_text(429, body),
            "429 Too Many Requests: rate limited"
        );
    }

    #[test]
    fn http_error_accepts_string_and_top_level_messages() {
        assert_eq!(
            http_error_text(400, r#"{"error":"bad model"}"#),
            "400 Bad Request: bad model"
        );
        assert_eq!(
            http_error_text(404, r#"{"message":"no such route"}"#),
            "404 Not Found: no such route"
        );
    }

    #[test]
    fn http_error_falls_back_to_a_trimmed_one_line_body() {
        let text = http_error_text(502, "  <html>\n  upstream\tdown </html>\n");
        assert_eq!(text, "502 Bad Gateway: <html> upstream down </html>");
    }

    #[test]
    fn http_error_caps_long_bodies() {
        let body = "é".repeat(5000);
        let text = http_error_text(500, &body);
        assert!(text.starts_with("500 Internal Server Error: é"));
        assert!(text.ends_with('…'));
        assert!(text.chars().count() < MAX_ERROR_BODY_CHARS + 40);
    }

    #[test]
    fn http_error_with_empty_body_or_unknown_status_stays_readable() {
        assert_eq!(http_error_text(503, "  "), "503 Service Unavailable");
        assert_eq!(http_error_text(599, "odd"), "599: odd");
    }
}
