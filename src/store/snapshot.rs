//! The older part of a transcript frame (`core::transcript_frame::OlderPart`):
//! the stored JSON of the newest messages before the core's window that fit
//! a byte budget, joined by commas by SQLite and kept as a JS string (the
//! host puts it in the frame it sends without copying it into wasm memory),
//! read without parsing a row; a message split in pieces (over the row
//! limit) is joined from them in JS, as the others are.
//!
//! Where that run of rows starts (its cut) is remembered between frames.
//! Rows before the window do not change while the window stays where it is
//! (the core loads a message into its window before it changes it), and the
//! budget left beside the window only shrinks a little as the window grows,
//! so the next frame moves the cut forward past a few rows instead of
//! summing the sizes of every row again; its text is kept weakly
//! (`snapshot_text.rs`), so such a frame reads only the rows it leaves out.
//! A write to a message before the remembered window, a delete or a clear
//! forgets the cut and its text.

use js_sys::JsString;
use serde::Deserialize;
use wasm_bindgen::{JsCast, JsValue};
use worker::SqlStorageValue;

use crate::core::contract::history;
use crate::core::StoreOp;

use super::reads::seq_value;
use super::tables::Lazy;
use super::SqlStore;

/// Where the last frame's older part started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SnapshotCut {
    /// The window's first place the part was read before.
    before: u64,
    /// The first place the part holds (`before` when it holds nothing).
    from: u64,
    /// The bytes of its rows, a comma each.
    bytes: usize,
    /// The bytes (and comma) of the row just before `from`; `None` when there is none.
    next_older: Option<usize>,
    /// Every row of the run was found to be JSON (checked once, when the cut
    /// is found; moving it forward only leaves rows out).
    all_json: bool,
}

#[wasm_bindgen::prelude::wasm_bindgen]
extern "C" {
    /// `JSON.parse` of a string already in JS (checked there, not copied in).
    #[wasm_bindgen(catch, js_namespace = JSON, js_name = parse)]
    fn parse_json(text: &JsString) -> Result<JsValue, JsValue>;
}

/// A message row's bytes in a frame (its comma included): its body, and
/// the pieces of a message split over them.
const ROW_BYTES: &str = "(length(CAST(body AS BLOB)) + 1 + CASE WHEN pieces = 1 THEN 0 ELSE (SELECT COALESCE(SUM(length(CAST(piece AS BLOB))), 0) FROM chat_pieces WHERE kind = 'message' AND key = chat_messages.id AND sub = 0) END)";

/// `ROW_BYTES` while no value is split (`chat_pieces` not made yet).
const WHOLE_ROW_BYTES: &str = "(length(CAST(body AS BLOB)) + 1)";

/// Rows looked at per query when moving a cut forward.
const STEP_ROWS: i64 = 64;

#[derive(Deserialize)]
struct SplitRow {
    seq: f64,
    id: String,
}

#[derive(Deserialize)]
struct Sized {
    seq: f64,
    n: f64,
}

impl SqlStore {
    /// The older part of a transcript frame, as a JS string; see the module
    /// header. `None` when it holds no message.
    pub fn older_part_js(&self, before_seq: u64, max_bytes: usize) -> Option<JsString> {
        let previous = self.snapshot_cut.get().filter(|c| c.before == before_seq);
        let cut = previous
            .and_then(|c| self.narrowed(c, max_bytes))
            .or_else(|| self.cut_for(before_seq, max_bytes));
        let Some(mut cut) = cut.filter(|c| c.from < c.before) else {
            self.snapshot_cut.set(cut);
            return None;
        };
        let joined = match previous.and_then(|p| self.kept_text(p, &cut)) {
            Some(text) => {
                cut.all_json = true;
                Some(text)
            }
            None => self.joined(&mut cut),
        };
        self.snapshot_cut.set(Some(cut));
        let joined = joined.filter(|j| j.length() > 0)?;
        self.snapshot_cut.keep_text(cut.from, cut.before, &joined);
        Some(joined)
    }

    /// The text of `cut`'s run from the one kept for `previous` (the same
    /// window, a run starting at or before `cut`'s): the kept text less the
    /// rows the run no longer holds, whose own text SQLite joins to measure
    /// them. `None` (the run is joined whole) when the text was collected,
    /// or the rows left out were not all plain JSON rows.
    fn kept_text(&self, previous: SnapshotCut, cut: &SnapshotCut) -> Option<JsString> {
        if !previous.all_json || cut.from < previous.from {
            return None;
        }
        let text = self.snapshot_cut.text(previous.from, previous.before)?;
        if cut.from == previous.from {
            return Some(text);
        }
        if !self.split_rows(previous.from, cut.from)?.is_empty() {
            return None;
        }
        let left_out = self.joined_plain(previous.from, cut.from, &mut true)?;
        let skip = left_out.length() + 1;
        (skip < text.length()).then(|| text.slice(skip, text.length()))
    }

