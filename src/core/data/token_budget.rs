//! Token budgets: the tokens model calls spent, as the provider reported
//! them or, when it did not, estimated from the bytes sent and streamed
//! (four to a token), counted into one ledger type (`TokenLedger`: a clock
//! hour, a UTC day and a total) kept per agent, per caller (who started the
//! turn: a tab's client, a named caller, a parent, the agent's own code),
//! per open connection and per running turn. Held under the limits
//! (`Limits::max_agent_tokens_per_hour`/`_day`, `max_caller_tokens_per_day`,
//! `max_connection_tokens`, `max_turn_tokens`): a turn is refused, and a
//! running turn's next model call too, once a budget is spent, with the
//! budget and its size named. The agent's ledger (`ConfigKey::TokenLedger`)
//! and the callers' (`ConfigKey::CallerTokenLedgers`, at most
//! `MAX_CALLER_LEDGERS`, the one that spent longest ago dropped first) are
//! stored, so neither a restart nor a clear of the history gives a budget
//! back; a connection's lasts while its socket is open, a turn's while it runs.

use std::collections::BTreeMap;

pub use crate::core::rows::token_ledger_row::TokenLedger;
use crate::core::rows::token_ledger_row::{
    CallerLedgerRow, CallerLedgersRow, MAX_CALLER_KEY_BYTES, MAX_CALLER_LEDGERS,
};
use crate::core::vocab::ids::ConnId;

pub const HOUR_MS: u64 = 3_600_000;
pub const DAY_MS: u64 = 24 * HOUR_MS;

/// How every refusal for want of the agent's token budget starts.
pub const TOKEN_REFUSAL_PREFIX: &str = "token budget of this agent is spent";

/// Whose budget a ledger keeps: named in the refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    Agent,
    Caller,
    Connection,
    Turn,
}

impl Budget {
    fn whose(self) -> &'static str {
        match self {
            Budget::Agent => "this agent",
            Budget::Caller => "this caller",
            Budget::Connection => "this connection",
            Budget::Turn => "this turn",
        }
    }
}

/// A ledger's limits (0: none): per clock hour, per UTC day, in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenCaps {
    pub per_hour: u64,
    pub per_day: u64,
    pub in_all: u64,
}

impl TokenCaps {
    /// Whether any limit is set (an unlimited ledger need not be kept).
    pub fn any(self) -> bool {
        self.per_hour > 0 || self.per_day > 0 || self.in_all > 0
    }
}

/// Tokens of a call the provider gave no usage for: its request and its
/// answer, four bytes to a token.
pub fn estimated_tokens(sent_bytes: usize, streamed_bytes: usize) -> u64 {
    (sent_bytes.saturating_add(streamed_bytes) as u64).div_ceil(4)
}

impl TokenLedger {
    /// The ledger with windows that ended before `now_ms` started afresh.
    fn at(self, now_ms: u64) -> TokenLedger {
        let hour = now_ms - now_ms % HOUR_MS;
        let day = now_ms - now_ms % DAY_MS;
        TokenLedger {
            hour_start: hour,
            hour_tokens: if self.hour_start == hour {
                self.hour_tokens
            } else {
                0
            },
            day_start: day,
            day_tokens: if self.day_start == day {
                self.day_tokens
            } else {
                0
            },
            total_tokens: self.total_tokens,
        }
    }

    /// Counts `tokens` spent at `now_ms`.
    pub fn spend(&mut self, now_ms: u64, tokens: u64) {
        let mut next = self.at(now_ms);
        next.hour_tokens = next.hour_tokens.saturating_add(tokens);
        next.day_tokens = next.day_tokens.saturating_add(tokens);
        next.total_tokens = next.total_tokens.saturating_add(tokens);
        *self = next;
    }

    /// Whether the agent's limits (0: none) leave anything to spend at
    /// `now_ms`; otherwise the refusal's text, naming the limit and the wait.
    pub fn allows(&self, now_ms: u64, per_hour: u64, per_day: u64) -> Result<(), String> {
        let caps = TokenCaps {
            per_hour,
            per_day,
            in_all: 0,
        };
        self.allows_within(now_ms, caps, Budget::Agent)
    }

