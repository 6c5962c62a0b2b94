//! What the agent's handle offers for its connected tabs and its end: every
//! tab or those holding a tag (`connections`, `connection`), frames of the
//! author's own to all of them (`broadcast`, `broadcast_to_tag`), from any
//! code that holds a handle (hooks, schedules, tools, routes, calls over
//! RPC); and `destroy`, which erases everything the agent holds.

use crate::agent::connections::Connection;
use crate::agent::handle::AgentHandle;

/// The close code every open socket gets when its agent is destroyed.
pub const DESTROYED_CLOSE_CODE: u16 = 4410;

/// The close reason that goes with it.
pub const DESTROYED_CLOSE_REASON: &str = "agent destroyed";

impl AgentHandle {
    /// The open tabs (a parent agent's channel is not one), or (`Some(tag)`)
    /// those given `tag` when they connected
    /// (`AgentDefinition::connection_tags`).
    pub fn connections(&self, tag: Option<&str>) -> Vec<Connection> {
        self.host().connections(tag)
    }

    /// The open tab whose connection id is `id`.
    pub fn connection(&self, id: &str) -> Option<Connection> {
        self.connections(None).into_iter().find(|c| c.id() == id)
    }

    /// Sends `text`, a frame of the author's own, to every open tab but those
    /// whose ids are in `without`; how many it was sent to (a tab whose
    /// socket failed meanwhile is skipped).
    pub fn broadcast(&self, text: &str, without: &[&str]) -> usize {
        send_all(self.connections(None), text, without)
    }

    /// [`AgentHandle::broadcast`] to the tabs holding `tag` only.
    pub fn broadcast_to_tag(&self, tag: &str, text: &str, without: &[&str]) -> usize {
        send_all(self.connections(Some(tag)), text, without)
    }

    /// Erases the agent: every message, the synced state, the author's
    /// key-value entries and SQL tables, schedules and the alarm, MCP
    /// servers and their sign-ins, submissions; work in flight is stopped
    /// and every open socket is closed with [`DESTROYED_CLOSE_CODE`]. The
    /// next request finds a new, empty agent of the same name. In a worker
    /// the object is reset right after the call that asked returns.
    pub async fn destroy(&self) -> Result<(), String> {
        self.host().clone().destroy().await
    }
}

fn send_all(connections: Vec<Connection>, text: &str, without: &[&str]) -> usize {
    connections
        .into_iter()
        .filter(|c| !without.contains(&c.id()))
        .filter(|c| c.send(text).is_ok())
        .count()
}
