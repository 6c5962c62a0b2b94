//! Other agents: a Durable Object stub called over RPC (`stub`), another
//! agent's submissions reached by a typed stub (`remote`, `AgentStub`),
//! Think's submission shapes (`think_submissions`), what a parent hears from
//! a child's `chat()` (`child_events`), the calls to children in flight held
//! under their caps (`child_calls`), and a parent's `chat()` to a child
//! (`chat`, made by `rpc_chat`).

#[cfg(target_arch = "wasm32")]
pub mod chat;
pub mod child_calls;
pub mod child_events;
#[cfg(target_arch = "wasm32")]
pub mod remote;
#[cfg(target_arch = "wasm32")]
pub(crate) mod rpc_chat;
#[cfg(target_arch = "wasm32")]
pub(crate) mod stub;
pub mod think_submissions;
