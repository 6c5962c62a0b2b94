//! The schema of the agent's SQLite and its version. The version lives in
//! `chat_meta` (the runtime refuses `PRAGMA user_version`); each migration
//! below runs once, in order, and every migration still owed by a database
//! runs inside one transaction together with the new version on wake, so an
//! upgrade either happens whole or not at all. A database written before
//! versions existed (release 312ec6c and earlier) reads as version 0.
//!
//! A new database skips the migrations: it is made at this version with only
//! the tables a chat turn writes (`FRESH`); the others are made by their
//! first write (`tables.rs`). The migrations are for databases of earlier
//! releases, which keep every table they have.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsValue;
use worker::SqlStorage;

use super::tables::{table_names, Tables};

/// The ordered migrations; the schema version is how many have run.
const MIGRATIONS: &[&[&str]] = &[
    // 1: the tables of the first releases.
    &[
        "CREATE TABLE IF NOT EXISTS chat_messages (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL)",
        "CREATE INDEX IF NOT EXISTS chat_messages_by_seq ON chat_messages(seq)",
        "CREATE TABLE IF NOT EXISTS chat_streams (request_id TEXT PRIMARY KEY, record TEXT NOT NULL)",
        "CREATE TABLE IF NOT EXISTS chat_stream_chunks (request_id TEXT NOT NULL, first_seq INTEGER NOT NULL, bodies TEXT NOT NULL, PRIMARY KEY (request_id, first_seq))",
        "CREATE TABLE IF NOT EXISTS chat_config (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
    // 2: values over the row limit are split: the row keeps the first piece
    // and how many there are, `chat_pieces` the rest (see core::row_limits).
    &[
        "ALTER TABLE chat_messages ADD COLUMN pieces INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE chat_stream_chunks ADD COLUMN pieces INTEGER NOT NULL DEFAULT 1",
        "ALTER TABLE chat_config ADD COLUMN pieces INTEGER NOT NULL DEFAULT 1",
        "CREATE TABLE chat_pieces (kind TEXT NOT NULL, key TEXT NOT NULL, sub INTEGER NOT NULL, n INTEGER NOT NULL, piece TEXT NOT NULL, PRIMARY KEY (kind, key, sub, n))",
    ],
    // 3: rows that no longer parse are moved aside with the reason (their
    // value split like any other, under kind 'quarantine').
    &[
        "CREATE TABLE chat_quarantine (id INTEGER PRIMARY KEY, source TEXT NOT NULL, key TEXT NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL, value TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1)",
    ],
    // 4: submissions of the agent's own code and where each stands (see
    // core::submissions); one row each, never split.
    &[
        "CREATE TABLE chat_submissions (id TEXT PRIMARY KEY, submitted_at INTEGER NOT NULL, record TEXT NOT NULL)",
    ],
    // 5: the tool call ids of each assistant message, so that finding the
    // owner of a call (a result, an approval, a fresh id's uniqueness) is an
    // index lookup, not a walk of the history. Filled from the stored
    // messages held in one row (6 adds those split over pieces).
    &[
        "CREATE TABLE chat_tool_calls (tool_call_id TEXT NOT NULL, message_id TEXT NOT NULL, PRIMARY KEY (tool_call_id, message_id))",
        "CREATE INDEX chat_tool_calls_by_message ON chat_tool_calls(message_id)",
        "INSERT OR IGNORE INTO chat_tool_calls (tool_call_id, message_id) SELECT json_extract(p.value, '$.toolCallId'), m.id FROM (SELECT id, body FROM chat_messages WHERE pieces = 1 AND json_valid(body) AND json_extract(body, '$.role') = 'assistant' AND json_type(body, '$.parts') = 'array') AS m, json_each(m.body, '$.parts') AS p WHERE p.type = 'object' AND json_type(p.value, '$.toolCallId') = 'text'",
    ],
    // 6: the tool calls of messages split over pieces, which 5 left out: each
    // such message is put back together (its row's piece, then its
    // `chat_pieces` in order) and its calls indexed, so every stored call is.
    &[
        "INSERT OR IGNORE INTO chat_tool_calls (tool_call_id, message_id) WITH RECURSIVE joined(id, pieces, n, body) AS (SELECT id, pieces, 0, body FROM chat_messages WHERE pieces > 1 UNION ALL SELECT j.id, j.pieces, c.n, j.body || c.piece FROM joined AS j JOIN chat_pieces AS c ON c.kind = 'message' AND c.key = j.id AND c.sub = 0 AND c.n = j.n + 1), m AS (SELECT id, body FROM joined WHERE n = pieces - 1 AND json_valid(body) AND json_extract(body, '$.role') = 'assistant' AND json_type(body, '$.parts') = 'array') SELECT json_extract(p.value, '$.toolCallId'), m.id FROM m, json_each(m.body, '$.parts') AS p WHERE p.type = 'object' AND json_type(p.value, '$.toolCallId') = 'text'",
    ],
    // 7: the MCP servers the agent's code added (see store::mcp_servers).
    &["CREATE TABLE IF NOT EXISTS chat_mcp_servers (id TEXT PRIMARY KEY, record TEXT NOT NULL)"],
    // 8: the custom bodies of queued turns, out of the queue row (see
    // store::queued_bodies); split over `chat_pieces` under kind 'queued_body'.
    // A queue row of an older release keeps its bodies inline: they move
    // here at the next write of the queue.
    &["CREATE TABLE IF NOT EXISTS chat_queued_bodies (request_id TEXT PRIMARY KEY, body TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1)"],
    // 9: the full-text index of the history is kept only by an agent that
    // searches it (store::search::keep_index builds it when the agent opens
    // and drops it when the agent no longer searches).
    &["DROP TABLE IF EXISTS chat_search"],
];

/// A new database, at `SCHEMA_VERSION`: the tables a chat turn writes, with
/// the columns the migrations give an older one. A table whose rows are read
/// only by key, or in key order, is `WITHOUT ROWID` (one b-tree where a
/// table keyed by text is otherwise two); the transcript and the stream
/// records keep their rowid, whose order reads rely on.
const FRESH: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS chat_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE chat_messages (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, body TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1)",
    "CREATE INDEX chat_messages_by_seq ON chat_messages(seq)",
    "CREATE TABLE IF NOT EXISTS chat_streams (request_id TEXT PRIMARY KEY, record TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chat_stream_chunks (request_id TEXT NOT NULL, first_seq INTEGER NOT NULL, bodies TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1, PRIMARY KEY (request_id, first_seq)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS chat_config (key TEXT PRIMARY KEY, value TEXT NOT NULL, pieces INTEGER NOT NULL DEFAULT 1) WITHOUT ROWID",
];

