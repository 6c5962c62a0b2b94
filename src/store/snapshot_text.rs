//! The last transcript frame's older part, kept as a JS string the garbage
//! collector may take back (a `WeakRef`), with the run of rows it holds. The
//! next frame whose run starts a few rows later before the same window (the
//! usual case: the window grew by a turn, the budget beside it shrank) is
//! that string less those rows, read from SQLite alone, instead of the whole
//! run joined again. Nothing of it counts as the agent's memory: a
//! collection drops it and the next frame joins the run again.

use std::cell::{Cell, RefCell};

use js_sys::JsString;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use super::snapshot::SnapshotCut;

#[wasm_bindgen(inline_js = r#"
export function holdWeakly(text) { return new WeakRef({ text }); }
export function heldText(held) { const box = held.deref(); return box === undefined ? undefined : box.text; }
"#)]
extern "C" {
    #[wasm_bindgen(js_name = holdWeakly)]
    fn hold_weakly(text: &JsString) -> JsValue;
    #[wasm_bindgen(js_name = heldText)]
    fn held_text(held: &JsValue) -> JsValue;
}

/// Where the last frame's older part started, and its text while the
/// collector leaves it.
#[derive(Default)]
pub(super) struct CutMemo {
    cut: Cell<Option<SnapshotCut>>,
    /// The text of the run `[from, before)` of the cut it was read for.
    text: RefCell<Option<(u64, u64, JsValue)>>,
}

impl CutMemo {
    pub(super) fn get(&self) -> Option<SnapshotCut> {
        self.cut.get()
    }

    /// Remembers `cut` (`None`: forgets it, and its text with it).
    pub(super) fn set(&self, cut: Option<SnapshotCut>) {
        if cut.is_none() {
            self.text.borrow_mut().take();
        }
        self.cut.set(cut);
    }

    /// The text kept for the run `[from, before)`, if the collector left it.
    pub(super) fn text(&self, from: u64, before: u64) -> Option<JsString> {
        let kept = self.text.borrow();
        let (kept_from, kept_before, held) = kept.as_ref()?;
        if (*kept_from, *kept_before) != (from, before) {
            return None;
        }
        held_text(held).dyn_into::<JsString>().ok()
    }

    pub(super) fn keep_text(&self, from: u64, before: u64, text: &JsString) {
        *self.text.borrow_mut() = Some((from, before, hold_weakly(text)));
    }
}
