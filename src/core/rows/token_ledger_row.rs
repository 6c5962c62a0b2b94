//! The stored shape of a token ledger (the agent's, `ConfigKey::TokenLedger`,
//! and each caller's, `ConfigKey::CallerTokenLedgers`): the tokens spent in
//! the current clock hour and UTC day, each with the window's start, and in
//! all. What it allows is `data/token_budget.rs`'s.

use serde::{Deserialize, Serialize};

/// The tokens spent in the current windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenLedger {
    pub hour_start: u64,
    pub hour_tokens: u64,
    pub day_start: u64,
    pub day_tokens: u64,
    /// Every token counted into this ledger (a connection's and a turn's
    /// budget, which have no window).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// At most this many callers' ledgers are stored; past it the one that
/// spent longest ago goes.
pub const MAX_CALLER_LEDGERS: usize = 64;

/// A caller's name is stored and compared on at most this many bytes.
pub const MAX_CALLER_KEY_BYTES: usize = 200;

/// One caller's ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerLedgerRow {
    pub caller: String,
    pub ledger: TokenLedger,
}

/// The callers' ledgers (`ConfigKey::CallerTokenLedgers`), the one that
/// spent longest ago first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerLedgersRow {
    pub callers: Vec<CallerLedgerRow>,
}
