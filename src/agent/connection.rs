//! One connected socket as the author's code sees it (`on_connect`,
//! `on_close`, `on_message`, callables): its id, a small per-connection
//! state (in a worker, kept in the socket's attachment so it survives
//! hibernation), and sending a frame of the author's own. The socket itself
//! is behind the narrow `ConnectionSocket` trait: the runtime's WebSocket
//! (`connection_socket.rs`) or the test kit's tab.

use std::rc::Rc;

use serde_json::Value;

/// The most bytes of JSON a connection's own state may take (the runtime
/// keeps at most 2 KiB per socket attachment, the connection id included).
pub const MAX_CONNECTION_STATE_BYTES: usize = 1536;

/// What a connection needs of its socket.
pub(crate) trait ConnectionSocket {
    /// The connection's own state, as JSON text.
    fn state_text(&self) -> Option<String>;
    /// Keeps (or, `None`, clears) the connection's own state.
    fn set_state_text(&self, text: Option<String>) -> Result<(), String>;
    /// Sends one text frame.
    fn send_text(&self, text: &str) -> Result<(), String>;
    /// Closes the socket.
    fn close(&self, code: u16, reason: &str);
}

/// A connected socket (see the module header). Clones are the same socket.
#[derive(Clone)]
pub struct Connection {
    id: String,
    socket: Rc<dyn ConnectionSocket>,
}

impl Connection {
    #[cfg_attr(
        not(any(target_arch = "wasm32", feature = "test-kit")),
        allow(dead_code)
    )]
    pub(crate) fn with_socket(id: &str, socket: Rc<dyn ConnectionSocket>) -> Connection {
        Connection {
            id: id.to_string(),
            socket,
        }
    }

    /// The connection's id (the client's `_pk`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// This connection's own state, if one was set.
    pub fn state(&self) -> Option<Value> {
        serde_json::from_str(&self.socket.state_text()?).ok()
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
        self.socket.set_state_text(text)
    }

    /// Sends a text frame of the author's own to this connection.
    pub fn send(&self, text: &str) -> Result<(), String> {
        self.socket.send_text(text)
    }

    /// Closes this connection.
    pub fn close(&self, code: u16, reason: &str) {
        self.socket.close(code, reason)
    }
}