    /// Whether `caps` leave anything of `budget` to spend at `now_ms`;
    /// otherwise the refusal's text, naming the budget, its limit and (for
    /// a window) the wait.
    pub fn allows_within(
        &self,
        now_ms: u64,
        caps: TokenCaps,
        budget: Budget,
    ) -> Result<(), String> {
        let now = self.at(now_ms);
        let whose = budget.whose();
        let refuse = |limit: u64, what: &str, start: u64, length: u64| {
            Err(format!(
                "token budget of {whose} is spent (limit {limit} tokens {what}); try again in {} s",
                (start + length).saturating_sub(now_ms).div_ceil(1000)
            ))
        };
        if caps.in_all > 0 && now.total_tokens >= caps.in_all {
            let span = match budget {
                Budget::Connection => "while it is open; open another",
                _ => "in all; ask again",
            };
            return Err(format!(
                "token budget of {whose} is spent (limit {} tokens {span})",
                caps.in_all
            ));
        }
        if caps.per_day > 0 && now.day_tokens >= caps.per_day {
            return refuse(caps.per_day, "a day", now.day_start, DAY_MS);
        }
        if caps.per_hour > 0 && now.hour_tokens >= caps.per_hour {
            return refuse(caps.per_hour, "an hour", now.hour_start, HOUR_MS);
        }
        Ok(())
    }
}

/// Whose budgets a model call spends: the caller's key (none for a
/// recovery, which continues a turn already counted) and the connection
/// that asked for the turn (a tab's).
#[derive(Debug, Clone, Default)]
pub struct Spender {
    pub caller: Option<String>,
    pub conn: Option<ConnId>,
}

/// The budgets kept apart from the agent's: one ledger per caller (stored),
/// per open connection and its caller (in memory).
#[derive(Debug, Default)]
pub struct CallerBudgets {
    /// The one that spent longest ago first.
    callers: Vec<CallerLedgerRow>,
    conns: BTreeMap<ConnId, (String, TokenLedger)>,
}

