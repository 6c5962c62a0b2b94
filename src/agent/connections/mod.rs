//! One connected socket as the author's code sees it (`on_connect`,
//! `on_close`, `on_message`, callables, `AgentHandle::connections`): its
//! id, its tags (chosen when it connected), a small per-connection state
//! and its readonly flag (in a worker, kept on the socket so they survive
//! hibernation), and sending a frame of the author's own. The socket itself
//! is behind the narrow `ConnectionSocket` trait: the runtime's WebSocket
//! (`socket.rs`) or the test kit's tab.

#[cfg(target_arch = "wasm32")]
pub(crate) mod socket;

use std::rc::Rc;

use serde_json::Value;

/// The most bytes of JSON a connection's own state may take (the runtime
/// keeps at most 2 KiB per socket attachment, the connection id included).
pub const MAX_CONNECTION_STATE_BYTES: usize = 1536;

/// The most tags a connection may hold (the runtime's limit of ten per
/// hibernatable socket).
pub const MAX_CONNECTION_TAGS: usize = 10;

/// The longest tag, in bytes (the runtime's limit).
pub const MAX_TAG_BYTES: usize = 256;

/// `tags` as a socket may hold them: the first `MAX_CONNECTION_TAGS`
/// distinct non-empty tags of at most `MAX_TAG_BYTES`; the reason for each
/// one dropped. (Only a host sets tags: the worker's, or the test kit's.)
#[cfg_attr(
    not(any(target_arch = "wasm32", feature = "test-kit")),
    allow(dead_code)
)]
pub(crate) fn checked_tags(tags: Vec<String>) -> (Vec<String>, Vec<String>) {
    let mut kept: Vec<String> = Vec::new();
    let mut dropped = Vec::new();
    for tag in tags {
        if tag.is_empty() || tag.len() > MAX_TAG_BYTES {
            dropped.push(format!(
                "a connection tag must be 1 to {MAX_TAG_BYTES} bytes (got {})",
                tag.len()
            ));
        } else if kept.len() == MAX_CONNECTION_TAGS {
            dropped.push(format!(
                "a connection holds at most {MAX_CONNECTION_TAGS} tags"
            ));
        } else if !kept.contains(&tag) {
            kept.push(tag);
        }
    }
    (kept, dropped)
}

/// What a connection needs of its socket.
pub(crate) trait ConnectionSocket {
    /// The tags the connection was given when it connected.
    fn tags(&self) -> Vec<String>;
    /// Whether the connection is readonly.
    fn readonly(&self) -> bool;
    /// Makes the connection readonly, or writable again (kept on the socket).
    fn set_readonly(&self, readonly: bool) -> Result<(), String>;
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

    /// The tags it was given when it connected
    /// (`AgentDefinition::connection_tags`).
    pub fn tags(&self) -> Vec<String> {
        self.socket.tags()
    }

    /// Whether it is readonly (see [`Connection::set_readonly`]).
    pub fn is_readonly(&self) -> bool {
        self.socket.readonly()
    }

    /// Makes it readonly (or writable again), for the rest of its life,
    /// across hibernation: a readonly connection receives every stream and
    /// state frame, and what would change the agent (a chat request, a tool
    /// result or approval, a clear, a cancel, a state set, a callable not
    /// marked `readonly_safe`) is refused with the protocol's error frame
    /// (`Connection is readonly`); nothing changes.
    pub fn set_readonly(&self, readonly: bool) -> Result<(), String> {
        self.socket.set_readonly(readonly)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_kept_distinct_bounded_and_non_empty() {
        let mut tags: Vec<String> = (0..12).map(|n| format!("t{n}")).collect();
        tags.insert(0, String::new());
        tags.insert(1, "t0".into());
        tags.insert(2, "x".repeat(MAX_TAG_BYTES + 1));
        let (kept, dropped) = checked_tags(tags);
        assert_eq!(kept.len(), MAX_CONNECTION_TAGS);
        assert_eq!(kept[0], "t0");
        assert_eq!(dropped.len(), 4, "{dropped:?}");
    }
}
