//! The token budgets a model call is held under (`data/token_budget.rs`):
//! the agent's, the caller's, the connection's that started the turn, and
//! the turn's own. Checked when a tab's chat request arrives (refused on its
//! id, nothing stored) and before each model call of a running turn (which
//! then ends with the refusal); what a call spent is counted into each
//! ledger that has a limit, and the stored ones are written down.

use crate::core::contract::log_event::StartedBy;
use crate::core::data::token_budget::{tab_caller, Budget, Spender, TokenCaps, TokenLedger};
use crate::core::rows::persisted::ConfigKey;
use crate::core::vocab::limits::Limits;
use crate::core::Core;

fn agent_caps(limits: &Limits) -> TokenCaps {
    TokenCaps {
        per_hour: limits.max_agent_tokens_per_hour,
        per_day: limits.max_agent_tokens_per_day,
        in_all: 0,
    }
}

fn caller_caps(limits: &Limits) -> TokenCaps {
    TokenCaps {
        per_day: limits.max_caller_tokens_per_day,
        ..TokenCaps::default()
    }
}

fn connection_caps(limits: &Limits) -> TokenCaps {
    TokenCaps {
        in_all: limits.max_connection_tokens,
        ..TokenCaps::default()
    }
}

fn turn_caps(limits: &Limits) -> TokenCaps {
    TokenCaps {
        in_all: limits.max_turn_tokens,
        ..TokenCaps::default()
    }
}

impl Core {
    /// Who spends for a turn started by `by`.
    pub(in crate::core) fn spender_of(&self, by: &StartedBy) -> Spender {
        match by {
            StartedBy::Tab(conn) => Spender {
                caller: Some(
                    self.caller_budgets
                        .caller_of(conn)
                        .map_or_else(|| tab_caller(None), str::to_string),
                ),
                conn: Some(conn.as_str().into()),
            },
            // A parent's call carries no name of the parent: parents share one key.
            StartedBy::Parent(_) => Spender {
                caller: Some("parent".to_string()),
                conn: None,
            },
            StartedBy::Caller(caller) => Spender {
                caller: Some(format!("caller:{caller}")),
                conn: None,
            },
            StartedBy::Agent => Spender {
                caller: Some("agent".to_string()),
                conn: None,
            },
            StartedBy::Recovery => Spender::default(),
        }
    }

    /// Whether every budget `spender` (and the turn's `spent`, when
    /// running) is held under leaves anything now; else the first refusal.
    pub(in crate::core) fn tokens_allow(
        &self,
        spender: &Spender,
        spent: Option<&TokenLedger>,
    ) -> Result<(), String> {
        let limits = self.config.settings.limits;
        self.token_ledger
            .allows_within(self.now, agent_caps(&limits), Budget::Agent)?;
        if let Some(caller) = &spender.caller {
            self.caller_budgets
                .caller_allows(caller, self.now, caller_caps(&limits))?;
        }
        if let Some(conn) = &spender.conn {
            self.caller_budgets
                .connection_allows(conn, self.now, connection_caps(&limits))?;
        }
        if let Some(spent) = spent {
            spent.allows_within(self.now, turn_caps(&limits), Budget::Turn)?;
        }
        Ok(())
    }

    /// Counts `tokens` a model call of `spender`'s turn spent into each
    /// ledger with a limit (an agent with none writes nothing).
    pub(in crate::core::turn) fn spend_tokens(&mut self, spender: &Spender, tokens: u64) {
        let limits = self.config.settings.limits;
        if tokens == 0 {
            return;
        }
        if agent_caps(&limits).any() {
            self.token_ledger.spend(self.now, tokens);
            let ledger = self.token_ledger;
            self.put_config(ConfigKey::TokenLedger, &ledger);
        }
        if let Some(caller) = spender.caller.as_deref() {
            if caller_caps(&limits).any() {
                self.caller_budgets
                    .spend_by_caller(caller, self.now, tokens);
                let row = self.caller_budgets.row();
                self.put_config(ConfigKey::CallerTokenLedgers, &row);
            }
        }
        if let Some(conn) = &spender.conn {
            if connection_caps(&limits).any() {
                self.caller_budgets
                    .spend_on_connection(conn, self.now, tokens);
            }
        }
    }
}
