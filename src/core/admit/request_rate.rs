//! `RequestRate`: how many chat requests each connection, and the agent as a
//! whole, had accepted in the last minute, held under the limits
//! (`Limits::max_requests_per_minute`, `max_agent_requests_per_minute`), so
//! no tab (or set of tabs) can start turns, and spend, without bound. The
//! agent's count also takes the turns asked for from outside it without a
//! tab: a parent's `chat()` and the submissions of a named caller (RPC, an
//! `AgentStub`, an HTTP route that names its caller).
//!
//! A connection's window outlives its socket: when a socket closes, its
//! window is kept under its client (the address the host read, one key for
//! clients without one), and a new socket of that client starts from the
//! fullest window its client's closed sockets left; sockets open together
//! count apart. Every window is stored (`rows/request_rate_row.rs`), so an
//! eviction resets none: a socket adopted after it gets its own back, and
//! the windows of sockets that did not come back are kept for their client.

use std::collections::{BTreeMap, VecDeque};

use crate::core::rows::request_rate_row::{RequestRatesRow, WindowRow, MAX_KEPT_WINDOWS};
use crate::core::vocab::ids::ConnId;
use crate::core::vocab::submit::RATE_REFUSAL_PREFIX;

/// The window the limits count over.
pub const RATE_WINDOW_MS: u64 = 60_000;

/// The key of clients the host could not name.
const UNNAMED_CLIENT: &str = "";

/// One connection's window and its client.
#[derive(Debug, Default, Clone)]
struct Window {
    client: String,
    times: VecDeque<u64>,
}

/// Acceptance times of recent chat requests.
#[derive(Debug, Default)]
pub struct RequestRate {
    by_conn: BTreeMap<ConnId, Window>,
    /// Windows of closed sockets, by client (the fullest each left).
    kept: BTreeMap<String, VecDeque<u64>>,
    /// Windows of sockets open before a restart, until they are adopted
    /// (or, once the agent woke, kept for their client).
    restored: BTreeMap<String, Window>,
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

/// Times stored as ages at `at`, back as times (oldest first).
fn times_of(ages: &[u64], at: u64) -> VecDeque<u64> {
    let mut times: Vec<u64> = ages
        .iter()
        .filter(|age| **age < RATE_WINDOW_MS)
        .map(|age| at.saturating_sub(*age))
        .collect();
    times.sort_unstable();
    times.into()
}

/// Times as ages at `now_ms`, those still in the window.
fn ages_of(times: &VecDeque<u64>, now_ms: u64) -> Vec<u64> {
    times
        .iter()
        .map(|t| now_ms.saturating_sub(*t))
        .filter(|age| *age < RATE_WINDOW_MS)
        .collect()
}

/// Keeps `times` for `client` when it is fuller (at `now_ms`) than what is kept.
fn keep(
    kept: &mut BTreeMap<String, VecDeque<u64>>,
    client: String,
    mut times: VecDeque<u64>,
    now_ms: u64,
) {
    if recent(&mut times, now_ms) == 0 {
        return;
    }
    let fuller = match kept.get_mut(&client) {
        Some(old) => recent(old, now_ms) < times.len(),
        None => true,
    };
    if fuller {
        kept.insert(client, times);
    }
    if kept.len() > MAX_KEPT_WINDOWS {
        // The client whose window empties first goes.
        let first_to_empty = kept
            .iter()
            .min_by_key(|(_, t)| t.back().copied().unwrap_or(0))
            .map(|(c, _)| c.clone());
        if let Some(client) = first_to_empty {
            kept.remove(&client);
        }
    }
}

impl RequestRate {
    /// The windows as stored, at `now`; a fresh agent's without a row.
    pub fn restored(row: Option<RequestRatesRow>) -> RequestRate {
        let Some(row) = row else {
            return RequestRate::default();
        };
        let mut rate = RequestRate {
            agent: times_of(&row.agent, row.at),
            ..RequestRate::default()
        };
        for window in row.open {
            let times = times_of(&window.ages, row.at);
            match window.conn {
                Some(conn) => {
                    let window = Window {
                        client: window.client,
                        times,
                    };
                    rate.restored.insert(conn, window);
                }
                None => keep(&mut rate.kept, window.client, times, row.at),
            }
        }
        for window in row.kept {
            let times = times_of(&window.ages, row.at);
            keep(&mut rate.kept, window.client, times, row.at);
        }
        rate
    }

