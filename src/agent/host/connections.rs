//! The host's side of the tabs as the author's code reaches them: a
//! socket's `Connection` (its tags read from the runtime, which keeps them
//! across hibernation), the open tabs (all, or those holding a tag), the
//! tags and readonly flag a new tab is given, and erasing the agent
//! (`destroy`): work stopped, sockets closed, storage and alarm deleted,
//! then the object reset so the next request starts from nothing.

use std::rc::Rc;

use wasm_bindgen::JsCast;
use worker::WebSocket;

use super::AgentHost;
use crate::agent::access::RequestInfo;
use crate::agent::connections::socket::Attachment;
use crate::agent::connections::{checked_tags, Connection};
use crate::agent::handle::connections::{DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON};

impl AgentHost {
    /// The connection `conn` on socket `ws`, with the tags it was given.
    pub(super) fn connection_on(&self, conn: &str, ws: WebSocket) -> Connection {
        let tags = self
            .state
            .as_raw()
            .get_tags(ws.as_ref())
            .unwrap_or_default();
        Connection::new(conn, ws, tags)
    }

    /// The open tabs (not a parent's channel, not one whose close was
    /// handled), or those holding `tag`.
    pub(super) fn open_connections(&self, tag: Option<&str>) -> Vec<Connection> {
        let sockets = match tag {
            Some(tag) => self.state.get_websockets_with_tag(tag),
            None => self.state.get_websockets(),
        };
        let closed = self.closed.borrow();
        sockets
            .into_iter()
            .filter_map(|ws| {
                let attachment = ws.deserialize_attachment::<Attachment>().ok()??;
                let open = !attachment.channel
                    && !attachment.closed
                    && !closed.iter().any(|c| **c == *attachment.conn);
                open.then(|| self.connection_on(&attachment.conn, ws))
            })
            .collect()
    }

    /// The tags and readonly flag the definition gives tab `conn` connecting
    /// with `request` (tags it may not hold are dropped and logged).
    pub(super) fn connect_decisions(
        &self,
        conn: &str,
        request: &RequestInfo,
    ) -> (Vec<String>, bool) {
        let (tags, dropped) = checked_tags((self.author.connection_tags)(conn, request));
        for reason in dropped {
            self.log_line(
                crate::log::LogLevel::Warn,
                &format!("tag dropped: {reason}"),
            );
        }
        let readonly = (self.author.should_connection_be_readonly)(conn, request);
        (tags, readonly)
    }

    /// Erases the agent (see `AgentHandle::destroy`). From here on no effect
    /// of the core is carried out, so nothing is written again.
    pub(super) async fn destroy(self: Rc<Self>) -> Result<(), String> {
        self.destroyed.set(true);
        for (_, controller) in self.model_calls.borrow_mut().drain() {
            controller.abort();
        }
        if let Some((_, wake)) = self.wake.borrow_mut().take() {
            wake.abort();
        }
        for ws in self.state.get_websockets() {
            let _ = ws.close(Some(DESTROYED_CLOSE_CODE), Some(DESTROYED_CLOSE_REASON));
        }
        self.sockets.borrow_mut().clear();
        let storage = self.state.storage();
        let failed = |e: worker::Error| format!("the agent could not be erased: {e}");
        storage.delete_alarm().await.map_err(failed)?;
        storage.delete_all().await.map_err(failed)?;
        self.log_line(crate::log::LogLevel::Info, "destroyed: every row erased");
        self.reset_soon("destroyed");
        Ok(())
    }

    /// Resets the Durable Object right after this request is answered:
    /// `ctx.abort()` runs from a timer of its own, with no Rust code on the
    /// stack; the next request builds a new instance.
    pub(super) fn reset_soon(&self, reason: &str) {
        let state: &wasm_bindgen::JsValue = self.state.as_raw().as_ref();
        let abort = js_sys::Reflect::get(state, &"abort".into())
            .and_then(|f| f.dyn_into::<js_sys::Function>())
            .map(|f| f.bind1(state, &reason.into()));
        let set_timeout = js_sys::Reflect::get(&js_sys::global(), &"setTimeout".into())
            .and_then(|f| f.dyn_into::<js_sys::Function>());
        if let (Ok(abort), Ok(set_timeout)) = (abort, set_timeout) {
            let _ = set_timeout.call2(&wasm_bindgen::JsValue::UNDEFINED, &abort, &20.into());
        }
    }
}