/// The version this build writes.
pub const SCHEMA_VERSION: usize = MIGRATIONS.len();

#[derive(serde::Deserialize)]
struct MetaRow {
    value: String,
}

/// The stored schema version (0 before versions existed).
pub fn version(sql: &SqlStorage) -> worker::Result<usize> {
    sql.exec(
        "CREATE TABLE IF NOT EXISTS chat_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        None,
    )?;
    let rows: Vec<MetaRow> = sql
        .exec(
            "SELECT value FROM chat_meta WHERE key = 'schema_version'",
            None,
        )?
        .to_array()?;
    Ok(rows.first().and_then(|r| r.value.parse().ok()).unwrap_or(0))
}

/// Brings the database to `SCHEMA_VERSION`: a new one (no transcript
/// table) is made at it (`FRESH`); an older one gets the migrations it still
/// owes and the new version, in one transaction. A database of a newer
/// release is left as it is (reported): its extra columns have defaults.
/// Answers which of the tables made by their first write exist.
pub fn migrate(sql: &SqlStorage, storage: &worker::Storage) -> worker::Result<Tables> {
    let names = table_names(sql)?;
    if !names.contains("chat_messages") {
        let owned = sql.clone();
        transaction(storage, move || {
            for statement in FRESH {
                owned.exec(statement, None)?;
            }
            write_version(&owned)
        })?;
        return Ok(Tables::from_names(&names));
    }
    let from = version(sql)?;
    if from > SCHEMA_VERSION {
        crate::log::write(
            crate::log::LogLevel::Error,
            &format!(
                "storage: schema version {from} is newer than this release's {SCHEMA_VERSION}"
            ),
        );
        return Ok(Tables::from_names(&names));
    }
    if from == SCHEMA_VERSION {
        return Ok(Tables::from_names(&names));
    }
    let owned = sql.clone();
    transaction(storage, move || {
        for statements in &MIGRATIONS[from..] {
            for statement in *statements {
                owned.exec(statement, None)?;
            }
        }
        write_version(&owned)
    })?;
    crate::log::write(
        crate::log::LogLevel::Info,
        &format!("storage: schema migrated from version {from} to {SCHEMA_VERSION}"),
    );
    Ok(Tables::from_names(&table_names(sql)?))
}

fn write_version(sql: &SqlStorage) -> worker::Result<()> {
    sql.exec(
        "INSERT OR REPLACE INTO chat_meta (key, value) VALUES ('schema_version', ?)",
        vec![worker::SqlStorageValue::from(SCHEMA_VERSION.to_string())],
    )?;
    Ok(())
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// The storage object seen only through `transactionSync`.
    type TxStorage;

    #[wasm_bindgen(method, catch, js_name = transactionSync)]
    fn transaction_sync(this: &TxStorage, body: &JsValue) -> Result<JsValue, JsValue>;
}

/// Runs `body` as one SQLite transaction (`storage.transactionSync`): when it
/// fails, nothing it wrote is kept.
pub fn transaction(
    storage: &worker::Storage,
    body: impl FnOnce() -> worker::Result<()> + 'static,
) -> worker::Result<()> {
    use std::cell::RefCell;
    use std::rc::Rc;
    use wasm_bindgen::JsCast;
    let failure: Rc<RefCell<Option<worker::Error>>> = Rc::new(RefCell::new(None));
    let seen = failure.clone();
    let mut body = Some(body);
    let closure = Closure::<dyn FnMut() -> Result<(), JsValue>>::new(move || {
        let Some(body) = body.take() else {
            return Ok(());
        };
        body().map_err(|e| {
            let text = JsValue::from_str(&e.to_string());
            *seen.borrow_mut() = Some(e);
            js_sys::Error::new(&text.as_string().unwrap_or_default()).into()
        })
    });
    let raw: &JsValue = storage.as_raw().as_ref();
    let result = raw
        .unchecked_ref::<TxStorage>()
        .transaction_sync(closure.as_ref());
    drop(closure);
    match result {
        Ok(_) => Ok(()),
        Err(e) => Err(failure
            .borrow_mut()
            .take()
            .unwrap_or_else(|| worker::Error::JsError(format!("{e:?}")))),
    }
}
