//! The agent's own code calling into the test kit's host (its handle's
//! `CoreHost`): the core, the in-memory store and tabs, `generate_text`
//! answered from the script, a history search over the stored messages, and
//! erasure; MCP servers are out of reach in the kit.

use std::cell::RefCell;
use std::rc::Rc;

use futures::future::LocalBoxFuture;

use crate::agent::connections::Connection;
use crate::agent::handle::connections::{DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON};
use crate::agent::handle::CoreHost;
use crate::agent::storage::AuthorStorage;
use crate::agent::tools::context::AgentEnv;
use crate::core::{ConnId, Core};
use crate::model::{ModelEvent, ModelFailure, ModelRequest};

use super::super::reply::End;
use super::KitHost;

impl KitHost {
    /// Answers `generate_text` from the script: the reply's text, or its failure.
    fn scripted_text(&self, request: ModelRequest) -> Result<String, ModelFailure> {
        let reply = {
            let mut model = self.durable.model.borrow_mut();
            model.requests.push(request);
            model.replies.pop_front()
        };
        let reply = reply.ok_or_else(|| {
            ModelFailure::http(500, "no reply scripted for generate_text", None, None)
        })?;
        if let End::Fail(failure) = reply.end {
            return Err(failure);
        }
        let text = reply.events.into_iter().filter_map(|e| match e {
            ModelEvent::TextDelta(delta) => Some(delta),
            _ => None,
        });
        Ok(text.collect())
    }
}

/// The agent's own code calling in (see `agent/handle.rs`).
impl CoreHost for KitHost {
    fn core(&self) -> &RefCell<Core> {
        &self.core
    }

    fn carry_out_effects(self: Rc<Self>) {
        self.carry_out();
    }

    fn env(&self) -> &AgentEnv {
        &self.env
    }

    fn now_ms(&self) -> u64 {
        self.durable.now()
    }

    fn add_mcp_server(self: Rc<Self>, _server: crate::mcp::McpServer) -> Result<String, String> {
        Err("MCP servers are not reachable from the test kit".to_string())
    }

    fn remove_mcp_server(self: Rc<Self>, _name: &str) -> Result<bool, String> {
        Ok(false)
    }

    fn mcp_servers(&self) -> Vec<crate::mcp::ServerInfo> {
        Vec::new()
    }

    fn author_storage(&self) -> AuthorStorage {
        AuthorStorage::new(self.durable.author.clone())
    }

    fn settled(&self, id: &str) -> LocalBoxFuture<'static, ()> {
        self.settled_waiters.wait(id)
    }

    fn connections(&self, tag: Option<&str>) -> Vec<Connection> {
        let open: Vec<ConnId> = (self.durable.tabs.borrow().iter())
            .filter(|(_, tab)| tab.open && tag.is_none_or(|t| tab.tags.iter().any(|x| x == t)))
            .map(|(conn, _)| conn.clone())
            .collect();
        let me = self.me.upgrade();
        (open.iter())
            .filter_map(|conn| me.as_ref().map(|host| host.connection(conn)))
            .collect()
    }

    fn destroy(self: Rc<Self>) -> LocalBoxFuture<'static, Result<(), String>> {
        self.destroyed.set(true);
        self.durable
            .erase(DESTROYED_CLOSE_CODE, DESTROYED_CLOSE_REASON);
        Box::pin(async { Ok(()) })
    }

    fn generate_text(
        self: Rc<Self>,
        request: ModelRequest,
    ) -> LocalBoxFuture<'static, Result<String, ModelFailure>> {
        let answer = self.scripted_text(request);
        Box::pin(async move { answer })
    }

    /// In memory: the stored messages holding any of the query's words
    /// (case aside), newest first, each's text as its excerpt.
    fn search_history(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<crate::core::HistoryHit>, String> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let messages = self.durable.store.borrow().messages();
        let hits = messages
            .iter()
            .enumerate()
            .rev()
            .filter_map(|(seq, message)| {
                let text = crate::core::vocab::history_search::searchable_text(message);
                let lower = text.to_lowercase();
                words
                    .iter()
                    .any(|w| lower.contains(w))
                    .then(|| crate::core::HistoryHit {
                        message_id: message.id.clone(),
                        role: format!("{:?}", message.role).to_lowercase(),
                        seq: seq as u64,
                        excerpt: text,
                    })
            })
            .take(limit)
            .collect();
        Ok(crate::core::vocab::history_search::within_bytes(hits))
    }
}
