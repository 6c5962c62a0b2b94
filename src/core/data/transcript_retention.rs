//! The history cap: which of the oldest stored messages go once the
//! conversation holds more than an agent keeps (`Limits::max_stored_messages`).

use std::cmp::Ordering;

use crate::protocol::Role;

use super::Transcript;

impl Transcript {
    /// How many messages are stored (or about to be): the window and the
    /// older ones.
    pub fn stored_len(&self) -> usize {
        self.count_before_window() + self.entries.len()
    }

    /// Forgets the oldest messages so that at most `keep` remain, never the
    /// newest user message or anything after it, nor what `keep_from` (a
    /// running turn's place) or a queued turn's reserved place needs.
    /// Returns the place of the oldest message kept: every stored message
    /// before it is to be deleted. `None` when nothing goes.
    pub fn drop_oldest_beyond(&mut self, keep: usize, keep_from: Option<u64>) -> Option<u64> {
        let older = self.count_before_window();
        let total = older + self.entries.len();
        let excess = total.checked_sub(keep.max(1)).filter(|n| *n > 0)?;
        let newest_user = self
            .entries
            .iter()
            .rposition(|e| e.message.role == Role::User)
            .map(|i| self.entries[i].seq);
        let protected = [
            newest_user,
            keep_from,
            self.reserved.values().copied().min(),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(u64::MAX);
        let cut = match excess.cmp(&older) {
            Ordering::Less => self.history.seq_after_oldest(excess)?,
            Ordering::Equal => self.window_start(),
            Ordering::Greater => self.entries.get(excess - older).map_or(u64::MAX, |e| e.seq),
        }
        .min(protected);
        self.forget_before(cut, older).then_some(cut)
    }

    /// Takes out of the window, and out of the count of older messages,
    /// everything placed before `cut`; false when nothing is.
    fn forget_before(&mut self, cut: u64, older: usize) -> bool {
        let start = self.window_start();
        if cut <= start {
            let gone = if older == 0 {
                0
            } else {
                self.history.count_before(cut).min(older)
            };
            if gone == 0 {
                return false;
            }
            self.older = older > gone;
            self.older_count.set(Some((start, older - gone)));
            return true;
        }
        let gone = self.entries.partition_point(|e| e.seq < cut);
        if gone == 0 && older == 0 {
            return false;
        }
        for entry in self.entries.drain(..gone) {
            self.seq_by_id.remove(&entry.message.id);
        }
        self.older = false;
        self.older_count.set(Some((self.window_start(), 0)));
        true
    }
}
