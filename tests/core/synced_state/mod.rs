//! The agent's synced state: what a tab gets on connect, a tab's and the
//! agent's own changes, validation, durability.

mod state;