    /// Forgets the remembered cut when `op` may change a row it covers.
    pub(super) fn forget_snapshot_cut(&self, op: &StoreOp) {
        let Some(cut) = self.snapshot_cut.get() else {
            return;
        };
        let touches = match op {
            StoreOp::PutMessage { seq, .. } => *seq < cut.before,
            StoreOp::DeleteMessage { .. }
            | StoreOp::DropMessagesBefore { .. }
            | StoreOp::ClearAll => true,
            _ => false,
        };
        if touches {
            self.snapshot_cut.set(None);
        }
    }

    /// How a row's bytes are summed: with its pieces once values can be split.
    fn row_bytes(&self) -> &'static str {
        match self.tables.borrow().has(Lazy::Pieces) {
            true => ROW_BYTES,
            false => WHOLE_ROW_BYTES,
        }
    }

    /// The remembered cut for a budget of `max_bytes`: as it is while it is
    /// still the newest run that fits, moved forward when the budget shrank;
    /// `None` when it grew enough for an older row (the cut is found again).
    fn narrowed(&self, mut cut: SnapshotCut, max_bytes: usize) -> Option<SnapshotCut> {
        if cut.bytes <= max_bytes {
            let room_for_older = cut.next_older.is_some_and(|n| cut.bytes + n <= max_bytes);
            return (!room_for_older).then_some(cut);
        }
        'rows: while cut.bytes > max_bytes {
            let rows = self.sizes(
                &format!("SELECT seq, {} AS n FROM chat_messages WHERE seq >= ? AND seq < ? ORDER BY seq LIMIT ?", self.row_bytes()),
                vec![seq_value(cut.from), seq_value(cut.before), SqlStorageValue::from(STEP_ROWS)],
            )?;
            if rows.is_empty() {
                cut.from = cut.before;
                cut.bytes = 0;
                break;
            }
            for row in &rows {
                if cut.bytes <= max_bytes {
                    cut.from = row.seq as u64;
                    break 'rows;
                }
                // Left out: the run now starts past it.
                cut.bytes = cut.bytes.saturating_sub(row.n as usize);
                cut.next_older = Some(row.n as usize);
                cut.from = row.seq as u64 + 1;
            }
        }
        Some(cut)
    }

    /// The cut found from the newest row back: every row's size summed
    /// (only the newest rows that could fit are looked at).
    fn cut_for(&self, before_seq: u64, max_bytes: usize) -> Option<SnapshotCut> {
        let fitting = self.sizes(
            &format!("SELECT seq, running AS n FROM (SELECT seq, SUM(size) OVER (ORDER BY seq DESC ROWS UNBOUNDED PRECEDING) AS running FROM (SELECT seq, {} AS size FROM chat_messages WHERE seq < ? ORDER BY seq DESC LIMIT ?)) WHERE running <= ? ORDER BY seq LIMIT 1", self.row_bytes()),
            vec![
                seq_value(before_seq),
                SqlStorageValue::from(history::most_rows_within(max_bytes) as i64),
                SqlStorageValue::from(max_bytes as i64),
            ],
        )?;
        let (from, bytes) = match fitting.first() {
            Some(row) => (row.seq as u64, row.n as usize),
            None => (before_seq, 0),
        };
        let older = self.sizes(
            &format!(
                "SELECT seq, {} AS n FROM chat_messages WHERE seq < ? ORDER BY seq DESC LIMIT 1",
                self.row_bytes()
            ),
            vec![seq_value(from)],
        )?;
        Some(SnapshotCut {
            before: before_seq,
            from,
            bytes,
            next_older: older.first().map(|r| r.n as usize),
            all_json: false,
        })
    }

    fn sizes(&self, statement: &str, binds: Vec<SqlStorageValue>) -> Option<Vec<Sized>> {
        self.rows(statement, binds, "message sizes")
    }

    /// A statement's rows (`what` names them in the logged error).
    fn rows<T: serde::de::DeserializeOwned>(
        &self,
        statement: &str,
        binds: Vec<SqlStorageValue>,
        what: &str,
    ) -> Option<Vec<T>> {
        match self.sql.exec(statement, binds).and_then(|c| c.to_array()) {
            Ok(rows) => Some(rows),
            Err(e) => {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("storage: reading {what} failed: {e}"),
                );
                None
            }
        }
    }

    /// The stored JSON of the cut's rows, oldest first, joined by commas.
    /// A row that is not JSON is left out (the run is checked as a whole
    /// once per cut, and row by row only when that fails). A message split
    /// in pieces is joined from its pieces in JS, as the rows around it are
    /// by SQLite: no row is copied into wasm memory.
    fn joined(&self, cut: &mut SnapshotCut) -> Option<JsString> {
        let split = self.split_rows(cut.from, cut.before)?;
        if split.is_empty() {
            return self.joined_plain(cut.from, cut.before, &mut cut.all_json);
        }
        let mut out = JsString::from("");
        let mut from = cut.from;
        let mut add = |part: Option<JsString>| {
            if let Some(part) = part.filter(|p| p.length() > 0) {
                if out.length() > 0 {
                    out = out.concat(&JsValue::from_str(","));
                }
                out = out.concat(&part);
            }
        };
        for row in &split {
            let seq = row.seq as u64;
            add(self.joined_plain(from, seq, &mut false));
            add(self
                .whole_message(&row.id)
                .filter(|m| parse_json(m).is_ok()));
            from = seq + 1;
        }
        add(self.joined_plain(from, cut.before, &mut false));
        Some(out)
    }

    /// The rows of the cut's run split in pieces (their place and id).
    fn split_rows(&self, from: u64, before: u64) -> Option<Vec<SplitRow>> {
        self.rows(
            "SELECT seq, id FROM chat_messages WHERE seq >= ? AND seq < ? AND pieces <> 1 ORDER BY seq",
            vec![seq_value(from), seq_value(before)],
            "the split messages",
        )
    }

    /// One column of a statement's first row, kept as a JS string.
    fn js_text(
        &self,
        statement: &str,
        binds: Vec<SqlStorageValue>,
        column: &str,
    ) -> Option<JsString> {
        let row = match self.sql.exec(statement, binds) {
            Ok(mut cursor) => Iterator::next(&mut cursor)?,
            Err(e) => Err(e),
        };
        let row = match row {
            Ok(row) => row,
            Err(e) => {
                crate::log::write(
                    crate::log::LogLevel::Error,
                    &format!("storage: reading the newest messages failed: {e}"),
                );
                return None;
            }
        };
        js_sys::Reflect::get(&row, &JsValue::from_str(column))
            .ok()?
            .dyn_into::<JsString>()
            .ok()
    }

    /// The whole stored JSON of message `id`, split in pieces: its row's
    /// first piece and the others, joined in JS.
    fn whole_message(&self, id: &str) -> Option<JsString> {
        let mut whole = self.js_text(
            "SELECT body FROM chat_messages WHERE id = ?",
            vec![id.into()],
            "body",
        )?;
        let cursor = self
            .sql
            .exec(
                "SELECT piece FROM chat_pieces WHERE kind = 'message' AND key = ? AND sub = 0 ORDER BY n",
                vec![id.into()],
            )
            .ok()?;
        for row in cursor {
            let piece = js_sys::Reflect::get(&row.ok()?, &JsValue::from_str("piece")).ok()?;
            if !piece.is_string() {
                return None;
            }
            whole = whole.concat(&piece);
        }
        Some(whole)
    }

    /// The rows in `[from, before)` not split in pieces, joined by SQLite;
    /// `all_json`: they were found to be JSON before (else checked now).
    fn joined_plain(&self, from: u64, before: u64, all_json: &mut bool) -> Option<JsString> {
        let binds = || vec![seq_value(from), seq_value(before)];
        let joined = self.js_text("SELECT group_concat(body, ',') AS bodies FROM (SELECT body FROM chat_messages WHERE seq >= ? AND seq < ? AND pieces = 1 ORDER BY seq)", binds(), "bodies");
        let whole_is_json = |joined: &JsString| {
            let array = JsString::from("[")
                .concat(joined)
                .concat(&JsValue::from_str("]"));
            parse_json(&array).is_ok()
        };
        match joined {
            Some(joined) if *all_json || joined.length() == 0 || whole_is_json(&joined) => {
                *all_json = true;
                Some(joined)
            }
            _ => self.js_text("SELECT group_concat(body, ',') AS bodies FROM (SELECT body FROM chat_messages WHERE seq >= ? AND seq < ? AND pieces = 1 AND json_valid(body) ORDER BY seq)", binds(), "bodies"),
        }
    }
}
