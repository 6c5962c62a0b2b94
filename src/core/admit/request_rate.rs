//! `RequestRate`: how many chat requests each connection, and the agent as a
//! whole, had accepted in the last minute, held under the limits
//! (`Limits::max_requests_per_minute`, `max_agent_requests_per_minute`), so
//! no tab (or set of tabs) can start turns, and spend, without bound. The
//! agent's count also takes the turns asked for from outside it without a
//! tab: a parent's `chat()` and the submissions of a named caller (RPC, an
//! `AgentStub`, an HTTP route that names its caller).

use std::collections::{BTreeMap, VecDeque};

use crate::core::vocab::ids::ConnId;
use crate::core::vocab::submit::RATE_REFUSAL_PREFIX;

/// The window the limits count over.
pub const RATE_WINDOW_MS: u64 = 60_000;

/// Acceptance times of recent chat requests.
#[derive(Debug, Default)]
pub struct RequestRate {
    by_conn: BTreeMap<ConnId, VecDeque<u64>>,
    agent: VecDeque<u64>,
}

/// Forgets the times older than the window; how many are left.
fn recent(times: &mut VecDeque<u64>, now_ms: u64) -> usize {
    while times
        .front()
        .is_some_and(|t| now_ms.saturating_sub(*t) >= RATE_WINDOW_MS)
    {
        times.pop_front();
    }
    times.len()
}

/// Seconds until the oldest counted request leaves the window.
fn wait_secs(times: &VecDeque<u64>, now_ms: u64) -> u64 {
    let oldest = times.front().copied().unwrap_or(now_ms);
    (oldest + RATE_WINDOW_MS)
        .saturating_sub(now_ms)
        .div_ceil(1000)
}

/// Whether the agent's limit (0: none) allows one more now.
fn agent_allows(agent: &mut VecDeque<u64>, now_ms: u64, per_agent: usize) -> Result<(), String> {
    if per_agent > 0 && recent(agent, now_ms) >= per_agent {
        return Err(format!(
            "{RATE_REFUSAL_PREFIX} to this agent (limit {per_agent} a minute); try again in {} s",
            wait_secs(agent, now_ms)
        ));
    }
    Ok(())
}

impl RequestRate {
    /// Counts a request of `conn` at `now_ms` when both limits (0: none)
    /// allow it; otherwise the refusal's text and nothing is counted.
    pub fn admit(
        &mut self,
        conn: &ConnId,
        now_ms: u64,
        per_conn: usize,
        per_agent: usize,
    ) -> Result<(), String> {
        let mine = self.by_conn.entry(conn.clone()).or_default();
        if per_conn > 0 && recent(mine, now_ms) >= per_conn {
            return Err(format!(
                "{RATE_REFUSAL_PREFIX} from this connection (limit {per_conn} a minute); try again in {} s",
                wait_secs(mine, now_ms)
            ));
        }
        agent_allows(&mut self.agent, now_ms, per_agent)?;
        mine.push_back(now_ms);
        self.agent.push_back(now_ms);
        Ok(())
    }

    /// Counts a turn asked for without a tab (a parent's `chat()`, a named
    /// caller's submission) at `now_ms` when the agent's limit (0: none)
    /// allows it; otherwise the refusal's text and nothing is counted.
    pub fn admit_for_agent(&mut self, now_ms: u64, per_agent: usize) -> Result<(), String> {
        agent_allows(&mut self.agent, now_ms, per_agent)?;
        self.agent.push_back(now_ms);
        Ok(())
    }

    /// A connection closed: its count goes (the agent's stays).
    pub fn forget(&mut self, conn: &str) {
        self.by_conn.remove(conn);
    }
}
