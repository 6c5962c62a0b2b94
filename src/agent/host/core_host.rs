//! What the agent's own code reaches through its handle (`CoreHost`): the
//! core, its effects carried out, the environment, MCP servers, the author's
//! storage, model text, submission waits, the other tabs, erasure and
//! history search.

use std::cell::RefCell;
use std::rc::Rc;

use worker::Env;

use crate::core::Core;

use crate::agent::connections::Connection;
use crate::agent::handle::CoreHost;

use super::{now_ms, AgentHost};

/// The agent's own code calling in (see `handle.rs`).
impl CoreHost for AgentHost {
    fn core(&self) -> &RefCell<Core> {
        &self.core
    }

    fn carry_out_effects(self: Rc<Self>) {
        let effects = self.core.borrow_mut().take_effects();
        self.execute(effects);
        self.schedule_timers();
    }

    fn env(&self) -> &Env {
        &self.env
    }

    fn now_ms(&self) -> u64 {
        now_ms()
    }

    fn add_mcp_server(self: Rc<Self>, server: crate::mcp::McpServer) -> Result<String, String> {
        AgentHost::add_mcp_server(&self, server)
    }

    fn remove_mcp_server(self: Rc<Self>, name: &str) -> Result<bool, String> {
        AgentHost::remove_mcp_server(&self, name)
    }

    fn mcp_servers(&self) -> Vec<crate::mcp::ServerInfo> {
        self.mcp_server_list()
    }

    fn author_storage(&self) -> crate::agent::storage::AuthorStorage {
        let sql = crate::agent::storage::sql::SqlAuthorStore::new(self.state.storage().sql());
        crate::agent::storage::AuthorStorage::new(Rc::new(sql))
    }

    fn generate_text(
        self: Rc<Self>,
        request: crate::model::ModelRequest,
    ) -> futures::future::LocalBoxFuture<'static, Result<String, crate::model::ModelFailure>> {
        Box::pin(AgentHost::generate_text(self, request))
    }

    fn settled(&self, id: &str) -> futures::future::LocalBoxFuture<'static, ()> {
        self.settled_waiters.wait(id)
    }

    fn connections(&self, tag: Option<&str>) -> Vec<Connection> {
        self.open_connections(tag)
    }

    fn destroy(self: Rc<Self>) -> futures::future::LocalBoxFuture<'static, Result<(), String>> {
        Box::pin(AgentHost::destroy(self))
    }

    fn search_history(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<crate::core::HistoryHit>, String> {
        self.store.search(query, limit).map_err(|e| e.to_string())
    }
}
