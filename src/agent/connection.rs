//! One connected socket as the author's code sees it (`on_connect`,
//! `on_close`, `on_message`, callables): its id, a small per-connection
//! state kept in the socket's attachment (so it survives hibernation), and
//! sending a frame of the author's own. Also the attachment itself, which
//! the host reads to find a socket's connection after hibernation.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use worker::WebSocket;

/// The most bytes of JSON a connection's own state may take (the runtime
/// keeps at most 2 KiB per socket attachment, the connection id included).
pub const MAX_CONNECTION_STATE_BYTES: usize = 1536;

/// Per-socket metadata kept in the WebSocket attachment (survives hibernation).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Attachment {
    pub conn: String,
    /// A parent agent's `chat()` channel rather than a browser tab.
    #[serde(default)]
    pub channel: bool,
    /// The author's per-connection state, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The socket's close was handled (`on_close` ran): a later error or
    /// close event of the same socket is not handled again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub closed: bool,
}

/// A connected socket (see the module header). Clones are the same socket.
#[derive(Clone)]
pub struct Connection {
    id: String,
    ws: WebSocket,
}

impl Connection {
    pub(crate) fn new(id: &str, ws: WebSocket) -> Connection {
        Connection {
            id: id.to_string(),
            ws,
        }
    }

    /// The connection's id (the client's `_pk`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// This connection's own state, if one was set.
    pub fn state(&self) -> Option<Value> {
        let attachment = self.attachment()?;
        serde_json::from_str(attachment.state.as_deref()?).ok()
    }

    /// Replaces this connection's own state (kept across hibernation; at
    /// most `MAX_CONNECTION_STATE_BYTES` of JSON). `Value::Null` clears it.
    pub fn set_state(&self, state: Value) -> Result<(), String> {
        let text = match state {
            Value::Null => None,
            other => Some(other.to_string()),
        };
        if let Some(text) = &text {
            if text.len() > MAX_CONNECTION_STATE_BYTES {
                return Err(format!(
                    "connection state too large: {} bytes (limit {MAX_CONNECTION_STATE_BYTES})",
                    text.len()
                ));
            }
        }
        let mut attachment = self.attachment().unwrap_or_else(|| Attachment {
            conn: self.id.clone(),
            channel: false,
            state: None,
            closed: false,
        });
        attachment.state = text;
        self.ws
            .serialize_attachment(attachment)
            .map_err(|e| format!("could not keep the connection state: {e}"))
    }

    /// Sends a text frame of the author's own to this connection.
    pub fn send(&self, text: &str) -> Result<(), String> {
        self.ws.send_with_str(text).map_err(|e| e.to_string())
    }

    /// Closes this connection.
    pub fn close(&self, code: u16, reason: &str) {
        let _ = self.ws.close(Some(code), Some(reason));
    }

    fn attachment(&self) -> Option<Attachment> {
        self.ws.deserialize_attachment::<Attachment>().ok()?
    }
}
