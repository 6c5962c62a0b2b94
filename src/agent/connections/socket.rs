//! A connection's socket in a worker: the runtime's hibernatable WebSocket,
//! with the connection's own state and readonly flag in its attachment
//! (which the host also reads to find a socket's connection after
//! hibernation) and its tags as the runtime's socket tags.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use worker::WebSocket;

use crate::agent::connections::{Connection, ConnectionSocket};

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
    /// The connection is readonly (`Connection::set_readonly`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub readonly: bool,
    /// Who opened it (the client's address), for the per-client share of
    /// the agent's sockets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// Its message list was the store's when the agent last noted it
    /// (`Effect::NoteListMatches`), kept across hibernation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub list_matches: bool,
}

impl Attachment {
    /// A new socket's attachment.
    pub fn new(conn: &str, channel: bool, readonly: bool) -> Attachment {
        Attachment {
            conn: conn.to_string(),
            channel,
            state: None,
            closed: false,
            readonly,
            client: None,
            list_matches: false,
        }
    }
}

struct Socket {
    id: String,
    ws: WebSocket,
    tags: Vec<String>,
}

impl Socket {
    fn attachment(&self) -> Option<Attachment> {
        self.ws.deserialize_attachment::<Attachment>().ok()?
    }
}

impl Socket {
    fn update(&self, change: impl FnOnce(&mut Attachment)) -> Result<(), String> {
        let mut attachment = self
            .attachment()
            .unwrap_or_else(|| Attachment::new(&self.id, false, false));
        change(&mut attachment);
        self.ws
            .serialize_attachment(attachment)
            .map_err(|e| format!("could not keep the connection's state: {e}"))
    }
}

impl ConnectionSocket for Socket {
    fn tags(&self) -> Vec<String> {
        self.tags.clone()
    }

    fn readonly(&self) -> bool {
        self.attachment().is_some_and(|a| a.readonly)
    }

    fn set_readonly(&self, readonly: bool) -> Result<(), String> {
        self.update(|a| a.readonly = readonly)
    }

    fn state_text(&self) -> Option<String> {
        self.attachment()?.state
    }

    fn set_state_text(&self, text: Option<String>) -> Result<(), String> {
        self.update(|a| a.state = text)
    }

    fn send_text(&self, text: &str) -> Result<(), String> {
        self.ws.send_with_str(text).map_err(|e| e.to_string())
    }

    fn close(&self, code: u16, reason: &str) {
        let _ = self.ws.close(Some(code), Some(reason));
    }
}

impl Connection {
    /// The connection `id` on the runtime's socket `ws`, given `tags`.
    pub(crate) fn new(id: &str, ws: WebSocket, tags: Vec<String>) -> Connection {
        let socket = Socket {
            id: id.to_string(),
            ws,
            tags,
        };
        Connection::with_socket(id, Rc::new(socket))
    }
}
