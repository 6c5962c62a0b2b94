//! Which of the store's tables exist. Every opened SQLite table costs the
//! agent memory (about 12 KiB a b-tree, and a table keyed by text is two),
//! so a new agent starts with only what a chat turn writes (`chat_meta`,
//! `chat_messages`, `chat_streams`, `chat_stream_chunks`, `chat_config`) and
//! each other table is created, with its indexes, by its first write, inside
//! that write's transaction. Learned once when the store opens (one read of
//! `sqlite_master`) and kept in step by every create; a read of a table that
//! is not there answers empty without touching it. An agent written by an
//! earlier release has every table, and reads and writes them as before.

use std::collections::HashSet;

use serde::Deserialize;
use worker::SqlStorage;

/// A table made by its first write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lazy {
    /// The pieces of values over the row limit (`pieces.rs`).
    Pieces,
    /// Rows that no longer parse (`quarantine.rs`).
    Quarantine,
    /// Submissions of the agent's own code.
    Submissions,
    /// The tool call ids of assistant messages.
    ToolCalls,
    /// The MCP servers the agent's code added, and sign-ins (`mcp_servers.rs`).
    McpServers,
    /// The custom bodies of queued turns (`queued_bodies.rs`).
    QueuedBodies,
}

impl Lazy {
    pub const ALL: [Lazy; 6] = [
        Lazy::Pieces,
        Lazy::Quarantine,
        Lazy::Submissions,
        Lazy::ToolCalls,
        Lazy::McpServers,
        Lazy::QueuedBodies,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Lazy::Pieces => "chat_pieces",
            Lazy::Quarantine => "chat_quarantine",
            Lazy::Submissions => "chat_submissions",
            Lazy::ToolCalls => "chat_tool_calls",
            Lazy::McpServers => "chat_mcp_servers",
            Lazy::QueuedBodies => "chat_queued_bodies",
        }
    }

    /// The table as this release creates it (the same columns an upgraded
    /// database has), and its indexes. A table whose rows are small and
    /// only read by key or in key order is `WITHOUT ROWID`: one b-tree, not
    /// a table and its key's index.
    fn create(self) -> &'static [&'static str] {
        match self {
            Lazy::Pieces => &["CREATE TABLE IF NOT EXISTS chat_pieces (kind TEXT NOT NULL, key TEXT NOT NULL, sub INTEGER NOT NULL, n INTEGER NOT NULL, piece TEXT NOT NULL, PRIMARY KEY (kind, key, sub, n))"],
            Lazy::Quarantine => &["CREATE TABLE IF NOT EXISTS chat_quarantine (id INTEGER PRIMARY KEY, source TEXT NOT NULL, key TEXT NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL, value TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1)"],
            Lazy::Submissions => &["CREATE TABLE IF NOT EXISTS chat_submissions (id TEXT PRIMARY KEY, submitted_at INTEGER NOT NULL, record TEXT NOT NULL)"],
            Lazy::ToolCalls => &[
                "CREATE TABLE IF NOT EXISTS chat_tool_calls (tool_call_id TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY (tool_call_id, message_id)) WITHOUT ROWID",
                "CREATE INDEX IF NOT EXISTS chat_tool_calls_by_message ON chat_tool_calls(message_id)",
            ],
            Lazy::McpServers => &["CREATE TABLE IF NOT EXISTS chat_mcp_servers (id TEXT PRIMARY KEY, record TEXT NOT NULL) WITHOUT ROWID"],
            Lazy::QueuedBodies => &["CREATE TABLE IF NOT EXISTS chat_queued_bodies (request_id TEXT PRIMARY KEY, body TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1)"],
        }
    }
}

/// The lazy tables that exist.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    present: HashSet<Lazy>,
}

#[derive(Deserialize)]
struct NameRow {
    name: String,
}

/// The names of every table of the database (SQLite's own included).
pub fn table_names(sql: &SqlStorage) -> worker::Result<HashSet<String>> {
    let rows: Vec<NameRow> = sql
        .exec("SELECT name FROM sqlite_master WHERE type = 'table'", None)?
        .to_array()?;
    Ok(rows.into_iter().map(|row| row.name).collect())
}

impl Tables {
    /// The lazy tables among `names`.
    pub fn from_names(names: &HashSet<String>) -> Tables {
        let present = Lazy::ALL
            .into_iter()
            .filter(|table| names.contains(table.name()))
            .collect();
        Tables { present }
    }

    pub fn has(&self, table: Lazy) -> bool {
        self.present.contains(&table)
    }

    /// Creates `table` unless it exists. Called inside the transaction of
    /// the write that needs it: when that rolls back, so does the create,
    /// and the caller puts back the `Tables` it had before.
    pub fn ensure(&mut self, sql: &SqlStorage, table: Lazy) -> worker::Result<()> {
        if self.has(table) {
            return Ok(());
        }
        for statement in table.create() {
            sql.exec(statement, None)?;
        }
        self.present.insert(table);
        Ok(())
    }
}