/// A caller's name as its ledger is keyed: at most `MAX_CALLER_KEY_BYTES`.
pub fn caller_key(name: &str) -> String {
    let mut end = name.len().min(MAX_CALLER_KEY_BYTES);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

/// The caller of a tab: its client (the address the host read, one key
/// for clients it could not name), as its request-rate window is kept.
pub fn tab_caller(client: Option<&str>) -> String {
    caller_key(&format!("client:{}", client.unwrap_or("")))
}

impl CallerBudgets {
    /// The callers' ledgers as stored.
    pub fn restored(row: Option<CallerLedgersRow>) -> CallerBudgets {
        let mut callers = row.map(|r| r.callers).unwrap_or_default();
        let excess = callers.len().saturating_sub(MAX_CALLER_LEDGERS);
        callers.drain(..excess);
        CallerBudgets {
            callers,
            conns: BTreeMap::new(),
        }
    }

    /// The row to store.
    pub fn row(&self) -> CallerLedgersRow {
        CallerLedgersRow {
            callers: self.callers.clone(),
        }
    }

    /// A socket of `caller` opened: its ledger starts empty.
    pub fn connect(&mut self, conn: &ConnId, caller: String) {
        self.conns
            .insert(conn.clone(), (caller, TokenLedger::default()));
    }

    /// A socket closed: its budget goes with it.
    pub fn forget(&mut self, conn: &str) {
        self.conns.remove(conn);
    }

    /// The caller of an open connection, when it is known.
    pub fn caller_of(&self, conn: &str) -> Option<&str> {
        self.conns.get(conn).map(|(caller, _)| caller.as_str())
    }

    fn caller_ledger(&self, caller: &str) -> TokenLedger {
        self.callers
            .iter()
            .find(|row| row.caller == caller)
            .map(|row| row.ledger)
            .unwrap_or_default()
    }

    /// Whether `caller`'s budget allows a model call at `now_ms`.
    pub fn caller_allows(&self, caller: &str, now_ms: u64, caps: TokenCaps) -> Result<(), String> {
        if !caps.any() {
            return Ok(());
        }
        self.caller_ledger(caller)
            .allows_within(now_ms, caps, Budget::Caller)
    }

    /// Whether connection `conn`'s budget allows a model call at `now_ms`.
    pub fn connection_allows(
        &self,
        conn: &str,
        now_ms: u64,
        caps: TokenCaps,
    ) -> Result<(), String> {
        match self.conns.get(conn) {
            Some((_, ledger)) if caps.any() => {
                ledger.allows_within(now_ms, caps, Budget::Connection)
            }
            _ => Ok(()),
        }
    }

    /// Counts `tokens` spent at `now_ms` by `caller`: it becomes the one
    /// that spent last; past `MAX_CALLER_LEDGERS` the one that spent
    /// longest ago is dropped.
    pub fn spend_by_caller(&mut self, caller: &str, now_ms: u64, tokens: u64) {
        let caller = caller_key(caller);
        let mut ledger = match self.callers.iter().position(|row| row.caller == caller) {
            Some(at) => self.callers.remove(at).ledger,
            None => TokenLedger::default(),
        };
        ledger.spend(now_ms, tokens);
        self.callers.push(CallerLedgerRow { caller, ledger });
        let excess = self.callers.len().saturating_sub(MAX_CALLER_LEDGERS);
        self.callers.drain(..excess);
    }

    /// Counts `tokens` spent at `now_ms` on connection `conn`, while open.
    pub fn spend_on_connection(&mut self, conn: &str, now_ms: u64, tokens: u64) {
        if let Some((_, ledger)) = self.conns.get_mut(conn) {
            ledger.spend(now_ms, tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_hour_refuses_until_the_next_one_and_the_day_keeps_counting() {
        let mut ledger = TokenLedger::default();
        let start = 10 * DAY_MS + 3 * HOUR_MS + 1_000;
        ledger.spend(start, 600);
        assert_eq!(ledger.allows(start, 1000, 0), Ok(()));
        ledger.spend(start + 5_000, 500);
        assert_eq!(
            ledger.allows(start + 5_000, 1000, 0),
            Err(format!(
                "{TOKEN_REFUSAL_PREFIX} (limit 1000 tokens an hour); try again in {} s",
                (HOUR_MS - 6_000) / 1000
            ))
        );
        let next_hour = start - 1_000 + HOUR_MS;
        assert_eq!(ledger.allows(next_hour, 1000, 0), Ok(()));
        assert!(ledger
            .allows(next_hour, 1000, 1100)
            .is_err_and(|e| e.contains("limit 1100 tokens a day")));
        assert_eq!(ledger.allows(next_hour, 0, 0), Ok(()), "0: no limit");
    }

    #[test]
    fn an_unreported_call_is_estimated_from_its_bytes() {
        assert_eq!(estimated_tokens(4000, 401), 1101);
        assert_eq!(estimated_tokens(0, 0), 0);
    }

    #[test]
    fn each_budget_is_named_in_its_refusal() {
        let mut ledger = TokenLedger::default();
        ledger.spend(5, 100);
        let caps = |per_day, in_all| TokenCaps {
            per_hour: 0,
            per_day,
            in_all,
        };
        assert_eq!(
            ledger.allows_within(5, caps(0, 100), Budget::Turn),
            Err("token budget of this turn is spent (limit 100 tokens in all; ask again)".into())
        );
        assert_eq!(
            ledger.allows_within(5, caps(0, 100), Budget::Connection),
            Err("token budget of this connection is spent (limit 100 tokens while it is open; open another)".into())
        );
        assert!(ledger
            .allows_within(5, caps(100, 0), Budget::Caller)
            .is_err_and(|e| e.starts_with(
                "token budget of this caller is spent (limit 100 tokens a day); try again in"
            )));
        assert_eq!(
            ledger.allows_within(5, caps(101, 101), Budget::Caller),
            Ok(())
        );
    }

    #[test]
    fn callers_past_the_cap_drop_the_one_that_spent_longest_ago() {
        let mut budgets = CallerBudgets::default();
        let caps = TokenCaps {
            per_hour: 0,
            per_day: 10,
            in_all: 0,
        };
        for i in 0..=MAX_CALLER_LEDGERS {
            budgets.spend_by_caller(&format!("caller:{i}"), 1, 10);
        }
        assert_eq!(budgets.row().callers.len(), MAX_CALLER_LEDGERS);
        assert_eq!(
            budgets.caller_allows("caller:0", 1, caps),
            Ok(()),
            "the oldest went"
        );
        assert!(budgets.caller_allows("caller:1", 1, caps).is_err());
        let restored = CallerBudgets::restored(Some(budgets.row()));
        assert!(restored
            .caller_allows(&format!("caller:{MAX_CALLER_LEDGERS}"), 1, caps)
            .is_err());
        assert_eq!(
            caller_key(&"é".repeat(MAX_CALLER_KEY_BYTES)).len(),
            MAX_CALLER_KEY_BYTES
        );
    }
}
