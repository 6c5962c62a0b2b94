//! The stored request-rate windows (`ConfigKey::RequestRates`): the
//! agent's window, each open socket's and the kept windows of closed
//! sockets by client, so an eviction (or a reconnect after one) starts no
//! fresh window. Times are stored as their age in ms when the row was
//! written (a window spans one minute: at most five digits each).

use serde::{Deserialize, Serialize};

/// At most this many closed sockets' windows are kept (one per client).
pub const MAX_KEPT_WINDOWS: usize = 64;

/// The row's size bound: past it the kept windows with the fewest requests
/// go first, then the open sockets' windows.
pub const MAX_REQUEST_RATES_ROW_BYTES: usize = 64 * 1024;

/// One socket's window: its connection id (none for a kept window), its
/// client, and the ages of its requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WindowRow {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn: Option<String>,
    pub client: String,
    pub ages: Vec<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestRatesRow {
    /// When the row was written (ms); every age is counted back from it.
    pub at: u64,
    /// The agent's window.
    pub agent: Vec<u64>,
    /// Open sockets' windows.
    #[serde(default)]
    pub open: Vec<WindowRow>,
    /// Closed sockets' windows, by client.
    #[serde(default)]
    pub kept: Vec<WindowRow>,
}

impl RequestRatesRow {
    /// Drops windows until the stored text fits `MAX_REQUEST_RATES_ROW_BYTES`:
    /// the kept ones with the fewest requests first, then open ones.
    pub fn bounded(mut self) -> RequestRatesRow {
        self.kept.sort_by_key(|w| std::cmp::Reverse(w.ages.len()));
        self.kept.truncate(MAX_KEPT_WINDOWS);
        self.open.sort_by_key(|w| std::cmp::Reverse(w.ages.len()));
        while crate::core::rows::shape::encode(&self).len() > MAX_REQUEST_RATES_ROW_BYTES {
            if self.kept.pop().is_none() && self.open.pop().is_none() {
                self.agent.truncate(self.agent.len() / 2);
            }
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_past_its_byte_bound_drops_the_smallest_kept_windows_first() {
        let window = |client: &str, n: usize| WindowRow {
            conn: None,
            client: client.to_string(),
            ages: vec![59_999; n],
        };
        let row = RequestRatesRow {
            at: 1,
            agent: vec![1; 10],
            open: vec![],
            kept: (0..MAX_KEPT_WINDOWS + 20)
                .map(|i| window(&format!("client-{i}"), 200 + i))
                .collect(),
        }
        .bounded();
        assert!(crate::core::rows::shape::encode(&row).len() <= MAX_REQUEST_RATES_ROW_BYTES);
        assert!(row.kept.len() <= MAX_KEPT_WINDOWS);
        let fewest = row.kept.iter().map(|w| w.ages.len()).min().unwrap_or(0);
        assert!(fewest > 200 + 20, "the smallest windows went first");
        assert_eq!(row.agent.len(), 10);
    }
}
