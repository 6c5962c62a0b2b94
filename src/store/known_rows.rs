//! What the store knows is not there, so that a write skips the statements
//! that would find nothing: the delete of a config row that does not exist
//! (a queue emptied that was never stored, a custom body never sent), the
//! clean-up of pieces for a kind of value that was never split, the old
//! chunk log of a stream that never had one. Learned once at load (which
//! config keys have a row, which kinds have pieces, which streams have
//! chunk rows) and kept in step by every write the store makes; a batch that
//! fails puts back what was known before it. Until the load, nothing is
//! known and every statement runs.

use std::collections::HashSet;

use serde::Deserialize;
use worker::SqlStorage;

use crate::core::ConfigKey;

use super::pieces::Kind;
use super::tables::{Lazy, Tables};

#[derive(Clone, Default)]
pub(super) struct KnownRows {
    /// Learned at load; before it, every row may exist.
    loaded: bool,
    /// Config keys that have a row.
    config: HashSet<&'static str>,
    /// Kinds of value that may have rows in `chat_pieces`.
    pieces: HashSet<&'static str>,
    /// Request ids that may have rows in `chat_stream_chunks`.
    chunk_logs: HashSet<String>,
}

#[derive(Deserialize)]
struct KindRow {
    kind: String,
}

#[derive(Deserialize)]
struct ChunkLogRow {
    request_id: String,
}

const PIECE_KINDS: [Kind; 5] = [
    Kind::Message,
    Kind::Chunks,
    Kind::Config,
    Kind::Quarantine,
    Kind::QueuedBody,
];

impl KnownRows {
    /// Reads what exists: the kinds with pieces and the streams with chunk
    /// rows (the config keys are told one by one, `config_row`).
    /// (No pieces at all while `chat_pieces` does not exist.)
    pub(super) fn learn(&mut self, sql: &SqlStorage, tables: &Tables) -> worker::Result<()> {
        let kinds: Vec<KindRow> = match tables.has(Lazy::Pieces) {
            true => sql
                .exec("SELECT DISTINCT kind FROM chat_pieces", None)?
                .to_array()?,
            false => Vec::new(),
        };
        self.pieces = PIECE_KINDS
            .iter()
            .map(|k| k.as_str())
            .filter(|k| kinds.iter().any(|row| row.kind == *k))
            .collect();
        let logs: Vec<ChunkLogRow> = sql
            .exec("SELECT DISTINCT request_id FROM chat_stream_chunks", None)?
            .to_array()?;
        self.chunk_logs = logs.into_iter().map(|row| row.request_id).collect();
        self.loaded = true;
        Ok(())
    }

    /// The load found (or did not find) a row for `key`.
    pub(super) fn config_row(&mut self, key: ConfigKey, present: bool) {
        match present {
            true => self.config.insert(key.as_str()),
            false => self.config.remove(key.as_str()),
        };
    }

    pub(super) fn may_have_config(&self, key: ConfigKey) -> bool {
        !self.loaded || self.config.contains(key.as_str())
    }

    pub(super) fn may_have_pieces(&self, kind: Kind) -> bool {
        !self.loaded || self.pieces.contains(kind.as_str())
    }

    pub(super) fn may_have_chunk_log(&self, request_id: &str) -> bool {
        !self.loaded || self.chunk_logs.contains(request_id)
    }

    /// A value of `kind` was written in `count` pieces.
    pub(super) fn wrote_pieces(&mut self, kind: Kind, count: i64) {
        if count > 1 {
            self.pieces.insert(kind.as_str());
        }
    }

    pub(super) fn wrote_config(&mut self, key: ConfigKey) {
        self.config.insert(key.as_str());
    }

    pub(super) fn deleted_config(&mut self, key: ConfigKey) {
        self.config.remove(key.as_str());
    }

    pub(super) fn wrote_chunks(&mut self, request_id: &str) {
        self.chunk_logs.insert(request_id.to_string());
    }

    pub(super) fn deleted_chunk_log(&mut self, request_id: &str) {
        self.chunk_logs.remove(request_id);
    }

    /// A clear keeps only the config rows of `kept` (and their pieces).
    pub(super) fn cleared(&mut self, kept: &[ConfigKey]) {
        self.config
            .retain(|key| kept.iter().any(|k| k.as_str() == *key));
        self.chunk_logs.clear();
        let config = Kind::Config.as_str();
        self.pieces.retain(|kind| *kind == config);
    }
}
