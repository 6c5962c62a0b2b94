//! `TokenLedger`: the tokens the agent's model calls spent in the current
//! hour and the current day (clock-aligned windows), as the provider
//! reported them or, when it did not, estimated from the bytes sent and
//! streamed (four to a token). Held under the limits
//! (`Limits::max_agent_tokens_per_hour`, `max_agent_tokens_per_day`): a
//! turn is refused, and a running turn's next model call too, once a window
//! is spent. Stored (`ConfigKey::TokenLedger`), so neither a restart nor a
//! clear of the history gives the budget back.

pub use crate::core::rows::token_ledger_row::TokenLedger;

pub const HOUR_MS: u64 = 3_600_000;
pub const DAY_MS: u64 = 24 * HOUR_MS;

/// How every refusal for want of token budget starts.
pub const TOKEN_REFUSAL_PREFIX: &str = "token budget of this agent is spent";

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
        }
    }

    /// Counts `tokens` spent at `now_ms`.
    pub fn spend(&mut self, now_ms: u64, tokens: u64) {
        let mut next = self.at(now_ms);
        next.hour_tokens = next.hour_tokens.saturating_add(tokens);
        next.day_tokens = next.day_tokens.saturating_add(tokens);
        *self = next;
    }

    /// Whether the limits (0: none) leave anything to spend at `now_ms`;
    /// otherwise the refusal's text, naming the limit and the wait.
    pub fn allows(&self, now_ms: u64, per_hour: u64, per_day: u64) -> Result<(), String> {
        let now = self.at(now_ms);
        let refuse = |limit: u64, what: &str, start: u64, length: u64| {
            Err(format!(
                "{TOKEN_REFUSAL_PREFIX} (limit {limit} tokens {what}); try again in {} s",
                (start + length).saturating_sub(now_ms).div_ceil(1000)
            ))
        };
        if per_day > 0 && now.day_tokens >= per_day {
            return refuse(per_day, "a day", now.day_start, DAY_MS);
        }
        if per_hour > 0 && now.hour_tokens >= per_hour {
            return refuse(per_hour, "an hour", now.hour_start, HOUR_MS);
        }
        Ok(())
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
}
