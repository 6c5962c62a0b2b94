//! `AgentHandle` in a native build, where no Durable Object runs: an inert
//! stand-in, so a definition's hooks have the same signature on every
//! target and their tests can call them. It reaches no agent and has no
//! methods; the real handle is the wasm build's (`handle.rs`).

/// The agent as its own code reaches it (in a native build: reaches nothing).
#[derive(Clone, Debug, Default)]
pub struct AgentHandle {
    _none: (),
}
