//! A tab's socket as a connection of the test kit holds it: its tags,
//! readonly flag and connection state kept on the in-memory tab, frames
//! delivered to it, and a close that tells the host the tab is gone.

use std::rc::{Rc, Weak};

use serde_json::Value;

use crate::agent::connections::ConnectionSocket;
use crate::core::ConnId;

use super::super::memory::Durable;
use super::KitHost;

/// A tab's socket as a connection holds it.
pub(super) struct TabSocket {
    pub(super) conn: ConnId,
    pub(super) host: Weak<KitHost>,
    pub(super) durable: Rc<Durable>,
}

impl ConnectionSocket for TabSocket {
    fn tags(&self) -> Vec<String> {
        (self.durable.tabs.borrow().get(&self.conn)).map_or_else(Vec::new, |t| t.tags.clone())
    }

    fn readonly(&self) -> bool {
        (self.durable.tabs.borrow().get(&self.conn)).is_some_and(|t| t.readonly)
    }

    fn set_readonly(&self, readonly: bool) -> Result<(), String> {
        match self.durable.tabs.borrow_mut().get_mut(&self.conn) {
            Some(tab) => {
                tab.readonly = readonly;
                Ok(())
            }
            None => Err("no such connection".to_string()),
        }
    }

    fn state_text(&self) -> Option<String> {
        self.durable.tabs.borrow().get(&self.conn)?.state.clone()
    }

    fn set_state_text(&self, text: Option<String>) -> Result<(), String> {
        match self.durable.tabs.borrow_mut().get_mut(&self.conn) {
            Some(tab) => {
                tab.state = text;
                Ok(())
            }
            None => Err("no such connection".to_string()),
        }
    }

    fn send_text(&self, text: &str) -> Result<(), String> {
        let frame = serde_json::from_str(text).unwrap_or(Value::String(text.into()));
        match self.durable.deliver(&self.conn, frame) {
            true => Ok(()),
            false => Err("connection closed".to_string()),
        }
    }

    fn close(&self, code: u16, reason: &str) {
        let was_open = match self.durable.tabs.borrow_mut().get_mut(&self.conn) {
            Some(tab) if tab.open => {
                tab.open = false;
                tab.closed_with = Some((code, reason.to_string()));
                true
            }
            _ => false,
        };
        if let (true, Some(host)) = (was_open, self.host.upgrade()) {
            let conn = self.conn.clone();
            let closing = host.clone();
            host.spawn(async move { closing.disconnect(&conn) });
        }
    }
}