    /// The windows to store at `now_ms`, within the row's bounds.
    pub fn row(&self, now_ms: u64) -> RequestRatesRow {
        let window = |conn: Option<&str>, client: &str, times: &VecDeque<u64>| WindowRow {
            conn: conn.map(str::to_string),
            client: client.to_string(),
            ages: ages_of(times, now_ms),
        };
        let open = self
            .by_conn
            .iter()
            .map(|(conn, w)| window(Some(conn), &w.client, &w.times))
            .chain(
                self.restored
                    .iter()
                    .map(|(conn, w)| window(Some(conn), &w.client, &w.times)),
            );
        let kept = self.kept.iter().map(|(c, t)| window(None, c, t));
        RequestRatesRow {
            at: now_ms,
            agent: ages_of(&self.agent, now_ms),
            open: open.filter(|w| !w.ages.is_empty()).collect(),
            kept: kept.filter(|w| !w.ages.is_empty()).collect(),
        }
        .bounded()
    }

    /// A new socket of `client` (`None`: the host could not name it): it
    /// starts from the fullest window its client's closed sockets left.
    /// Whether it started with a count (the stored windows changed).
    pub fn connect(&mut self, conn: &ConnId, client: Option<&str>, now_ms: u64) -> bool {
        let client = client.unwrap_or(UNNAMED_CLIENT).to_string();
        let mut times = self.kept.get(&client).cloned().unwrap_or_default();
        let counted = recent(&mut times, now_ms) > 0;
        self.by_conn.insert(conn.clone(), Window { client, times });
        counted
    }

    /// The client of an open socket, when the host named it.
    pub fn client_of(&self, conn: &str) -> Option<&str> {
        let client = self.by_conn.get(conn)?.client.as_str();
        (client != UNNAMED_CLIENT).then_some(client)
    }

    /// A socket open before a restart came back: its own window with it.
    pub fn adopt(&mut self, conn: &ConnId) {
        if let Some(window) = self.restored.remove(&**conn) {
            self.by_conn.insert(conn.clone(), window);
        }
    }

    /// The agent woke and adopted its sockets: the windows of those that did
    /// not come back are kept for their clients.
    pub fn woke(&mut self, now_ms: u64) {
        for (_, window) in std::mem::take(&mut self.restored) {
            keep(&mut self.kept, window.client, window.times, now_ms);
        }
    }

    /// Counts a request of `conn` at `now_ms` when both limits (0: none)
    /// allow it; otherwise the refusal's text and nothing is counted.
    /// Whether it was counted: with neither limit set nothing is (no limit
    /// reads the windows, so none is kept, and a limit set later counts from
    /// then on).
    pub fn admit(
        &mut self,
        conn: &ConnId,
        now_ms: u64,
        per_conn: usize,
        per_agent: usize,
    ) -> Result<bool, String> {
        if per_conn == 0 && per_agent == 0 {
            return Ok(false);
        }
        let mine = &mut self.by_conn.entry(conn.clone()).or_default().times;
        if per_conn > 0 && recent(mine, now_ms) >= per_conn {
            return Err(format!(
                "{RATE_REFUSAL_PREFIX} from this connection (limit {per_conn} a minute); try again in {} s",
                wait_secs(mine, now_ms)
            ));
        }
        agent_allows(&mut self.agent, now_ms, per_agent)?;
        mine.push_back(now_ms);
        self.agent.push_back(now_ms);
        Ok(true)
    }

    /// Counts a turn asked for without a tab (a parent's `chat()`, a named
    /// caller's submission) at `now_ms` when the agent's limit (0: none)
    /// allows it; otherwise the refusal's text and nothing is counted.
    /// Whether it was counted (not without a limit).
    pub fn admit_for_agent(&mut self, now_ms: u64, per_agent: usize) -> Result<bool, String> {
        if per_agent == 0 {
            return Ok(false);
        }
        agent_allows(&mut self.agent, now_ms, per_agent)?;
        self.agent.push_back(now_ms);
        Ok(true)
    }

