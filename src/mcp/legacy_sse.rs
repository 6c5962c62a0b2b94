//! MCP's older HTTP+SSE transport (protocol 2024-11-05), for servers that
//! speak only that: the client opens a standing `GET` event stream, whose
//! first `endpoint` event names the URL it POSTs each message to; the
//! server answers the POST with a bare 2xx and sends the response on the
//! stream. Here: when to try it (a Streamable HTTP POST refused with 400,
//! 404 or 405, as the SDK clients do), the request that opens the stream,
//! the endpoint (resolved against the server URL, same origin only), a
//! message from the stream as the reply the session reads, and what one
//! standing stream may cost (`StreamBudget`: its bytes in all, its events
//! no larger than a reply, and no more than `STREAM_IDLE_MS` without an
//! event), past which it is closed and the server connected again.

use serde_json::Value;
use url::Url;

use super::jsonrpc::{McpError, McpReply, McpRequest};
use crate::protocol::gate::MCP_REPLY;

/// The most bytes one standing event stream carries; past them it is
/// closed (the next turn connects the server again).
pub const MAX_STREAM_BYTES: usize = 64 * 1024 * 1024;
/// The largest event of the stream (a bigger one is dropped unread).
pub const MAX_STREAM_EVENT_BYTES: usize = MCP_REPLY.max_bytes;
/// A standing stream that brings no event for this long (nothing, or a
/// byte now and then) is closed.
pub const STREAM_IDLE_MS: u64 = 5 * 60 * 1000;

/// What one standing stream has cost so far (see the module header).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamBudget {
    bytes: usize,
    last_event_ms: u64,
}

impl StreamBudget {
    /// A stream opened at `now_ms`.
    pub fn new(now_ms: u64) -> StreamBudget {
        StreamBudget {
            bytes: 0,
            last_event_ms: now_ms,
        }
    }

    /// Counts a chunk of `len` bytes; the stream is over its bytes past
    /// `MAX_STREAM_BYTES`.
    pub fn on_chunk(&mut self, len: usize) -> Result<(), McpError> {
        self.bytes = self.bytes.saturating_add(len);
        if self.bytes > MAX_STREAM_BYTES {
            return Err(McpError::OverBudget(format!(
                "the event stream passed {MAX_STREAM_BYTES} bytes"
            )));
        }
        Ok(())
    }

    /// An event arrived at `now_ms`.
    pub fn on_event(&mut self, now_ms: u64) {
        self.last_event_ms = self.last_event_ms.max(now_ms);
    }

    /// How long the stream may still go without an event (0: it is idle
    /// for good, `idle_error` says so).
    pub fn idle_left_ms(&self, now_ms: u64) -> u64 {
        STREAM_IDLE_MS.saturating_sub(now_ms.saturating_sub(self.last_event_ms))
    }

    pub fn idle_error() -> McpError {
        McpError::OverBudget(format!(
            "the event stream brought no event for {} s",
            STREAM_IDLE_MS / 1000
        ))
    }
}

/// Whether a failed Streamable HTTP exchange means the server may speak
/// only the older transport.
pub fn should_fall_back(error: &McpError) -> bool {
    matches!(
        error,
        McpError::Http {
            status: 400 | 404 | 405,
            ..
        }
    )
}

/// The `GET` that opens the event stream, with the author's headers.
pub fn open_stream(url: &str, headers: &[(String, String)]) -> McpRequest {
    let mut all = vec![("accept".to_string(), "text/event-stream".to_string())];
    all.extend(headers.iter().cloned());
    McpRequest {
        method: "GET",
        url: url.to_string(),
        headers: all,
        body: None,
        id: None,
    }
}

/// The URL messages are posted to, from the `endpoint` event's data.
pub fn endpoint(server_url: &str, data: &str) -> Result<String, McpError> {
    let base =
        Url::parse(server_url).map_err(|e| McpError::Malformed(format!("the server URL: {e}")))?;
    let url = base
        .join(data.trim())
        .map_err(|e| McpError::Malformed(format!("the endpoint event: {e}")))?;
    if url.origin() != base.origin() {
        return Err(McpError::Malformed(format!(
            "the endpoint event names another origin ({})",
            url.origin().ascii_serialization()
        )));
    }
    Ok(url.into())
}

/// A JSON-RPC response that came on the stream, as the reply to its POST.
pub fn reply_of(message: &Value) -> McpReply {
    McpReply {
        status: 200,
        content_type: Some("application/json".into()),
        body: message.to_string(),
        ..McpReply::default()
    }
}

/// The id a message from the stream answers (`None`: a notification or a
/// request from the server).
pub fn response_id(message: &Value) -> Option<u64> {
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").and_then(Value::as_u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_refusals_of_the_post_lead_to_the_older_transport() {
        let http = |status| McpError::Http {
            status,
            body: String::new(),
        };
        assert!(should_fall_back(&http(405)));
        assert!(should_fall_back(&http(404)));
        assert!(!should_fall_back(&http(500)));
        assert!(!should_fall_back(&McpError::Unauthorized {
            body: String::new(),
            challenge: None
        }));
    }

    #[test]
    fn the_endpoint_is_resolved_and_kept_to_the_servers_origin() {
        assert_eq!(
            endpoint("http://h:1/sse", "/messages?sessionId=a b").unwrap(),
            "http://h:1/messages?sessionId=a%20b"
        );
        assert!(endpoint("http://h:1/sse", "http://evil/x").is_err());
    }

    #[test]
    fn a_stream_is_over_budget_past_its_bytes_or_its_idle_time() {
        let mut budget = StreamBudget::new(1_000);
        assert!(budget.on_chunk(MAX_STREAM_BYTES - 10).is_ok());
        assert!(budget.on_chunk(10).is_ok());
        let over = budget.on_chunk(1).unwrap_err();
        assert!(over.to_string().contains("passed"), "{over}");

        let mut budget = StreamBudget::new(1_000);
        assert_eq!(budget.idle_left_ms(1_000), STREAM_IDLE_MS);
        // Bytes that make no event do not keep it open; an event does.
        budget.on_chunk(1).unwrap();
        assert_eq!(budget.idle_left_ms(1_000 + STREAM_IDLE_MS - 5), 5);
        budget.on_event(1_000 + STREAM_IDLE_MS - 5);
        assert_eq!(
            budget.idle_left_ms(1_000 + STREAM_IDLE_MS),
            STREAM_IDLE_MS - 5
        );
        assert_eq!(budget.idle_left_ms(u64::MAX), 0);
        assert!(StreamBudget::idle_error().to_string().contains("no event"));
    }

    #[test]
    fn stream_messages_are_matched_to_requests() {
        let response = json!({"jsonrpc":"2.0","id":4,"result":{}});
        assert_eq!(response_id(&response), Some(4));
        assert_eq!(
            response_id(&json!({"jsonrpc":"2.0","id":1,"method":"ping"})),
            None
        );
        assert_eq!(reply_of(&response).body, response.to_string());
    }
}
