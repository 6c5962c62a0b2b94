//! JSON-RPC 2.0 as MCP's Streamable HTTP transport carries it: the HTTP
//! request the host sends (`McpRequest`), the reply it hands back
//! (`McpReply`), and reading that reply — a JSON body or a
//! `text/event-stream` of messages — for the response to one request id,
//! noting the server's notifications seen on the way. Every message is
//! read through the gate (`gate::MCP_REPLY`: its values and nesting counted
//! before it is built). Every way it can fail is one `McpError` with text a
//! person (or the model) can read.

use serde_json::{json, Value};

use crate::model::sse::{SseEvent, SseParser};
use crate::protocol::gate::{self, GateError, MCP_REPLY};

/// The largest reply body the host reads (a bigger one is refused).
pub const MAX_REPLY_BYTES: usize = MCP_REPLY.max_bytes;

/// One HTTP request to an MCP server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpRequest {
    /// `POST` (a message, or an OAuth form), `GET` (a metadata document)
    /// or `DELETE` (ending the session).
    pub method: &'static str,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The JSON-RPC message (none for `DELETE`).
    pub body: Option<String>,
    /// The JSON-RPC id the reply must answer (`None`: a notification).
    pub id: Option<u64>,
}

/// What the server answered, as the host read it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpReply {
    pub status: u16,
    pub content_type: Option<String>,
    /// The `Mcp-Session-Id` header.
    pub session_id: Option<String>,
    /// The `WWW-Authenticate` header (of a 401).
    pub www_authenticate: Option<String>,
    pub body: String,
}

/// Why an exchange with an MCP server failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    /// The request did not get an answer (refused connection, DNS, reset).
    #[error("could not reach the server: {0}")]
    Unreachable(String),
    #[error("no answer within {0} ms")]
    Timeout(u64),
    /// A non-2xx status (a 404 for a known session is `SessionExpired`).
    #[error("HTTP {status}{}", if .body.is_empty() { String::new() } else { format!(": {}", .body) })]
    Http { status: u16, body: String },
    /// A 401: the server wants (other) credentials; `challenge` is its
    /// `WWW-Authenticate` header.
    #[error("HTTP 401{}", if .body.is_empty() { String::new() } else { format!(": {}", .body) })]
    Unauthorized {
        body: String,
        challenge: Option<String>,
    },
    /// The server no longer knows the session: initialize again.
    #[error("the server ended the session")]
    SessionExpired,
    /// A JSON-RPC error response.
    #[error("error {code}: {message}")]
    Rpc { code: i64, message: String },
    /// An answer that is not what the protocol says.
    #[error("unreadable answer: {0}")]
    Malformed(String),
    /// A secret (PKCE verifier, state nonce) could not be drawn from the
    /// platform's secure random source; no guessable one is used instead.
    #[error("{0}")]
    NoSecureRandom(String),
    /// A reply body over `MAX_REPLY_BYTES`.
    #[error("the answer is larger than {MAX_REPLY_BYTES} bytes")]
    TooLarge,
    /// A URL the outbound host policy refuses (`crate::outbound`): no
    /// request was made.
    #[error("{0}")]
    Refused(String),
    /// A message over its budget's values or nesting (or a stream past
    /// its bytes or idle time): refused before it was built.
    #[error("the answer was refused: {0}")]
    OverBudget(String),
}

impl McpError {
    /// Whether the server (or the network) is gone rather than refusing.
    pub fn is_transport(&self) -> bool {
        matches!(
            self,
            McpError::Unreachable(_) | McpError::Timeout(_) | McpError::SessionExpired
        ) || matches!(self, McpError::Http { status, .. } if *status >= 500)
    }
}

/// A JSON-RPC request body.
pub fn request_body(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A JSON-RPC notification body.
pub fn notification_body(method: &str) -> String {
    json!({"jsonrpc": "2.0", "method": method}).to_string()
}

/// What one reply said: the response to the request, if it had an id, and
/// the methods of the notifications that came with it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadReply {
    pub result: Option<Value>,
    pub notifications: Vec<String>,
}