    /// A connection closed: its window is kept for its client (the agent's
    /// stays). Whether the stored windows changed.
    pub fn forget(&mut self, conn: &str, now_ms: u64) -> bool {
        match self.by_conn.remove(conn) {
            Some(window) if !window.times.is_empty() => {
                keep(&mut self.kept, window.client, window.times, now_ms);
                true
            }
            _ => false,
        }
    }
}

impl crate::core::Core {
    /// A socket of `client` was accepted (see [`RequestRate::connect`]).
    pub(in crate::core) fn rate_connect(&mut self, conn: &ConnId, client: Option<&str>) {
        if self.request_rate.connect(conn, client, self.now) {
            self.store_request_rates();
        }
    }

    /// A socket closed: its window is kept for its client.
    pub(in crate::core) fn rate_forget(&mut self, conn: &ConnId) {
        if self.request_rate.forget(conn, self.now) {
            self.store_request_rates();
        }
    }

    /// Writes the windows down, so an eviction resets none.
    pub(in crate::core) fn store_request_rates(&mut self) {
        let row = self.request_rate.row(self.now);
        self.put_config(crate::core::rows::persisted::ConfigKey::RequestRates, &row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(id: &str) -> ConnId {
        std::rc::Rc::from(id)
    }

    fn fill(rate: &mut RequestRate, c: &ConnId, n: usize, now: u64) {
        for _ in 0..n {
            assert!(rate.admit(c, now, 3, 0).is_ok());
        }
    }

    #[test]
    fn a_reconnect_of_the_same_client_starts_from_its_closed_window_another_client_does_not() {
        let mut rate = RequestRate::default();
        let (a, b, c) = (conn("a"), conn("b"), conn("c"));
        rate.connect(&a, Some("1.2.3.4"), 0);
        fill(&mut rate, &a, 3, 1000);
        // A tab open beside it counts apart.
        rate.connect(&b, Some("1.2.3.4"), 1000);
        assert!(rate.admit(&b, 1000, 3, 0).is_ok());
        rate.forget(&a, 2000);
        rate.connect(&c, Some("1.2.3.4"), 2000);
        assert!(
            rate.admit(&c, 2000, 3, 0).is_err(),
            "the reconnect is refused"
        );
        let other = conn("d");
        rate.connect(&other, Some("5.6.7.8"), 2000);
        assert!(rate.admit(&other, 2000, 3, 0).is_ok());
        // A minute later the window is empty again.
        assert!(rate.admit(&c, 61_000, 3, 0).is_ok());
    }

    #[test]
    fn stored_windows_come_back_after_a_restart_for_the_adopted_socket_and_its_client() {
        let mut rate = RequestRate::default();
        let (a, b) = (conn("a"), conn("b"));
        rate.connect(&a, None, 0);
        rate.connect(&b, None, 0);
        fill(&mut rate, &a, 3, 1000);
        fill(&mut rate, &b, 2, 1000);
        let row = rate.row(5000);
        // Only `b` came back; `a`'s window is its client's.
        let mut again = RequestRate::restored(Some(row));
        again.adopt(&b);
        again.woke(6000);
        assert!(again.admit(&b, 6000, 3, 0).is_ok());
        assert!(
            again.admit(&b, 6000, 3, 0).is_err(),
            "b's own window came back"
        );
        let c = conn("c");
        again.connect(&c, None, 6000);
        assert!(again.admit(&c, 6000, 3, 0).is_err(), "a's window is kept");
        assert!(
            again.admit_for_agent(6000, 6).is_err(),
            "the agent's window too"
        );
    }

    #[test]
    fn without_a_limit_nothing_is_counted_and_a_limit_set_later_counts_from_then() {
        let mut rate = RequestRate::default();
        let a = conn("a");
        for t in 0..5 {
            assert_eq!(rate.admit(&a, t, 0, 0), Ok(false));
            assert_eq!(rate.admit_for_agent(t, 0), Ok(false));
        }
        assert_eq!(rate.row(10).agent.len(), 0, "nothing was counted");
        assert_eq!(rate.admit(&a, 10, 2, 0), Ok(true));
        assert_eq!(rate.admit(&a, 11, 2, 0), Ok(true));
        assert!(
            rate.admit(&a, 12, 2, 0).is_err(),
            "the third within the minute"
        );
    }
}
