//! The stored shape of the token ledger (`ConfigKey::TokenLedger`): the
//! tokens spent in the current clock hour and UTC day, each with the
//! window's start. What it allows is `data/token_budget.rs`'s.

use serde::{Deserialize, Serialize};

/// The tokens spent in the current windows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenLedger {
    pub hour_start: u64,
    pub hour_tokens: u64,
    pub day_start: u64,
    pub day_tokens: u64,
}