/// Reads `reply` for the response to request `id` (`None`: a notification,
/// which only needs a 2xx). `had_session`: a 404 then means the session ended.
pub fn read_reply(
    reply: &McpReply,
    id: Option<u64>,
    had_session: bool,
) -> Result<ReadReply, McpError> {
    if reply.status == 404 && had_session {
        return Err(McpError::SessionExpired);
    }
    if reply.status == 401 {
        return Err(McpError::Unauthorized {
            body: snippet(&reply.body),
            challenge: reply.www_authenticate.clone(),
        });
    }
    if !(200..300).contains(&reply.status) {
        return Err(McpError::Http {
            status: reply.status,
            body: snippet(&reply.body),
        });
    }
    let Some(id) = id else {
        return Ok(ReadReply::default());
    };
    let is_sse = reply
        .content_type
        .as_deref()
        .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
    let messages: Vec<Value> = if is_sse {
        sse_messages(&reply.body)?
    } else {
        match read_message(&reply.body)? {
            Value::Array(batch) => batch,
            one => vec![one],
        }
    };
    let mut read = ReadReply::default();
    for mut message in messages {
        if message.get("id").is_none() {
            if let Some(method) = message.get("method").and_then(Value::as_str) {
                read.notifications.push(method.to_string());
            }
            continue;
        }
        if message.get("id").and_then(Value::as_u64) != Some(id) || message.get("method").is_some()
        {
            continue;
        }
        if let Some(error) = message.get("error") {
            return Err(McpError::Rpc {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                // The server's words, cut to their start (they reach the
                // tabs, the model and the log).
                message: snippet(
                    error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error"),
                ),
            });
        }
        // Taken, not copied: a result may be megabytes.
        read.result = Some(message.get_mut("result").map_or(Value::Null, Value::take));
        return Ok(read);
    }
    Err(McpError::Malformed(format!("no response to request {id}")))
}

/// The JSON messages of an event-stream body (events with no data, such as
/// a priming event, are skipped).
fn sse_messages(body: &str) -> Result<Vec<Value>, McpError> {
    let mut parser = SseParser::new();
    let mut events: Vec<SseEvent> = Vec::new();
    parser.feed(body.as_bytes(), &mut events);
    parser.finish(&mut events);
    let mut out = Vec::new();
    for event in events {
        if event.is_oversized() {
            return Err(McpError::TooLarge);
        }
        if event.data.trim().is_empty() {
            continue;
        }
        match read_message(&event.data)? {
            Value::Array(batch) => out.extend(batch),
            message => out.push(message),
        }
    }
    Ok(out)
}

/// One JSON-RPC message (or batch) from a server, read through the gate:
/// refused unbuilt when over `MCP_REPLY`.
pub fn read_message(text: &str) -> Result<Value, McpError> {
    gate::read_value(text, &MCP_REPLY).map_err(|e| match e {
        GateError::OverBudget(why) => McpError::OverBudget(why),
        GateError::Invalid(why) => McpError::Malformed(why),
    })
}

/// The start of a body, for an error text.
fn snippet(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &body[..at]),
        None => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(content_type: &str, body: &str) -> McpReply {
        McpReply {
            status: 200,
            content_type: Some(content_type.into()),
            session_id: None,
            www_authenticate: None,
            body: body.into(),
        }
    }

    #[test]
    fn a_json_body_answers_its_request() {
        let r = reply(
            "application/json",
            r#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#,
        );
        assert_eq!(
            read_reply(&r, Some(3), false).unwrap().result,
            Some(json!({"ok": true}))
        );
    }

    #[test]
    fn an_event_stream_is_read_past_notifications_to_the_response() {
        let body = "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n\
                    data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"tools\":[]}}\n\n";
        let read = read_reply(&reply("text/event-stream", body), Some(7), true).unwrap();
        assert_eq!(read.result, Some(json!({"tools": []})));
        assert_eq!(read.notifications, ["notifications/tools/list_changed"]);
    }

    #[test]
    fn an_error_response_is_an_rpc_error() {
        let r = reply(
            "application/json",
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Unknown tool"}}"#,
        );
        assert_eq!(
            read_reply(&r, Some(1), false),
            Err(McpError::Rpc {
                code: -32602,
                message: "Unknown tool".into()
            })
        );
    }

    #[test]
    fn a_404_for_a_known_session_means_it_ended() {
        let r = McpReply {
            status: 404,
            ..McpReply::default()
        };
        assert_eq!(read_reply(&r, Some(1), true), Err(McpError::SessionExpired));
        assert!(matches!(
            read_reply(&r, Some(1), false),
            Err(McpError::Http { status: 404, .. })
        ));
    }

    #[test]
    fn a_reply_of_many_tiny_values_is_refused_unbuilt_in_a_body_or_an_event() {
        let tiny = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}0]}}}}"#,
            "0,".repeat(150_000)
        );
        let refused = read_reply(&reply("application/json", &tiny), Some(1), false);
        assert!(
            matches!(&refused, Err(McpError::OverBudget(why)) if why.contains("too many JSON values")),
            "{refused:?}"
        );
        let event = format!("data: {tiny}\n\n");
        let refused = read_reply(&reply("text/event-stream", &event), Some(1), false);
        assert!(
            matches!(refused, Err(McpError::OverBudget(_))),
            "{refused:?}"
        );
    }

    #[test]
    fn a_reply_without_the_response_or_not_json_is_malformed() {
        let other = reply(
            "application/json",
            r#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        );
        assert!(matches!(
            read_reply(&other, Some(1), false),
            Err(McpError::Malformed(_))
        ));
        let html = reply("text/html", "<html>");
        assert!(matches!(
            read_reply(&html, Some(1), false),
            Err(McpError::Malformed(_))
        ));
    }
}
