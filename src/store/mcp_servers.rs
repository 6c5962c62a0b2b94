//! The MCP servers the agent's code added at run time: one row of
//! `chat_mcp_servers` per server id, its value the JSON `mcp::ServerRecord`
//! (a shape with its own version). Declared servers are not stored: the
//! definition declares them again on every start. A server's OAuth
//! sign-in (`mcp::oauth::Credentials`, declared servers' too) is a row of
//! the same table under `oauth:<id>` (a server id holds no `:`).
//! `stored_sign_in` reads one before the store is opened, creating nothing.

use serde::Deserialize;
use worker::{SqlStorage, SqlStorageValue};

use super::SqlStore;

#[derive(Deserialize)]
struct ServerRow {
    id: String,
    record: String,
}

impl SqlStore {
    /// Every stored server row: its id and JSON.
    pub fn mcp_server_rows(&self) -> worker::Result<Vec<(String, String)>> {
        let rows: Vec<ServerRow> = self
            .sql
            .exec(
                "SELECT id, record FROM chat_mcp_servers WHERE id NOT LIKE 'oauth:%' ORDER BY id",
                None,
            )?
            .to_array()?;
        Ok(rows.into_iter().map(|r| (r.id, r.record)).collect())
    }

    /// Stores (or replaces) server `id`'s row.
    pub fn put_mcp_server(&self, id: &str, record: &str) -> worker::Result<()> {
        self.sql.exec(
            "INSERT OR REPLACE INTO chat_mcp_servers (id, record) VALUES (?, ?)",
            vec![SqlStorageValue::from(id), SqlStorageValue::from(record)],
        )?;
        Ok(())
    }

    /// Forgets server `id`.
    pub fn delete_mcp_server(&self, id: &str) -> worker::Result<()> {
        self.sql.exec(
            "DELETE FROM chat_mcp_servers WHERE id = ?",
            vec![SqlStorageValue::from(id)],
        )?;
        Ok(())
    }

    /// Server `id`'s stored OAuth sign-in, if any.
    pub fn mcp_credentials(&self, id: &str) -> worker::Result<Option<String>> {
        let rows: Vec<ServerRow> = self
            .sql
            .exec(
                "SELECT id, record FROM chat_mcp_servers WHERE id = ?",
                vec![SqlStorageValue::from(format!("oauth:{id}"))],
            )?
            .to_array()?;
        Ok(rows.into_iter().next().map(|r| r.record))
    }

    /// Stores server `id`'s OAuth sign-in.
    pub fn put_mcp_credentials(&self, id: &str, json: &str) -> worker::Result<()> {
        self.put_mcp_server(&format!("oauth:{id}"), json)
    }

    /// Forgets server `id`'s OAuth sign-in.
    pub fn delete_mcp_credentials(&self, id: &str) -> worker::Result<()> {
        self.delete_mcp_server(&format!("oauth:{id}"))
    }
}

/// Server `id`'s stored OAuth sign-in, read without opening the store: no
/// migration, no table created, nothing written (on a new object, whose
/// database has no tables, the query fails and this is `None`). What an
/// OAuth callback is checked against before the agent starts.
pub fn stored_sign_in(sql: &SqlStorage, id: &str) -> Option<String> {
    let rows: Vec<ServerRow> = sql
        .exec(
            "SELECT id, record FROM chat_mcp_servers WHERE id = ?",
            vec![SqlStorageValue::from(format!("oauth:{id}"))],
        )
        .ok()?
        .to_array()
        .ok()?;
    rows.into_iter().next().map(|r| r.record)
}
