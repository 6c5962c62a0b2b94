//! The agent's sockets: those an earlier instance accepted (adopted after
//! hibernation or eviction), a socket's messages (to the core, or a frame
//! over the agent's limit answered with its error frame) and its close.

use std::rc::Rc;

use wasm_bindgen_futures::spawn_local;
use worker::{WebSocket, WebSocketIncomingMessage};

use crate::core::{ConnId, Event};
use crate::protocol::server;

use crate::agent::connections::socket::Attachment;

#[cfg(feature = "debug-routes")]
use super::debug_author;
use super::{AgentHost, REMEMBERED_CLOSES};

impl AgentHost {
    /// Sockets accepted by an earlier instance (before hibernation or eviction).
    pub(super) fn adopt_open_sockets(self: &Rc<Self>) {
        for ws in self.state.get_websockets() {
            if let Ok(Some(Attachment {
                conn,
                closed,
                list_matches,
                ..
            })) = ws.deserialize_attachment()
            {
                if closed {
                    // Its close was handled before the eviction.
                    continue;
                }
                let conn: ConnId = Rc::from(conn);
                self.sockets.borrow_mut().insert(conn.clone(), ws);
                self.dispatch(Event::Adopted { conn, list_matches });
            }
        }
    }

    pub fn on_message(self: &Rc<Self>, ws: WebSocket, message: WebSocketIncomingMessage) {
        let Some((conn, channel, readonly)) = self.conn_of(&ws) else {
            return;
        };
        match message {
            WebSocketIncomingMessage::String(text) if channel => {
                self.dispatch(Event::ChannelFrame { conn, text })
            }
            WebSocketIncomingMessage::String(text) if readonly => {
                self.dispatch(Event::ReadonlyFrame { conn, text })
            }
            WebSocketIncomingMessage::String(text) => self.dispatch(Event::Frame { conn, text }),
            WebSocketIncomingMessage::Binary(_) => {
                let _ = ws.send_with_str(server::chat_error(
                    "binary frames are not supported; send JSON text",
                ));
            }
        }
    }

    /// The largest frame a socket of this agent may send, in bytes: the
    /// bridge (scripts/rpc-bridge.mjs) refuses a larger one by its length,
    /// before its text is copied into wasm memory.
    pub fn frame_limit(&self) -> usize {
        self.core.borrow().config().settings.limits.max_frame_bytes
    }

    /// A frame over [`Self::frame_limit`] that the bridge kept in JS: `bytes`
    /// its size, `head` its first characters. Refused as the core refuses
    /// any frame over the limit (an error frame, the socket left open).
    pub fn on_large_message(self: &Rc<Self>, ws: WebSocket, bytes: usize, head: String) {
        if let Some((conn, _, _)) = self.conn_of(&ws) {
            self.dispatch(Event::FrameTooLarge { conn, bytes, head });
        }
    }

    /// A socket's close or error event. The runtime may deliver both for one
    /// socket (an error, then its close): only the first is handled, so the
    /// core hears of it once and `on_close` runs once per connection.
    pub fn on_close(self: &Rc<Self>, ws: WebSocket) {
        // Complete the client's close handshake (the runtime does not answer a
        // hibernatable socket's close frame by itself); fails harmlessly on a
        // socket that is already gone.
        let _ = ws.close(Some(1000), None::<&str>);
        if self.destroyed.get() {
            // Erased: no hook runs (it could write again).
            return;
        }
        let Ok(Some(mut attachment)) = ws.deserialize_attachment::<Attachment>() else {
            return;
        };
        let conn: ConnId = Rc::from(attachment.conn.as_str());
        if attachment.closed || self.closed.borrow().contains(&conn) {
            return;
        }
        attachment.closed = true;
        // Kept on the socket (across an eviction between its two events) and
        // in memory (in case the runtime refuses to change a closed socket).
        let _ = ws.serialize_attachment(&attachment);
        {
            let mut closed = self.closed.borrow_mut();
            if closed.len() == REMEMBERED_CLOSES {
                closed.pop_front();
            }
            closed.push_back(conn.clone());
        }
        self.sockets.borrow_mut().remove(&conn);
        self.dispatch(Event::Disconnected { conn: conn.clone() });
        #[cfg(feature = "debug-routes")]
        if self.debug.tools {
            debug_author::record_close(&self.handle(), &conn);
        }
        if !attachment.channel {
            let connection = self.connection_on(&conn, ws);
            spawn_local((self.author.on_close)(connection, self.handle()));
        }
    }

    /// Keeps with `conn`'s socket whether its list is the store's (a parent's
    /// channel has no socket: nothing to keep).
    pub(super) fn note_socket_list_matches(&self, conn: &ConnId, matches: bool) {
        let Some(ws) = self.sockets.borrow().get(conn).cloned() else {
            return;
        };
        if let Ok(Some(mut attachment)) = ws.deserialize_attachment::<Attachment>() {
            attachment.list_matches = matches;
            let _ = ws.serialize_attachment(&attachment);
        }
    }

    /// A socket's connection id, whether it is a parent's channel, and
    /// whether it is readonly.
    pub(super) fn conn_of(&self, ws: &WebSocket) -> Option<(ConnId, bool, bool)> {
        let attachment = ws.deserialize_attachment::<Attachment>().ok()??;
        let conn: ConnId = Rc::from(attachment.conn);
        if !self.sockets.borrow().contains_key(&conn) {
            self.sockets.borrow_mut().insert(conn.clone(), ws.clone());
        }
        Some((conn, attachment.channel, attachment.readonly))
    }
}
